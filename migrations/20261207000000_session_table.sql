-- The table the session store (tower-sessions' PostgreSQL store) reads and writes, made
-- here with the app's own tables so the store crate runs every migration itself. Same
-- shape as the one the session store used to create at start-up; a database that already
-- has it keeps it.
CREATE SCHEMA IF NOT EXISTS "tower_sessions";
CREATE TABLE IF NOT EXISTS "tower_sessions"."session" (
    id text PRIMARY KEY NOT NULL,
    data bytea NOT NULL,
    expiry_date timestamptz NOT NULL
);

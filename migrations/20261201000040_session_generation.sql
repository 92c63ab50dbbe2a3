-- Sessions carry the generation they were signed in under; raising it (a password change
-- or reset, disabling the account) ends every session signed in before.
ALTER TABLE users
    ADD COLUMN session_generation integer NOT NULL DEFAULT 0,
    ADD COLUMN disabled_at timestamptz;

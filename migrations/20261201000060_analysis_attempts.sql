-- How many times an analysis was started: one that keeps dying (a crash, the server killed
-- for memory) ends `failed` with a reason instead of being retried at every restart.
ALTER TABLE artifacts ADD COLUMN attempts integer NOT NULL DEFAULT 0;

-- Periodic background work (the blob sweep) is claimed once across replicas: a replica
-- runs the job only when it moves `last_run` forward past the interval itself.
CREATE TABLE periodic_jobs (
    name     TEXT PRIMARY KEY,
    last_run TIMESTAMPTZ NOT NULL
);

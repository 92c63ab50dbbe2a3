-- An upload's Idempotency-Key: a client that retries an upload whose answer it lost
-- (a 503 while the database restarted, a dropped connection) gets the artifact stored
-- the first time instead of a second copy.
ALTER TABLE artifacts ADD COLUMN idempotency_key TEXT
    CHECK (idempotency_key IS NULL OR length(idempotency_key) BETWEEN 1 AND 200);
CREATE UNIQUE INDEX artifacts_idempotency ON artifacts (uploaded_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

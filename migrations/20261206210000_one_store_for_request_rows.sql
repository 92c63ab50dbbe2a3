-- One store for a request log's rows: the column chunks. Until now every row was also
-- loaded into `request_rows` (a partition per artifact, by binary COPY): on 1,000,000 rows
-- that COPY cost PostgreSQL 1.7 CPU-seconds of a 3.1 s load, to serve readers the chunks
-- can serve (the decomposition, its filter menus, comparisons, bubble attribution).
--
-- A chunk now holds up to 16,384 rows of one log in file order with every field a reader
-- needs, tenant and model version as indices into the chunk's own `tenants` and `models`
-- lists (which a tenant filter and the filter menus read without opening the data). The
-- rows' other fields stay in the stored file, which is kept byte for byte.
DROP TRIGGER IF EXISTS artifacts_delete_request_rows ON artifacts;
DROP FUNCTION IF EXISTS request_rows_follow_artifact();
DROP TABLE request_rows;

-- Chunks of the old layout (8 columns, one tenant and model per chunk) are rebuilt from
-- the stored files: every analysed request log and span set is queued again, and the
-- analysis it had stays readable until the new one replaces it.
DELETE FROM request_columns;
UPDATE artifacts SET status = 'queued', progress_bytes = 0, attempts = 0, updated_at = now()
 WHERE kind IN ('request_log', 'otlp_spans') AND status = 'done';

DROP INDEX request_column_chunks_artifact;
ALTER TABLE request_column_chunks
    DROP COLUMN tenant,
    DROP COLUMN model_version,
    ADD COLUMN seq INT NOT NULL CHECK (seq >= 0),
    ADD COLUMN tenants TEXT[] NOT NULL,
    ADD COLUMN models TEXT[] NOT NULL,
    ADD PRIMARY KEY (artifact_id, seq);

-- A load beside its upload writes chunks before the artifact's row is committed (under
-- the id reserved for it); the keys are checked when the load commits.
ALTER TABLE request_columns DROP CONSTRAINT request_columns_artifact_id_fkey,
    ADD CONSTRAINT request_columns_artifact_id_fkey FOREIGN KEY (artifact_id)
        REFERENCES artifacts (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;

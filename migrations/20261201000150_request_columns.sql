-- A column copy of each request log's phase times, written at load, for the decomposition
-- page: the page's exact percentiles (percentile_cont semantics) over 1,000,000 rows took
-- 1.4–3.3 s as ordered-set aggregates (one sort per phase per group); reading these chunks
-- and selecting in the app takes a fraction of that. Rows of one tenant and model version,
-- at most 16,384 per chunk, in file order; `data` holds 8 little-endian f64 columns
-- (arrival_ts, then the 7 phases; NaN where the row has no value).
CREATE TABLE request_columns (
    artifact_id BIGINT PRIMARY KEY REFERENCES artifacts (id) ON DELETE CASCADE,
    rows        BIGINT NOT NULL CHECK (rows >= 0),
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE request_column_chunks (
    artifact_id   BIGINT NOT NULL REFERENCES request_columns (artifact_id) ON DELETE CASCADE,
    tenant        TEXT,
    model_version TEXT,
    -- Range of the chunk's arrival times (NULL when no row has one): a time window skips
    -- chunks entirely outside it.
    arrival_min   DOUBLE PRECISION,
    arrival_max   DOUBLE PRECISION,
    rows          INT NOT NULL CHECK (rows > 0),
    data          BYTEA NOT NULL
);
-- Floats barely compress: store them as they are, so reading a chunk is a plain copy.
ALTER TABLE request_column_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
CREATE INDEX request_column_chunks_artifact ON request_column_chunks (artifact_id, tenant, model_version);

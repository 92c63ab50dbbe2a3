-- Uploaded artifacts: metadata and analysis here, bytes in blob storage (by sha256).
-- investigation_id / journal_entry_id get their foreign keys in a later migration,
-- once those tables exist.
CREATE TABLE artifacts (
    id               BIGSERIAL PRIMARY KEY,
    investigation_id BIGINT,
    journal_entry_id BIGINT,
    name             TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    kind             TEXT NOT NULL CHECK (kind IN ('request_log', 'vllm_bench', 'prometheus',
                         'pytorch_trace', 'ncu_csv', 'nsys_kern_sum', 'gpu_telemetry', 'unknown')),
    sha256           TEXT NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    size_bytes       BIGINT NOT NULL CHECK (size_bytes >= 0),
    gzip             BOOLEAN NOT NULL DEFAULT false,
    status           TEXT NOT NULL CHECK (status IN ('queued', 'analyzing', 'done', 'failed', 'not_analyzed')),
    error            TEXT,
    progress_bytes   BIGINT NOT NULL DEFAULT 0,
    -- Options the analysis ran with (e.g. include_last_profiler_step).
    options          JSONB NOT NULL DEFAULT '{}',
    analysis         JSONB,
    analyzer_version INT,
    uploaded_by      BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Refreshed while an analysis runs: a stale 'analyzing' row belongs to a dead worker.
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    analyzed_at      TIMESTAMPTZ
);
CREATE INDEX artifacts_sha256 ON artifacts (sha256);
CREATE INDEX artifacts_investigation ON artifacts (investigation_id);
CREATE INDEX artifacts_queue ON artifacts (id) WHERE status IN ('queued', 'analyzing');

-- Per-request telemetry rows, bulk-loaded with COPY from request_log artifacts.
CREATE TABLE request_rows (
    artifact_id             BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    request_id              TEXT,
    arrival_ts              DOUBLE PRECISION,
    tokenize_ms             DOUBLE PRECISION,
    queue_wait_ms           DOUBLE PRECISION,
    prefill_ms              DOUBLE PRECISION,
    first_token_ms          DOUBLE PRECISION,
    decode_ms               DOUBLE PRECISION,
    itl_p50_ms              DOUBLE PRECISION,
    itl_p99_ms              DOUBLE PRECISION,
    detokenize_ms           DOUBLE PRECISION,
    total_ms                DOUBLE PRECISION,
    prompt_tokens           BIGINT,
    output_tokens           BIGINT,
    batch_size_at_admission BIGINT,
    kv_blocks_used          BIGINT,
    prefix_cache_hit_tokens BIGINT,
    model_version           TEXT,
    tenant                  TEXT,
    extra                   JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX request_rows_artifact ON request_rows (artifact_id);

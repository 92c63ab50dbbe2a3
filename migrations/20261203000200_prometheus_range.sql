-- A Prometheus server's answers over an incident window (query_range and the window's
-- bucket increases) are an artifact kind of their own; 'otlp_spans' is listed too so
-- either branch's migration leaves the full list. prometheus_sources are the servers an
-- admin registered (their secret is kept for the fetches and never shown back).
ALTER TABLE artifacts DROP CONSTRAINT artifacts_kind_check;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_kind_check
    CHECK (kind IN ('request_log', 'vllm_bench', 'prometheus', 'pytorch_trace', 'ncu_csv',
                    'nsys_kern_sum', 'gpu_telemetry', 'sweep', 'unknown', 'otlp_spans',
                    'prometheus_range'));

CREATE TABLE prometheus_sources (
    id         BIGSERIAL PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 100),
    url        TEXT NOT NULL CHECK (length(url) BETWEEN 8 AND 2000),
    auth       TEXT NOT NULL DEFAULT 'none' CHECK (auth IN ('none', 'bearer', 'basic')),
    username   TEXT NOT NULL DEFAULT '' CHECK (length(username) <= 200),
    secret     TEXT NOT NULL DEFAULT '' CHECK (length(secret) <= 4000),
    added_by   BIGINT REFERENCES users (id) ON DELETE SET NULL,
    added_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Request spans received over OTLP/HTTP (POST /v1/traces), kept per service and window.
-- A window's spans are rows here (each the span as one line of OTLP JSON, only the
-- attributes perfjournal maps); when the window closes, or on demand, they are written
-- in one snapshot to a blob that becomes (or replaces the file of) the window's
-- `otlp_spans` artifact, which the request-log pipeline then analyses.
CREATE TABLE otlp_windows (
    id               BIGSERIAL PRIMARY KEY,
    service          TEXT NOT NULL CHECK (length(service) BETWEEN 1 AND 255),
    window_start     TIMESTAMPTZ NOT NULL,
    window_end       TIMESTAMPTZ NOT NULL CHECK (window_end > window_start),
    -- Request spans kept (rows of otlp_span_rows).
    spans            BIGINT NOT NULL DEFAULT 0 CHECK (spans >= 0),
    -- Spans received but not kept, and why ({"reason": count}).
    ignored          BIGINT NOT NULL DEFAULT 0 CHECK (ignored >= 0),
    ignored_reasons  JSONB NOT NULL DEFAULT '{}',
    -- The window's artifact, and how many spans it was last built from.
    artifact_id      BIGINT REFERENCES artifacts (id) ON DELETE SET NULL,
    built_spans      BIGINT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (service, window_start)
);
CREATE INDEX otlp_windows_by_start ON otlp_windows (window_start DESC, id DESC);
CREATE INDEX otlp_windows_to_build ON otlp_windows (window_end)
    WHERE built_spans IS DISTINCT FROM spans;

CREATE TABLE otlp_span_rows (
    window_id  BIGINT NOT NULL REFERENCES otlp_windows (id) ON DELETE CASCADE,
    -- The span's start, seconds since the epoch (the request's arrival).
    arrival_ts DOUBLE PRECISION NOT NULL,
    line       TEXT NOT NULL
);
CREATE INDEX otlp_span_rows_window ON otlp_span_rows (window_id, arrival_ts);

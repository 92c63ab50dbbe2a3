-- When an investigation's incident happened: the window Prometheus and OTLP spans are
-- read over, linked from the journal entry. One per investigation; it may be changed.
CREATE TABLE incident_windows (
    investigation_id BIGINT PRIMARY KEY REFERENCES investigations (id) ON DELETE CASCADE,
    starts_at  TIMESTAMPTZ NOT NULL,
    ends_at    TIMESTAMPTZ NOT NULL,
    set_by     BIGINT NOT NULL REFERENCES users (id),
    set_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK (ends_at > starts_at)
);

-- Bubble attributions: a trace's GPU idle intervals classified against a queue (request
-- log or Prometheus capture). Kept for an investigation, whose step 3 shows the latest.
CREATE TABLE bubble_attributions (
    id                BIGSERIAL PRIMARY KEY,
    investigation_id  BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    trace_artifact_id BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    queue_artifact_id BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    offset_ms         DOUBLE PRECISION NOT NULL,
    min_idle_us       DOUBLE PRECISION NOT NULL,
    result            JSONB NOT NULL,
    created_by        BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX bubble_attributions_investigation ON bubble_attributions (investigation_id, id);

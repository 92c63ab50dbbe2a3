-- Artifacts whose analysis filled a step: the evidence behind the recorded numbers.
CREATE TABLE step_evidence (
    investigation_id BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    step        SMALLINT NOT NULL CHECK (step BETWEEN 0 AND 7),
    artifact_id BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    linked_by   BIGINT NOT NULL REFERENCES users (id),
    linked_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (investigation_id, step, artifact_id)
);

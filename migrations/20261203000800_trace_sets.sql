-- Trace sets: the rank traces of one distributed run. Each rank is an ordinary
-- PyTorch-trace artifact analysed by the artifact queue; the set is summarised from
-- their analyses once every rank has finished (status 'analyzing' until then).
CREATE TABLE trace_sets (
    id               BIGSERIAL PRIMARY KEY,
    name             TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    investigation_id BIGINT REFERENCES investigations (id) ON DELETE SET NULL,
    status           TEXT NOT NULL CHECK (status IN ('analyzing', 'done', 'failed')),
    error            TEXT,
    result           JSONB,
    created_by       BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at      TIMESTAMPTZ
);
CREATE INDEX trace_sets_investigation ON trace_sets (investigation_id, id);
CREATE INDEX trace_sets_analyzing ON trace_sets (id) WHERE status = 'analyzing';

CREATE TABLE trace_set_members (
    trace_set_id BIGINT NOT NULL REFERENCES trace_sets (id) ON DELETE CASCADE,
    position     INT NOT NULL CHECK (position >= 0),
    artifact_id  BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    PRIMARY KEY (trace_set_id, position),
    UNIQUE (trace_set_id, artifact_id)
);
CREATE INDEX trace_set_members_artifact ON trace_set_members (artifact_id);

-- Capacity proposals: inputs and the sizing computed from them (kept as computed, so a
-- rolled-out proposal is scored against what was approved), review history, evidence
-- links and after-rollout observations.
CREATE TABLE proposals (
    id             BIGSERIAL PRIMARY KEY,
    title          TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    owner_id       BIGINT REFERENCES users (id) ON DELETE SET NULL,
    state          TEXT NOT NULL DEFAULT 'draft' CHECK (state IN ('draft', 'in_review',
                       'approved', 'changes_requested', 'rejected', 'rolled_out')),
    -- Raised by every change; a save or review from an older version gets 409.
    version        INT NOT NULL DEFAULT 1,
    input          JSONB NOT NULL,
    sizing         JSONB NOT NULL,
    sensitivity    JSONB NOT NULL,
    -- Facets for lists, evidence matching and search (lower-case).
    model          TEXT NOT NULL,
    gpu            TEXT NOT NULL,
    engine         TEXT NOT NULL,
    engine_version TEXT NOT NULL,
    weight_dtype   TEXT NOT NULL,
    replicas       INT NOT NULL,
    cost_per_hour_usd DOUBLE PRECISION NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX proposals_updated ON proposals (updated_at DESC, id DESC);

-- Every change, in order: created, edited, a review (state change or comment),
-- evidence linked or removed, observations attached.
CREATE TABLE proposal_events (
    id          BIGSERIAL PRIMARY KEY,
    proposal_id BIGINT NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    version     INT NOT NULL,
    actor_id    BIGINT REFERENCES users (id) ON DELETE SET NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('created', 'edited', 'review', 'evidence',
                    'observed')),
    from_state  TEXT,
    to_state    TEXT,
    section     TEXT,
    comment     TEXT NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX proposal_events_proposal ON proposal_events (proposal_id, id);

CREATE TABLE proposal_evidence (
    proposal_id BIGINT NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('journal', 'comparison', 'artifact')),
    source_id   BIGINT NOT NULL,
    note        TEXT NOT NULL DEFAULT '',
    added_by    BIGINT REFERENCES users (id) ON DELETE SET NULL,
    added_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (proposal_id, kind, source_id)
);

-- What production measured after rollout, and the scores against the sizing.
CREATE TABLE proposal_observations (
    id           BIGSERIAL PRIMARY KEY,
    proposal_id  BIGINT NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    observed     JSONB NOT NULL,
    scores       JSONB NOT NULL,
    artifact_ids BIGINT[] NOT NULL DEFAULT '{}',
    note         TEXT NOT NULL DEFAULT '',
    created_by   BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX proposal_observations_proposal ON proposal_observations (proposal_id, id);

-- Proposals are searchable documents too.
ALTER TABLE search_documents DROP CONSTRAINT search_documents_kind_check;
ALTER TABLE search_documents ADD CONSTRAINT search_documents_kind_check
    CHECK (kind IN ('journal', 'investigation', 'artifact', 'comparison', 'proposal'));
CREATE TRIGGER search_proposal AFTER INSERT OR UPDATE OR DELETE ON proposals
    FOR EACH ROW EXECUTE FUNCTION search_row_changed('proposal');

-- Example proposals from seed-demo are found again by this key (seeding twice adds nothing).
ALTER TABLE proposals ADD COLUMN demo_key TEXT UNIQUE;

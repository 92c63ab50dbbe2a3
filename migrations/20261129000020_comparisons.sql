-- Before/after comparisons (step 7). investigation_id gets its foreign key once the
-- investigations table lands; the report is the computed result, kept as it was.
CREATE TABLE comparisons (
    id               BIGSERIAL PRIMARY KEY,
    investigation_id BIGINT,
    variable         TEXT NOT NULL CHECK (length(variable) BETWEEN 1 AND 500),
    kind             TEXT NOT NULL CHECK (kind IN ('vllm_bench', 'request_log')),
    metric           TEXT NOT NULL,
    percentile       TEXT NOT NULL CHECK (percentile IN ('p50', 'p90', 'p95', 'p99')),
    -- "The diagnosis names the cause this change removes" (needed for "confirmed").
    cause_proven     BOOLEAN NOT NULL DEFAULT false,
    baseline_config  JSONB,
    candidate_config JSONB,
    verdict          TEXT NOT NULL CHECK (verdict IN ('confirmed', 'improved', 'inconclusive',
                         'invalid_comparison', 'regressed')),
    report           JSONB NOT NULL,
    created_by       BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX comparisons_investigation ON comparisons (investigation_id);

-- The runs of each side, in the order given (A/B/B/A keeps its order).
CREATE TABLE comparison_artifacts (
    comparison_id BIGINT NOT NULL REFERENCES comparisons (id) ON DELETE CASCADE,
    side          TEXT NOT NULL CHECK (side IN ('baseline', 'candidate')),
    position      INT NOT NULL CHECK (position >= 0),
    artifact_id   BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE RESTRICT,
    PRIMARY KEY (comparison_id, side, position),
    UNIQUE (comparison_id, artifact_id)
);
CREATE INDEX comparison_artifacts_artifact ON comparison_artifacts (artifact_id);

-- The team's record of predictions: what a diagnosis expected, what happened.
CREATE TABLE predictions (
    id            BIGSERIAL PRIMARY KEY,
    comparison_id BIGINT NOT NULL UNIQUE REFERENCES comparisons (id) ON DELETE CASCADE,
    metric        TEXT NOT NULL,
    percentile    TEXT NOT NULL CHECK (percentile IN ('p50', 'p90', 'p95', 'p99')),
    low_pct       DOUBLE PRECISION NOT NULL,
    high_pct      DOUBLE PRECISION NOT NULL,
    source        TEXT NOT NULL DEFAULT '',
    observed_pct  DOUBLE PRECISION NOT NULL,
    score         TEXT NOT NULL CHECK (score IN ('inside', 'below', 'above')),
    -- False when the comparison was invalid: such a score says nothing.
    counted       BOOLEAN NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

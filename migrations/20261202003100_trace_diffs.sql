-- Trace diffs: two PyTorch traces compared op by op and kernel by kernel (HTA
-- TraceDiff's definitions). Computed from both blobs, off the request when large:
-- status 'analyzing' until the result (or the failure) is stored.
CREATE TABLE trace_diffs (
    id                  BIGSERIAL PRIMARY KEY,
    investigation_id    BIGINT REFERENCES investigations (id) ON DELETE SET NULL,
    control_artifact_id BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    test_artifact_id    BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    status              TEXT NOT NULL CHECK (status IN ('analyzing', 'done', 'failed')),
    error               TEXT,
    result              JSONB,
    created_by          BIGINT REFERENCES users (id) ON DELETE SET NULL,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at         TIMESTAMPTZ,
    CHECK (control_artifact_id <> test_artifact_id)
);
CREATE INDEX trace_diffs_investigation ON trace_diffs (investigation_id, id);
CREATE INDEX trace_diffs_control ON trace_diffs (control_artifact_id);
CREATE INDEX trace_diffs_test ON trace_diffs (test_artifact_id);

-- Each side's traces (the ranks of one run), in the order given; the first of each side
-- is also the row's control / test artifact.
CREATE TABLE trace_diff_artifacts (
    trace_diff_id BIGINT NOT NULL REFERENCES trace_diffs (id) ON DELETE CASCADE,
    side          TEXT NOT NULL CHECK (side IN ('control', 'test')),
    position      INT NOT NULL CHECK (position >= 0),
    artifact_id   BIGINT NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE,
    PRIMARY KEY (trace_diff_id, side, position),
    UNIQUE (trace_diff_id, artifact_id)
);
CREATE INDEX trace_diff_artifacts_artifact ON trace_diff_artifacts (artifact_id);

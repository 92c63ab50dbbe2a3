-- Who deleted which artifact, and when: the row itself is gone (with its blob, request
-- rows and links), so this is the record that it existed and who removed it.
CREATE TABLE artifact_deletions (
    id               BIGSERIAL PRIMARY KEY,
    artifact_id      BIGINT NOT NULL,
    name             TEXT NOT NULL,
    kind             TEXT NOT NULL,
    sha256           TEXT NOT NULL,
    investigation_id BIGINT REFERENCES investigations (id) ON DELETE SET NULL,
    uploaded_by      BIGINT REFERENCES users (id) ON DELETE SET NULL,
    deleted_by       BIGINT NOT NULL REFERENCES users (id),
    deleted_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX artifact_deletions_by_time ON artifact_deletions (deleted_at DESC);

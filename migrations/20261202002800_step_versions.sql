-- Step saves carry the version the editor started from, like journal entries and
-- proposals: a save from an older version is refused, and the revisions tell which
-- fields the other save changed.
ALTER TABLE investigation_steps ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

CREATE TABLE investigation_step_revisions (
    investigation_id BIGINT NOT NULL,
    step        SMALLINT NOT NULL,
    version     INTEGER NOT NULL,
    data        JSONB NOT NULL,
    user_id     BIGINT NOT NULL REFERENCES users (id),
    at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (investigation_id, step, version),
    FOREIGN KEY (investigation_id, step)
        REFERENCES investigation_steps (investigation_id, step) ON DELETE CASCADE
);

INSERT INTO investigation_step_revisions (investigation_id, step, version, data, user_id, at)
    SELECT investigation_id, step, version, data, updated_by, updated_at FROM investigation_steps;

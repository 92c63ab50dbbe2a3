-- One Grafana annotation per investigation and kind ('change': step 7's CHANGE;
-- 'entry': its published journal entry). A row is (re)queued whenever its text changes
-- and synced by a worker: created once (grafana_id then set), updated after.
CREATE TABLE grafana_annotations (
    id               BIGSERIAL PRIMARY KEY,
    investigation_id BIGINT NOT NULL REFERENCES investigations (id) ON DELETE CASCADE,
    kind             TEXT NOT NULL CHECK (kind IN ('change', 'entry')),
    path             TEXT NOT NULL,
    payload          JSONB NOT NULL,
    grafana_id       BIGINT,
    status           TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'synced')),
    attempts         INT NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_error       TEXT,
    synced_at        TIMESTAMPTZ,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (investigation_id, kind)
);
CREATE INDEX grafana_annotations_due ON grafana_annotations (next_attempt_at)
    WHERE status = 'pending';

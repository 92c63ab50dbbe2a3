-- Live captures of a server's /metrics. While the window runs the artifact is
-- 'capturing' (its blob does not exist yet: sha256 names the empty content, size 0);
-- source_url records where the bytes came from; capture_hosts is the admin's list of
-- host:port pairs the server may fetch from (empty: no captures).
ALTER TABLE artifacts DROP CONSTRAINT artifacts_status_check;
ALTER TABLE artifacts ADD CONSTRAINT artifacts_status_check
    CHECK (status IN ('queued', 'analyzing', 'done', 'failed', 'not_analyzed', 'capturing'));
ALTER TABLE artifacts ADD COLUMN source_url TEXT;
CREATE INDEX artifacts_capturing ON artifacts (id) WHERE status = 'capturing';

CREATE TABLE capture_hosts (
    host_port TEXT PRIMARY KEY CHECK (length(host_port) BETWEEN 3 AND 300),
    note      TEXT NOT NULL DEFAULT '' CHECK (length(note) <= 200),
    added_by  BIGINT REFERENCES users (id) ON DELETE SET NULL,
    added_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

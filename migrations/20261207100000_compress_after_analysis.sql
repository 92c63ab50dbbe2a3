-- An upload is kept as it came until its analysis is over, then compressed with zstd
-- by a background pass (zstd would otherwise share the cores with the analysis the
-- person is waiting for). This marks the rows whose blob is still to be compressed.
ALTER TABLE artifacts ADD COLUMN compress_pending BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX artifacts_compress_pending ON artifacts (id) WHERE compress_pending;

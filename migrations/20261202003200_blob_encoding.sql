-- How each artifact's blob is kept on disk. The sha256 stays that of the bytes as
-- uploaded; a zstd blob is named by it with ".zst" after it. Rows written before this
-- stay 'identity' (their blobs are the uploads themselves) and keep working.
-- stored_bytes is what the blob store holds; NULL (older rows) means the same as
-- size_bytes, which is what an identity blob holds.
ALTER TABLE artifacts
    ADD COLUMN blob_encoding TEXT NOT NULL DEFAULT 'identity'
        CHECK (blob_encoding IN ('identity', 'zstd')),
    ADD COLUMN stored_bytes BIGINT CHECK (stored_bytes >= 0);
DROP INDEX IF EXISTS artifacts_sha256;
CREATE INDEX artifacts_blob ON artifacts (sha256, blob_encoding);

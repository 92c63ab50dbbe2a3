-- The app answers searches from an index it keeps in memory (src/core/memory/index.rs)
-- and follows the documents by generation: each rebuilt document carries the generation
-- that wrote it, and a document that no longer exists leaves its key and generation in
-- search_removed, so an index at generation G loads only what changed after G. The
-- epoch tells one instance's documents from another's (a restored backup).
ALTER TABLE search_state ADD COLUMN epoch BIGINT NOT NULL
    DEFAULT (floor(random() * 9e15))::bigint;
ALTER TABLE search_documents ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
CREATE INDEX search_documents_generation ON search_documents (generation);

CREATE TABLE search_removed (
    kind       TEXT NOT NULL,
    source_id  BIGINT NOT NULL,
    generation BIGINT NOT NULL,
    PRIMARY KEY (kind, source_id)
);
CREATE INDEX search_removed_generation ON search_removed (generation);

-- Matching now happens in the app; the full-text GIN index only cost writes.
DROP INDEX search_documents_doc;

-- Search: one document per searchable thing (journal entry, investigation, artifact),
-- with weighted full-text, facet columns and the fields the similar-symptom list shows.
-- Triggers only queue what changed (search_stale); the app rebuilds those documents
-- with the method's own computations (dominant phase, regime, verdict) before it
-- answers a search, so no save path has to know about search.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Kept narrow (tsvector and facets only) so matching, ranking and facet counting scan as
-- few pages as possible; the texts live in search_texts.
CREATE TABLE search_documents (
    kind        TEXT NOT NULL CHECK (kind IN ('journal', 'investigation', 'artifact', 'comparison')),
    source_id   BIGINT NOT NULL,
    -- Weighted: A = title, symptom, diagnosis; B = change, result; C = workload,
    -- baseline, step records; D = notes, quality, effort (see search_texts).
    doc         TSVECTOR NOT NULL,
    -- Facets (lower-case slugs or names; NULL when unknown).
    metric      TEXT,
    percentile  TEXT,
    phase       TEXT,
    regime      TEXT,
    verdict     TEXT,
    model       TEXT,
    gpu         TEXT,
    engine      TEXT,
    engine_version TEXT,
    tags        TEXT[] NOT NULL DEFAULT '{}',
    status      TEXT,
    author      TEXT,
    doc_date    DATE NOT NULL,
    -- Workload shape, for similarity.
    prompt_tokens DOUBLE PRECISION,
    output_tokens DOUBLE PRECISION,
    -- The investigation behind the document (its own id for an investigation).
    investigation_id BIGINT,
    PRIMARY KEY (kind, source_id)
);

-- What results show: title, link, the texts snippets are cut from, and one line each
-- of diagnosis and change for "seen before" lists.
CREATE TABLE search_texts (
    kind        TEXT NOT NULL,
    source_id   BIGINT NOT NULL,
    title       TEXT NOT NULL,
    url         TEXT NOT NULL,
    text_a      TEXT NOT NULL DEFAULT '',
    text_b      TEXT NOT NULL DEFAULT '',
    text_c      TEXT NOT NULL DEFAULT '',
    text_d      TEXT NOT NULL DEFAULT '',
    diagnosis   TEXT NOT NULL DEFAULT '',
    change      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kind, source_id),
    FOREIGN KEY (kind, source_id) REFERENCES search_documents (kind, source_id) ON DELETE CASCADE
);
CREATE INDEX search_documents_doc ON search_documents USING GIN (doc);
CREATE INDEX search_documents_tags ON search_documents USING GIN (tags);
CREATE INDEX search_documents_symptom ON search_documents (metric, phase);
CREATE INDEX search_documents_date ON search_documents (doc_date DESC);
CREATE INDEX search_documents_investigation ON search_documents (investigation_id);

-- The words documents use, for correcting a misspelt query (trigram similarity).
CREATE TABLE search_words (
    word TEXT PRIMARY KEY
);
CREATE INDEX search_words_trgm ON search_words USING GIN (word gin_trgm_ops);

-- Documents to rebuild.
CREATE TABLE search_stale (
    kind      TEXT NOT NULL,
    source_id BIGINT NOT NULL,
    PRIMARY KEY (kind, source_id)
);

-- Bumped by every rebuild, so cached answers know when they are out of date.
CREATE TABLE search_state (
    only_row   BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
    generation BIGINT NOT NULL DEFAULT 0
);
INSERT INTO search_state DEFAULT VALUES;

CREATE FUNCTION search_enqueue(k TEXT, id BIGINT) RETURNS void LANGUAGE sql AS $$
    INSERT INTO search_stale (kind, source_id) VALUES (k, id) ON CONFLICT DO NOTHING;
$$;

-- A row of a table whose documents are keyed by the row's id; the kind is the argument.
CREATE FUNCTION search_row_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM search_enqueue(TG_ARGV[0], OLD.id);
    ELSE
        PERFORM search_enqueue(TG_ARGV[0], NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER search_journal AFTER INSERT OR UPDATE OR DELETE ON journal_entries
    FOR EACH ROW EXECUTE FUNCTION search_row_changed('journal');

-- An investigation's entry takes its facets from the investigation, so both go stale.
CREATE FUNCTION search_investigation_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    inv BIGINT;
BEGIN
    IF TG_TABLE_NAME = 'investigations' THEN
        inv := CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END;
    ELSE
        inv := CASE WHEN TG_OP = 'DELETE' THEN OLD.investigation_id ELSE NEW.investigation_id END;
    END IF;
    PERFORM search_enqueue('investigation', inv);
    PERFORM search_enqueue('journal', j.id) FROM journal_entries j WHERE j.investigation_id = inv;
    RETURN NULL;
END $$;
CREATE TRIGGER search_investigation AFTER INSERT OR UPDATE OR DELETE ON investigations
    FOR EACH ROW EXECUTE FUNCTION search_investigation_changed();
CREATE TRIGGER search_investigation_steps AFTER INSERT OR UPDATE OR DELETE ON investigation_steps
    FOR EACH ROW EXECUTE FUNCTION search_investigation_changed();

-- Only the columns a document shows: analysis progress updates stay cheap.
CREATE TRIGGER search_artifact
    AFTER INSERT OR DELETE OR UPDATE OF name, kind, investigation_id, journal_entry_id ON artifacts
    FOR EACH ROW EXECUTE FUNCTION search_row_changed('artifact');

-- Whatever exists already is built on the first search.
INSERT INTO search_stale (kind, source_id)
    SELECT 'investigation', id FROM investigations
    UNION ALL SELECT 'journal', id FROM journal_entries
    UNION ALL SELECT 'artifact', id FROM artifacts;

-- The search thesaurus: each row is a group of words and phrases a search treats as the
-- same thing (a query word or phrase found in a group also searches for the group's
-- other terms). Admins extend it on /admin/thesaurus and through the API; a change
-- advances search_state.generation so no cached answer outlives it.
CREATE TABLE search_synonyms (
    id         BIGSERIAL PRIMARY KEY,
    terms      TEXT[] NOT NULL CHECK (cardinality(terms) BETWEEN 2 AND 12),
    updated_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

INSERT INTO search_synonyms (terms) VALUES
    (ARRAY['ITL', 'inter-token latency', 'inter token latency', 'TPOT', 'time per output token']),
    (ARRAY['TTFT', 'time to first token']),
    (ARRAY['spike', 'tail', 'p99']),
    (ARRAY['OOM', 'out of memory']),
    (ARRAY['KV', 'KV cache']),
    (ARRAY['E2E', 'end-to-end latency']),
    (ARRAY['TP', 'tensor parallel', 'tensor parallelism']),
    (ARRAY['MFU', 'model FLOPs utilization']),
    (ARRAY['throughput', 'tokens per second']);

-- A change to the thesaurus changes what searches answer.
UPDATE search_state SET generation = generation + 1;

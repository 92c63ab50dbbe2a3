-- Facets name a model or GPU by its catalog id ("H100 SXM 80GB" is h100-sxm), so the
-- facets, "seen before" and evidence checks see one name per thing; the name as typed is
-- kept beside it. Every document is queued: the app rebuilds each one with the catalog
-- (which lives in the app, not the database) before the next search, which fills both.
ALTER TABLE search_documents ADD COLUMN model_typed TEXT, ADD COLUMN gpu_typed TEXT;
INSERT INTO search_stale (kind, source_id)
SELECT kind, source_id FROM search_documents
ON CONFLICT DO NOTHING;

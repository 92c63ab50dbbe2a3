-- Comparisons become searchable documents too (their table exists from here on).
CREATE TRIGGER search_comparison AFTER INSERT OR UPDATE OR DELETE ON comparisons
    FOR EACH ROW EXECUTE FUNCTION search_row_changed('comparison');

INSERT INTO search_stale (kind, source_id)
    SELECT 'comparison', id FROM comparisons ON CONFLICT DO NOTHING;

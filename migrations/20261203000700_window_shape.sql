-- "Seen before" compares the shape of the incident window (queue, KV cache,
-- preemptions, tail, slowest phase), read from the investigation's Prometheus window.
ALTER TABLE search_documents ADD COLUMN window_shape TEXT;

-- Moving the incident window, or a Prometheus window finishing its analysis (or going),
-- changes the investigation's shape: its document and its entries' go stale.
CREATE TRIGGER search_incident_window AFTER INSERT OR UPDATE OR DELETE ON incident_windows
    FOR EACH ROW EXECUTE FUNCTION search_investigation_changed();
CREATE TRIGGER search_window_analyzed AFTER UPDATE OF status ON artifacts
    FOR EACH ROW
    WHEN (NEW.kind = 'prometheus_range' AND NEW.investigation_id IS NOT NULL
          AND NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION search_investigation_changed();
CREATE TRIGGER search_window_removed AFTER DELETE ON artifacts
    FOR EACH ROW
    WHEN (OLD.kind = 'prometheus_range' AND OLD.investigation_id IS NOT NULL)
    EXECUTE FUNCTION search_investigation_changed();

INSERT INTO search_stale (kind, source_id)
    SELECT DISTINCT 'investigation', investigation_id FROM artifacts
    WHERE kind = 'prometheus_range' AND investigation_id IS NOT NULL
    ON CONFLICT DO NOTHING;
INSERT INTO search_stale (kind, source_id)
    SELECT 'journal', j.id FROM journal_entries j
    WHERE j.investigation_id IN (SELECT investigation_id FROM artifacts WHERE kind = 'prometheus_range')
    ON CONFLICT DO NOTHING;

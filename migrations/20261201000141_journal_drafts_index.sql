-- The journal page lists the 20 most recently edited drafts and counts them all: with a
-- partial index both read only the drafts, not every published entry (the count was a
-- sequential scan of the whole table: 43 ms at 100,000 entries).
CREATE INDEX journal_entries_drafts ON journal_entries (updated_at DESC, id DESC)
    WHERE published_at IS NULL;

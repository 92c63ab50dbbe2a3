-- Artifacts hang on investigations and journal entries (both tables exist from here on).
ALTER TABLE artifacts
    ADD CONSTRAINT artifacts_investigation_fk FOREIGN KEY (investigation_id)
        REFERENCES investigations (id) ON DELETE SET NULL,
    ADD CONSTRAINT artifacts_journal_entry_fk FOREIGN KEY (journal_entry_id)
        REFERENCES journal_entries (id) ON DELETE SET NULL;
CREATE INDEX artifacts_journal_entry ON artifacts (journal_entry_id);

-- A comparison made inside an investigation points at it (investigations exist by now).
ALTER TABLE comparisons
    ADD CONSTRAINT comparisons_investigation_fk FOREIGN KEY (investigation_id)
        REFERENCES investigations (id) ON DELETE SET NULL;

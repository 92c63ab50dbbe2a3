-- Request rows arrive a million at a time through COPY. The foreign key to artifacts
-- checked each row on its own (a lookup per row: on 1,000,000 rows it cost more than the
-- rest of the load together). The load now takes the same lock the key took, once
-- (SELECT … FOR KEY SHARE on its artifact, in the load's transaction), and this trigger
-- does what ON DELETE CASCADE did: an artifact's rows go with it.
ALTER TABLE request_rows DROP CONSTRAINT IF EXISTS request_rows_artifact_id_fkey;

CREATE FUNCTION request_rows_follow_artifact() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM request_rows WHERE artifact_id = OLD.id;
    RETURN OLD;
END
$$;

CREATE TRIGGER artifacts_delete_request_rows
    AFTER DELETE ON artifacts
    FOR EACH ROW EXECUTE FUNCTION request_rows_follow_artifact();

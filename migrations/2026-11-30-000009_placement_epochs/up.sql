-- A change counter for everything allocation candidates read (providers, inventories,
-- allocations, provider traits and aggregates, class and trait names), so that a process may
-- keep a snapshot of them and know, with one small query, whether it is still current.
--
-- The counter is split into 64 shards chosen by backend pid, so concurrent writers do not queue
-- on one row; each shard only grows, so the sum only grows, and a reader that reads the sum and
-- the data in one snapshot tags the data with exactly the writes it contains.
CREATE TABLE placement_epochs (
    shard INTEGER PRIMARY KEY,
    n     BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT placement_epochs_shard_check CHECK (shard >= 0 AND shard < 64)
);
INSERT INTO placement_epochs (shard) SELECT generate_series(0, 63);

CREATE FUNCTION placement_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE placement_epochs SET n = n + 1 WHERE shard = pg_backend_pid() % 64;
    RETURN NULL;
END
$$;

-- A provider matters to candidates through its inventory, traits and aggregates (whose triggers
-- fire) and its place in a tree: creating a root or bumping a generation changes none of them,
-- so only a new child, a move or a deletion counts.
CREATE TRIGGER resource_providers_child_added AFTER INSERT ON resource_providers FOR EACH ROW
    WHEN (NEW.parent_provider_id IS NOT NULL)
    EXECUTE FUNCTION placement_changed();
CREATE TRIGGER resource_providers_moved AFTER UPDATE ON resource_providers FOR EACH ROW
    WHEN (OLD.parent_provider_id IS DISTINCT FROM NEW.parent_provider_id
          OR OLD.root_provider_id IS DISTINCT FROM NEW.root_provider_id
          OR OLD.uuid IS DISTINCT FROM NEW.uuid)
    EXECUTE FUNCTION placement_changed();
CREATE TRIGGER resource_providers_changed AFTER DELETE OR TRUNCATE
    ON resource_providers FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();
CREATE TRIGGER inventories_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON inventories FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();
CREATE TRIGGER allocations_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON allocations FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();
CREATE TRIGGER resource_provider_traits_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON resource_provider_traits FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();
CREATE TRIGGER resource_provider_aggregates_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON resource_provider_aggregates FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();
CREATE TRIGGER resource_classes_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON resource_classes FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();
CREATE TRIGGER traits_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON traits FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();
CREATE TRIGGER placement_aggregates_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON placement_aggregates FOR EACH STATEMENT EXECUTE FUNCTION placement_changed();

-- A change counter for everything a compute host's tracker pass compares: Ironic's nodes, the
-- providers, their inventories and allocations, PCI devices, instances and ownership. A host
-- whose last pass saw the counter where it is now has nothing to compare: its pass reads one
-- small sum instead of every node it owns (an idle deployment of 100,000 nodes then costs
-- almost nothing). Sharded by backend pid like placement_epochs.
CREATE TABLE tracker_epochs (
    shard INTEGER PRIMARY KEY,
    n     BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT tracker_epochs_shard_check CHECK (shard >= 0 AND shard < 64)
);
INSERT INTO tracker_epochs (shard) SELECT generate_series(0, 63);

CREATE FUNCTION tracked_state_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tracker_epochs SET n = n + 1 WHERE shard = pg_backend_pid() % 64;
    RETURN NULL;
END
$$;

CREATE TRIGGER ironic_nodes_tracked AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON ironic_nodes FOR EACH STATEMENT EXECUTE FUNCTION tracked_state_changed();
CREATE TRIGGER compute_nodes_tracked AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON compute_nodes FOR EACH STATEMENT EXECUTE FUNCTION tracked_state_changed();
CREATE TRIGGER resource_providers_tracked AFTER INSERT OR DELETE OR TRUNCATE
    ON resource_providers FOR EACH STATEMENT EXECUTE FUNCTION tracked_state_changed();
CREATE TRIGGER inventories_tracked AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON inventories FOR EACH STATEMENT EXECUTE FUNCTION tracked_state_changed();
CREATE TRIGGER allocations_tracked AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON allocations FOR EACH STATEMENT EXECUTE FUNCTION tracked_state_changed();
CREATE TRIGGER pci_devices_tracked AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON pci_devices FOR EACH STATEMENT EXECUTE FUNCTION tracked_state_changed();
CREATE TRIGGER instances_tracked AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
    ON instances FOR EACH STATEMENT EXECUTE FUNCTION tracked_state_changed();

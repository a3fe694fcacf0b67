-- A change counter for what the rebalancer plans from: which nodes exist (ironic_nodes) and who
-- owns them (compute_nodes' host, deleted marker, node). A leader whose last plan was empty
-- and whose hosts are as they were reads this small sum instead of every node's owner: an
-- idle deployment of 100,000 nodes costs one tiny query a tick. Sharded by backend pid like
-- placement_epochs, so concurrent writers do not queue on one row.
CREATE TABLE ownership_epochs (
    shard INTEGER PRIMARY KEY,
    n     BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT ownership_epochs_shard_check CHECK (shard >= 0 AND shard < 64)
);
INSERT INTO ownership_epochs (shard) SELECT generate_series(0, 63);

CREATE FUNCTION ownership_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ownership_epochs SET n = n + 1 WHERE shard = pg_backend_pid() % 64;
    RETURN NULL;
END
$$;

CREATE TRIGGER compute_nodes_added_or_removed AFTER INSERT OR DELETE OR TRUNCATE
    ON compute_nodes FOR EACH STATEMENT EXECUTE FUNCTION ownership_changed();
CREATE TRIGGER compute_nodes_owner_changed AFTER UPDATE OF host, deleted, hypervisor_hostname
    ON compute_nodes FOR EACH STATEMENT EXECUTE FUNCTION ownership_changed();
CREATE TRIGGER ironic_nodes_added_or_removed AFTER INSERT OR DELETE OR TRUNCATE
    ON ironic_nodes FOR EACH STATEMENT EXECUTE FUNCTION ownership_changed();

-- Conductor groups and shards (issue 31, item 4). A host serves the nodes its process selects
-- (`--ironic-conductor-group`, `--ironic-shard`; NULL: any group or shard, '' is Ironic's
-- default group). The rebalancer balances each set of nodes over the hosts that serve it.
ALTER TABLE services ADD COLUMN serves_group VARCHAR(255), ADD COLUMN serves_shard VARCHAR(255);
ALTER TABLE shadow_services ADD COLUMN serves_group VARCHAR(255), ADD COLUMN serves_shard VARCHAR(255);

-- A node that changes group or shard in Ironic may have to move: the rebalancer re-plans.
CREATE TRIGGER ironic_nodes_regrouped AFTER UPDATE OF conductor_group, shard
    ON ironic_nodes FOR EACH STATEMENT EXECUTE FUNCTION ownership_changed();

-- A node leaves a host that no longer serves its group: `regroup`.
ALTER TABLE node_moves DROP CONSTRAINT node_moves_reason_check,
    ADD CONSTRAINT node_moves_reason_check
        CHECK (reason IN ('host_down', 'drain', 'join', 'manual', 'regroup'));

-- The groups no live host serves, as the rebalancer's leader last found them (any process
-- shows them: the dashboard, `GET /api/v1/node-groups`). Rewritten only when they change.
CREATE TABLE unserved_node_groups (
    conductor_group VARCHAR(255) NOT NULL,
    shard           VARCHAR(255),
    nodes           BIGINT NOT NULL,
    since           TIMESTAMPTZ NOT NULL,
    CONSTRAINT unserved_node_groups_nodes_check CHECK (nodes > 0)
);

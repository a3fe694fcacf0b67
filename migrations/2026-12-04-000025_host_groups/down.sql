DROP TABLE unserved_node_groups;
DELETE FROM node_moves WHERE reason = 'regroup';
ALTER TABLE node_moves DROP CONSTRAINT node_moves_reason_check,
    ADD CONSTRAINT node_moves_reason_check CHECK (reason IN ('host_down', 'drain', 'join', 'manual'));
DROP TRIGGER ironic_nodes_regrouped ON ironic_nodes;
ALTER TABLE shadow_services DROP COLUMN serves_group, DROP COLUMN serves_shard;
ALTER TABLE services DROP COLUMN serves_group, DROP COLUMN serves_shard;

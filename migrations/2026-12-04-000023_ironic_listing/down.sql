DROP INDEX ironic_nodes_written_idx;
ALTER TABLE ironic_nodes DROP COLUMN listed;
ALTER TABLE ironic_nodes DROP COLUMN shard;
DELETE FROM leader_leases WHERE name LIKE 'ironic-listing%';
DROP TABLE ironic_listings;

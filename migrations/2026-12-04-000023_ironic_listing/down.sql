DROP INDEX ironic_nodes_updated_at_idx;
ALTER TABLE ironic_nodes DROP COLUMN shard;
DELETE FROM leader_leases WHERE name LIKE 'ironic-listing%';
DROP TABLE ironic_listings;

ALTER TABLE shadow_services DROP COLUMN holder;
ALTER TABLE services DROP COLUMN holder;
DROP TABLE leader_leases;

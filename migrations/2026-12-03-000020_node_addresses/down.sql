DROP FUNCTION simulated_addresses(uuid);
ALTER TABLE ironic_nodes DROP COLUMN addresses;

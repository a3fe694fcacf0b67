ALTER TABLE ironic_nodes DROP CONSTRAINT ironic_nodes_instance_uuid_key;
ALTER TABLE ironic_nodes ADD CONSTRAINT ironic_nodes_instance_uuid_key UNIQUE (instance_uuid);
ALTER TABLE ironic_nodes DROP CONSTRAINT ironic_nodes_name_key;
ALTER TABLE ironic_nodes ADD CONSTRAINT ironic_nodes_name_key UNIQUE (name);
ALTER TABLE ironic_nodes DROP COLUMN first_owned_at;
ALTER TABLE ironic_nodes DROP CONSTRAINT ironic_nodes_source_check;
ALTER TABLE ironic_nodes DROP COLUMN source;
ALTER TABLE ironic_nodes DROP COLUMN traits;
DELETE FROM ironic_nodes WHERE provision_state NOT IN
    ('enroll', 'manageable', 'available', 'deploying', 'active', 'deleting', 'cleaning', 'error')
    OR power_state IS NULL OR power_state NOT IN ('power on', 'power off');
ALTER TABLE ironic_nodes ALTER COLUMN power_state SET NOT NULL;
ALTER TABLE ironic_nodes ALTER COLUMN power_state TYPE VARCHAR(15);
ALTER TABLE ironic_nodes ALTER COLUMN provision_state TYPE VARCHAR(15);
ALTER TABLE ironic_nodes ADD CONSTRAINT ironic_nodes_power_state_check
    CHECK (power_state IN ('power on', 'power off'));
ALTER TABLE ironic_nodes ADD CONSTRAINT ironic_nodes_provision_state_check CHECK (
    provision_state IN ('enroll', 'manageable', 'available', 'deploying', 'active', 'deleting', 'cleaning', 'error'));

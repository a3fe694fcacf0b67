-- A shadow_ twin for every archivable (soft-deleted) table: the same columns in the same order,
-- which the archiver's INSERT INTO shadow_x SELECT * relies on. No defaults, no foreign keys:
-- rows arrive here already complete, and their parents may be archived in the same transaction.
CREATE TABLE shadow_services (LIKE services, PRIMARY KEY (id));
CREATE INDEX shadow_services_deleted_at_idx ON shadow_services (deleted_at);
CREATE TABLE shadow_compute_nodes (LIKE compute_nodes, PRIMARY KEY (id));
CREATE INDEX shadow_compute_nodes_deleted_at_idx ON shadow_compute_nodes (deleted_at);
CREATE TABLE shadow_instances (LIKE instances, PRIMARY KEY (id));
CREATE INDEX shadow_instances_deleted_at_idx ON shadow_instances (deleted_at);
CREATE TABLE shadow_instance_extra (LIKE instance_extra, PRIMARY KEY (id));
CREATE INDEX shadow_instance_extra_deleted_at_idx ON shadow_instance_extra (deleted_at);
CREATE TABLE shadow_instance_system_metadata (LIKE instance_system_metadata, PRIMARY KEY (id));
CREATE INDEX shadow_instance_system_metadata_deleted_at_idx ON shadow_instance_system_metadata (deleted_at);
CREATE TABLE shadow_instance_faults (LIKE instance_faults, PRIMARY KEY (id));
CREATE INDEX shadow_instance_faults_deleted_at_idx ON shadow_instance_faults (deleted_at);
CREATE TABLE shadow_instance_actions (LIKE instance_actions, PRIMARY KEY (id));
CREATE INDEX shadow_instance_actions_deleted_at_idx ON shadow_instance_actions (deleted_at);
CREATE TABLE shadow_instance_actions_events (LIKE instance_actions_events, PRIMARY KEY (id));
CREATE INDEX shadow_instance_actions_events_deleted_at_idx ON shadow_instance_actions_events (deleted_at);
CREATE TABLE shadow_block_device_mapping (LIKE block_device_mapping, PRIMARY KEY (id));
CREATE INDEX shadow_block_device_mapping_deleted_at_idx ON shadow_block_device_mapping (deleted_at);
CREATE TABLE shadow_pci_devices (LIKE pci_devices, PRIMARY KEY (id));
CREATE INDEX shadow_pci_devices_deleted_at_idx ON shadow_pci_devices (deleted_at);
CREATE TABLE shadow_task_log (LIKE task_log, PRIMARY KEY (id));
CREATE INDEX shadow_task_log_deleted_at_idx ON shadow_task_log (deleted_at);

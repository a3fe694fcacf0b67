DROP TRIGGER instances_tracked ON instances;
DROP TRIGGER pci_devices_tracked ON pci_devices;
DROP TRIGGER allocations_tracked ON allocations;
DROP TRIGGER inventories_tracked ON inventories;
DROP TRIGGER resource_providers_tracked ON resource_providers;
DROP TRIGGER compute_nodes_tracked ON compute_nodes;
DROP TRIGGER ironic_nodes_tracked ON ironic_nodes;
DROP FUNCTION tracked_state_changed();
DROP TABLE tracker_epochs;

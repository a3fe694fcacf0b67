DROP TRIGGER ironic_nodes_added_or_removed ON ironic_nodes;
DROP TRIGGER compute_nodes_owner_changed ON compute_nodes;
DROP TRIGGER compute_nodes_added_or_removed ON compute_nodes;
DROP FUNCTION ownership_changed();
DROP TABLE ownership_epochs;

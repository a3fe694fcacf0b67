DROP INDEX ironic_nodes_free_idx;

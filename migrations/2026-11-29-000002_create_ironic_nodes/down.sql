DROP TABLE ironic_nodes;

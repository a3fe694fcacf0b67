DROP TABLE compute_nodes;

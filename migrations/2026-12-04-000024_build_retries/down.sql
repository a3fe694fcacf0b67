DROP TABLE node_build_failures;
DROP TABLE instance_builds;

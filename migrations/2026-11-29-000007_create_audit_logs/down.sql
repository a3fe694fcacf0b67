DROP TABLE archive_runs;
DROP TABLE task_log;
DROP TABLE node_moves;

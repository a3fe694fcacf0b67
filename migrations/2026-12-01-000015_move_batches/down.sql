DROP TRIGGER node_moves_batches ON node_moves;
DROP FUNCTION record_move_batches();
DROP TABLE move_batches;

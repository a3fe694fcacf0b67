-- The moves of one statement summed up, for the timeline: one row per reason and host the batch
-- is about — the host left behind (host_down, drain, manual) or the host that joined (join) —
-- with how many nodes went to (or came from) each other host. Written by a statement trigger on
-- node_moves, so every writer of moves feeds it; a failover of 5,000 nodes is one row.
CREATE TABLE move_batches (
    id          BIGSERIAL PRIMARY KEY,
    moved_at    TIMESTAMPTZ NOT NULL,
    reason      VARCHAR(16) NOT NULL,
    host        VARCHAR(255) NOT NULL,
    nodes       BIGINT NOT NULL,
    -- {"cmp-1": 262, …}: where the nodes went (host_down, drain, manual) or came from (join).
    counterparts JSONB NOT NULL,
    CONSTRAINT move_batches_nodes_check CHECK (nodes > 0)
);

CREATE FUNCTION record_move_batches() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO move_batches (moved_at, reason, host, nodes, counterparts)
    SELECT max(moved_at), reason, subject, sum(n), jsonb_object_agg(other, n)
      FROM (SELECT reason,
                   CASE WHEN reason = 'join' THEN to_host ELSE coalesce(from_host, '') END AS subject,
                   CASE WHEN reason = 'join' THEN coalesce(from_host, '') ELSE to_host END AS other,
                   count(*) AS n, max(moved_at) AS moved_at
              FROM moved GROUP BY 1, 2, 3) pairs
     GROUP BY reason, subject;
    RETURN NULL;
END
$$;
CREATE TRIGGER node_moves_batches AFTER INSERT ON node_moves
    REFERENCING NEW TABLE AS moved FOR EACH STATEMENT EXECUTE FUNCTION record_move_batches();

-- The moves made before this table existed, one batch per ring version, reason and host.
INSERT INTO move_batches (moved_at, reason, host, nodes, counterparts)
SELECT max(moved_at), reason, subject, sum(n), jsonb_object_agg(other, n)
  FROM (SELECT ring_version, reason,
               CASE WHEN reason = 'join' THEN to_host ELSE coalesce(from_host, '') END AS subject,
               CASE WHEN reason = 'join' THEN coalesce(from_host, '') ELSE to_host END AS other,
               count(*) AS n, max(moved_at) AS moved_at
          FROM node_moves GROUP BY 1, 2, 3, 4) pairs
 GROUP BY ring_version, reason, subject
 ORDER BY max(moved_at);

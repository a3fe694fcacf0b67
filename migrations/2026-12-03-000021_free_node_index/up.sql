-- The free nodes in uuid order (issue 26's benchmark): the scheduler picks the first free node
-- by uuid, and without this index its walk crossed every used node before it (quadratic over a
-- fill: ten back-to-back creators at 10,300 nodes kept eight backends busy until heartbeats
-- starved). With it, a pick visits free nodes only (6 ms → 0.4 ms with 5,000 of 10,300 used).
CREATE INDEX ironic_nodes_free_idx ON ironic_nodes (uuid)
    WHERE instance_uuid IS NULL AND provision_state = 'available' AND reservation IS NULL
      AND NOT maintenance;

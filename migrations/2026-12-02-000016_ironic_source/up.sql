-- A real Ironic as the node source (issue 16): `ironic_nodes` is then the mirror of Ironic's
-- listing, written by each process's listing loop, so that every query that joins it works
-- unchanged. Ironic has more provision and power states than the simulator (`wait call-back`,
-- `deploy failed`, `clean failed`, no power state at all), node traits, and renames or
-- re-associations that a listing applies in one statement (the unique keys are checked at
-- commit). `source` says who wrote a row; `first_owned_at` when a mirrored node first had an
-- owner (until then the audit does not expect a compute node for it, as for a simulated node
-- in `enroll`).
ALTER TABLE ironic_nodes DROP CONSTRAINT ironic_nodes_provision_state_check;
ALTER TABLE ironic_nodes DROP CONSTRAINT ironic_nodes_power_state_check;
ALTER TABLE ironic_nodes ALTER COLUMN provision_state TYPE VARCHAR(40);
ALTER TABLE ironic_nodes ALTER COLUMN power_state TYPE VARCHAR(40);
ALTER TABLE ironic_nodes ALTER COLUMN power_state DROP NOT NULL;
ALTER TABLE ironic_nodes ADD COLUMN traits TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE ironic_nodes ADD COLUMN source VARCHAR(16) NOT NULL DEFAULT 'simulated';
ALTER TABLE ironic_nodes ADD CONSTRAINT ironic_nodes_source_check
    CHECK (source IN ('simulated', 'ironic'));
ALTER TABLE ironic_nodes ADD COLUMN first_owned_at TIMESTAMPTZ;
ALTER TABLE ironic_nodes DROP CONSTRAINT ironic_nodes_name_key;
ALTER TABLE ironic_nodes ADD CONSTRAINT ironic_nodes_name_key UNIQUE (name)
    DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE ironic_nodes DROP CONSTRAINT ironic_nodes_instance_uuid_key;
ALTER TABLE ironic_nodes ADD CONSTRAINT ironic_nodes_instance_uuid_key UNIQUE (instance_uuid)
    DEFERRABLE INITIALLY DEFERRED;

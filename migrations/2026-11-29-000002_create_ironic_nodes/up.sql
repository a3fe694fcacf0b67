-- The built-in simulated Ironic: one row per enrolled bare-metal node.
-- Ironic deletes nodes for real (no soft delete); `reservation` is the conductor lock.
CREATE TABLE ironic_nodes (
    id                 BIGSERIAL PRIMARY KEY,
    uuid               UUID NOT NULL,
    name               VARCHAR(255),
    resource_class     VARCHAR(80) NOT NULL,
    provision_state    VARCHAR(15) NOT NULL DEFAULT 'available',
    power_state        VARCHAR(15) NOT NULL DEFAULT 'power off',
    maintenance        BOOLEAN NOT NULL DEFAULT FALSE,
    maintenance_reason TEXT,
    instance_uuid      UUID,
    reservation        VARCHAR(255),
    last_error         TEXT,
    cpus               INTEGER NOT NULL DEFAULT 0,
    memory_mb          INTEGER NOT NULL DEFAULT 0,
    local_gb           INTEGER NOT NULL DEFAULT 0,
    conductor_group    VARCHAR(255) NOT NULL DEFAULT '',
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ,
    CONSTRAINT ironic_nodes_uuid_key UNIQUE (uuid),
    CONSTRAINT ironic_nodes_name_key UNIQUE (name),
    CONSTRAINT ironic_nodes_instance_uuid_key UNIQUE (instance_uuid),
    CONSTRAINT ironic_nodes_provision_state_check CHECK (
        provision_state IN ('enroll', 'manageable', 'available', 'deploying', 'active', 'deleting', 'cleaning', 'error')
    ),
    CONSTRAINT ironic_nodes_power_state_check CHECK (power_state IN ('power on', 'power off'))
);

-- Instances and the rows that live and die with them (Nova's lifecycle tables).
-- Every table is soft-deleted as Nova does it and archived to its shadow_ twin;
-- the children reference their instance (or action) by foreign key, which is what
-- lets the archiver move a parent's children with it.

CREATE TABLE instances (
    id            BIGSERIAL PRIMARY KEY,
    uuid          UUID NOT NULL,
    display_name  VARCHAR(255),
    project_id    VARCHAR(255) NOT NULL,
    user_id       VARCHAR(255) NOT NULL,
    host          VARCHAR(255),
    node          VARCHAR(255),
    resource_class VARCHAR(255),
    vm_state      VARCHAR(255) NOT NULL DEFAULT 'building',
    task_state    VARCHAR(255),
    power_state   INTEGER NOT NULL DEFAULT 0,
    memory_mb     INTEGER NOT NULL DEFAULT 0,
    vcpus         INTEGER NOT NULL DEFAULT 0,
    root_gb       INTEGER NOT NULL DEFAULT 0,
    launched_at   TIMESTAMPTZ,
    terminated_at TIMESTAMPTZ,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ,
    deleted_at    TIMESTAMPTZ,
    deleted       BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT instances_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL)),
    CONSTRAINT instances_uuid_key UNIQUE (uuid)
);
CREATE INDEX instances_host_node_idx ON instances (host, node) WHERE deleted = 0;
CREATE INDEX instances_deleted_at_idx ON instances (deleted_at) WHERE deleted <> 0;

CREATE TABLE instance_extra (
    id            BIGSERIAL PRIMARY KEY,
    instance_uuid UUID NOT NULL REFERENCES instances (uuid),
    numa_topology TEXT,
    pci_requests  TEXT,
    flavor        TEXT,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ,
    deleted_at    TIMESTAMPTZ,
    deleted       BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT instance_extra_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL))
);
CREATE INDEX instance_extra_instance_uuid_idx ON instance_extra (instance_uuid);

CREATE TABLE instance_system_metadata (
    id            BIGSERIAL PRIMARY KEY,
    instance_uuid UUID NOT NULL REFERENCES instances (uuid),
    key           VARCHAR(255) NOT NULL,
    value         VARCHAR(255),
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ,
    deleted_at    TIMESTAMPTZ,
    deleted       BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT instance_system_metadata_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL))
);
CREATE INDEX instance_system_metadata_instance_uuid_idx ON instance_system_metadata (instance_uuid);

CREATE TABLE instance_faults (
    id            BIGSERIAL PRIMARY KEY,
    instance_uuid UUID NOT NULL REFERENCES instances (uuid),
    code          INTEGER NOT NULL,
    message       VARCHAR(255),
    details       TEXT,
    host          VARCHAR(255),
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ,
    deleted_at    TIMESTAMPTZ,
    deleted       BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT instance_faults_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL))
);
CREATE INDEX instance_faults_instance_uuid_idx ON instance_faults (instance_uuid);

CREATE TABLE instance_actions (
    id            BIGSERIAL PRIMARY KEY,
    action        VARCHAR(255) NOT NULL,
    instance_uuid UUID NOT NULL REFERENCES instances (uuid),
    request_id    VARCHAR(255),
    user_id       VARCHAR(255),
    project_id    VARCHAR(255),
    start_time    TIMESTAMPTZ,
    finish_time   TIMESTAMPTZ,
    message       VARCHAR(255),
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ,
    deleted_at    TIMESTAMPTZ,
    deleted       BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT instance_actions_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL))
);
CREATE INDEX instance_actions_instance_uuid_idx ON instance_actions (instance_uuid);

CREATE TABLE instance_actions_events (
    id          BIGSERIAL PRIMARY KEY,
    event       VARCHAR(255) NOT NULL,
    action_id   BIGINT NOT NULL REFERENCES instance_actions (id),
    start_time  TIMESTAMPTZ,
    finish_time TIMESTAMPTZ,
    result      VARCHAR(255),
    traceback   TEXT,
    host        VARCHAR(255),
    details     TEXT,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ,
    deleted_at  TIMESTAMPTZ,
    deleted     BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT instance_actions_events_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL))
);
CREATE INDEX instance_actions_events_action_id_idx ON instance_actions_events (action_id);

CREATE TABLE block_device_mapping (
    id               BIGSERIAL PRIMARY KEY,
    uuid             UUID NOT NULL,
    instance_uuid    UUID NOT NULL REFERENCES instances (uuid),
    device_name      VARCHAR(255),
    source_type      VARCHAR(255),
    destination_type VARCHAR(255),
    volume_id        VARCHAR(36),
    volume_size      INTEGER,
    boot_index       INTEGER,
    delete_on_termination BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ,
    deleted_at       TIMESTAMPTZ,
    deleted          BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT block_device_mapping_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL)),
    CONSTRAINT block_device_mapping_uuid_key UNIQUE (uuid)
);
CREATE INDEX block_device_mapping_instance_uuid_idx ON block_device_mapping (instance_uuid);

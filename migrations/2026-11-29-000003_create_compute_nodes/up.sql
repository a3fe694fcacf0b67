-- Compute nodes: one live row per ironic node (hypervisor_hostname = the ironic node's uuid).
-- `uuid` is unique across deleted rows too: a returning node is undeleted, never re-created.
-- `host` and `owner_epoch` fence writes: every write by a host is conditional on both.
CREATE TABLE compute_nodes (
    id                    BIGSERIAL PRIMARY KEY,
    uuid                  UUID NOT NULL,
    host                  VARCHAR(255) NOT NULL,
    hypervisor_hostname   VARCHAR(255) NOT NULL,
    hypervisor_type       VARCHAR(255) NOT NULL DEFAULT 'ironic',
    hypervisor_version    INTEGER NOT NULL DEFAULT 1,
    owner_epoch           BIGINT NOT NULL DEFAULT 1,
    service_id            BIGINT REFERENCES services (id),
    vcpus                 INTEGER NOT NULL DEFAULT 0,
    memory_mb             INTEGER NOT NULL DEFAULT 0,
    local_gb              INTEGER NOT NULL DEFAULT 0,
    vcpus_used            INTEGER NOT NULL DEFAULT 0,
    memory_mb_used        INTEGER NOT NULL DEFAULT 0,
    local_gb_used         INTEGER NOT NULL DEFAULT 0,
    running_vms           INTEGER NOT NULL DEFAULT 0,
    cpu_allocation_ratio  DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    ram_allocation_ratio  DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    disk_allocation_ratio DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at            TIMESTAMPTZ,
    deleted_at            TIMESTAMPTZ,
    deleted               BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT compute_nodes_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL)),
    CONSTRAINT compute_nodes_owner_epoch_check CHECK (owner_epoch > 0),
    CONSTRAINT compute_nodes_uuid_key UNIQUE (uuid)
);
-- Invariant 1: exactly one live compute node per ironic node.
CREATE UNIQUE INDEX compute_nodes_one_live_per_node ON compute_nodes (hypervisor_hostname) WHERE deleted = 0;
CREATE INDEX compute_nodes_host_idx ON compute_nodes (host) WHERE deleted = 0;
CREATE INDEX compute_nodes_service_id_idx ON compute_nodes (service_id);

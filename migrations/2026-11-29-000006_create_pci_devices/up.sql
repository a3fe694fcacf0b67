-- PCI devices of compute nodes. `instance_uuid` is an allocation pointer, not ownership:
-- no foreign key to instances, and never a reason to archive the row (bug 1899541).
-- Invariant 8: `compute_node_id` is never NULL.
CREATE TABLE pci_devices (
    id              BIGSERIAL PRIMARY KEY,
    compute_node_id BIGINT NOT NULL REFERENCES compute_nodes (id),
    address         VARCHAR(12) NOT NULL,
    vendor_id       VARCHAR(4) NOT NULL,
    product_id      VARCHAR(4) NOT NULL,
    dev_type        VARCHAR(8) NOT NULL,
    dev_id          VARCHAR(255),
    label           VARCHAR(255) NOT NULL,
    status          VARCHAR(36) NOT NULL DEFAULT 'available',
    extra_info      TEXT,
    instance_uuid   UUID,
    request_id      VARCHAR(36),
    numa_node       INTEGER,
    parent_addr     VARCHAR(12),
    uuid            UUID NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ,
    deleted_at      TIMESTAMPTZ,
    deleted         BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT pci_devices_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL)),
    CONSTRAINT pci_devices_status_check CHECK (status IN ('available', 'claimed', 'allocated', 'removed', 'unavailable', 'unclaimable')),
    CONSTRAINT pci_devices_uuid_key UNIQUE (uuid),
    CONSTRAINT pci_devices_compute_node_id_address_deleted_key UNIQUE (compute_node_id, address, deleted)
);
CREATE INDEX pci_devices_instance_uuid_idx ON pci_devices (instance_uuid) WHERE instance_uuid IS NOT NULL;

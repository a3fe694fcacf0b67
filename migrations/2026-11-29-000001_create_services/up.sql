-- Compute services and their heartbeats (Nova's `services`).
-- Soft delete as Nova: `deleted` = 0 while live, = the row's own id once deleted.
CREATE TABLE services (
    id              BIGSERIAL PRIMARY KEY,
    uuid            UUID NOT NULL,
    host            VARCHAR(255) NOT NULL,
    "binary"        VARCHAR(255) NOT NULL,
    topic           VARCHAR(255),
    report_count    BIGINT NOT NULL DEFAULT 0,
    disabled        BOOLEAN NOT NULL DEFAULT FALSE,
    disabled_reason VARCHAR(255),
    forced_down     BOOLEAN NOT NULL DEFAULT FALSE,
    last_seen_up    TIMESTAMPTZ,
    version         INTEGER NOT NULL DEFAULT 0,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ,
    deleted_at      TIMESTAMPTZ,
    deleted         BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT services_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL)),
    CONSTRAINT services_uuid_key UNIQUE (uuid),
    CONSTRAINT services_host_binary_deleted_key UNIQUE (host, "binary", deleted)
);

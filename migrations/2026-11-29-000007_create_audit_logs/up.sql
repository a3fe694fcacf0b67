-- node_moves: the audit log of every compute-node handover (invariant 2: one row per move).
-- task_log: Nova's periodic task log (archived by updated_at with --task-log).
-- archive_runs: what each archive run moved, per table.

CREATE TABLE node_moves (
    id                  BIGSERIAL PRIMARY KEY,
    compute_node_uuid   UUID NOT NULL,
    hypervisor_hostname VARCHAR(255) NOT NULL,
    from_host           VARCHAR(255),
    to_host             VARCHAR(255) NOT NULL,
    reason              VARCHAR(16) NOT NULL,
    owner_epoch         BIGINT NOT NULL,
    ring_version        BIGINT NOT NULL DEFAULT 0,
    moved_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT node_moves_reason_check CHECK (reason IN ('host_down', 'drain', 'join', 'manual')),
    CONSTRAINT node_moves_owner_epoch_check CHECK (owner_epoch > 0)
);
CREATE INDEX node_moves_compute_node_uuid_idx ON node_moves (compute_node_uuid);
CREATE INDEX node_moves_moved_at_idx ON node_moves (moved_at);

CREATE TABLE task_log (
    id               BIGSERIAL PRIMARY KEY,
    task_name        VARCHAR(255) NOT NULL,
    state            VARCHAR(255) NOT NULL,
    host             VARCHAR(255) NOT NULL,
    period_beginning TIMESTAMPTZ NOT NULL,
    period_ending    TIMESTAMPTZ NOT NULL,
    message          VARCHAR(255) NOT NULL,
    task_items       INTEGER NOT NULL DEFAULT 0,
    errors           INTEGER NOT NULL DEFAULT 0,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ,
    deleted_at       TIMESTAMPTZ,
    deleted          BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT task_log_soft_delete CHECK ((deleted = 0 AND deleted_at IS NULL) OR (deleted = id AND deleted_at IS NOT NULL)),
    CONSTRAINT task_log_task_period_host_key UNIQUE (task_name, host, period_beginning, period_ending)
);

CREATE TABLE archive_runs (
    id           BIGSERIAL PRIMARY KEY,
    started_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at  TIMESTAMPTZ,
    -- The options the run was given (max_rows, before, until_complete, purge, task_log).
    options      JSONB NOT NULL DEFAULT '{}'::jsonb,
    -- Rows moved per table: {"instances": 3, ...}.
    tables       JSONB NOT NULL DEFAULT '{}'::jsonb,
    total_rows   BIGINT NOT NULL DEFAULT 0,
    purged_rows  BIGINT NOT NULL DEFAULT 0,
    status       VARCHAR(16) NOT NULL DEFAULT 'running',
    CONSTRAINT archive_runs_status_check CHECK (status IN ('running', 'complete', 'stopped', 'failed'))
);

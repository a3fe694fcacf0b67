-- One listing of a real Ironic per deployment (issue 31). The process holding the lease
-- `ironic-listing …` (one per conductor group / shard filter, seeded on first use) lists Ironic
-- each interval and writes the mirror; the others read what it did here, one row per lease.
CREATE TABLE ironic_listings (
    name         VARCHAR(64) PRIMARY KEY,
    holder       UUID NOT NULL,
    at           TIMESTAMPTZ NOT NULL,
    last_success TIMESTAMPTZ,
    nodes        BIGINT NOT NULL DEFAULT 0,
    pages        BIGINT NOT NULL DEFAULT 0,
    changed      BIGINT NOT NULL DEFAULT 0,
    took_ms      BIGINT NOT NULL DEFAULT 0,
    held         BIGINT NOT NULL DEFAULT 0,
    error        TEXT,
    listings     BIGINT NOT NULL DEFAULT 0
);

-- A node's shard in Ironic (API 1.82), beside its conductor group.
ALTER TABLE ironic_nodes ADD COLUMN shard VARCHAR(255);

-- Whether a listing wrote the row last (else a deploy or a tear-down did, writing the node as
-- Ironic showed it then, or the simulator). The listing holder reads only the rows others wrote
-- since its last listing, through this small index, not the whole mirror.
ALTER TABLE ironic_nodes ADD COLUMN listed BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX ironic_nodes_written_idx ON ironic_nodes (updated_at) WHERE NOT listed;

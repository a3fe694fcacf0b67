-- Leadership by lease (invariant 13). One row per leadership; the rebalancer's is seeded here.
-- A process leads while it holds the row with `expires_at` in the future; it renews by moving
-- `expires_at`, and another process takes over only once the lease has expired, bumping `epoch`.
-- Every move commits only while its transaction holds the row (FOR SHARE) at the epoch it was
-- planned under, so a leader that froze and woke up after a takeover writes nothing.
CREATE TABLE leader_leases (
    name        VARCHAR(64) PRIMARY KEY,
    holder      UUID NOT NULL,
    epoch       BIGINT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL,
    CONSTRAINT leader_leases_epoch_check CHECK (epoch >= 0)
);
INSERT INTO leader_leases (name, holder, epoch, expires_at, acquired_at)
VALUES ('rebalancer', '00000000-0000-0000-0000-000000000000', 0, '1970-01-01T00:00:00Z', '1970-01-01T00:00:00Z');

-- The process that runs a compute host (invariant 4's actor): one at a time. A process marks
-- its presence with a connection whose application_name is 'ringmaster <holder>'; another
-- process may take a host over only when that connection is gone or the host is down.
ALTER TABLE services ADD COLUMN holder UUID;
ALTER TABLE shadow_services ADD COLUMN holder UUID;

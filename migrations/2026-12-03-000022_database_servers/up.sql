-- The PostgreSQL servers this deployment's processes have reached as primary (issue 28), by
-- their postmaster's start time, and when the first process got there. Presence connections
-- (pg_stat_activity) are per server and not replicated: right after a failover, or a restart,
-- no process looks present on the new server until it has reconnected. For one grace period
-- after first_seen a missing presence connection does not count as a process gone. The first
-- server a deployment ever reaches has first_seen '-infinity': nothing was lost there.
CREATE TABLE ringmaster_servers (
    started_at TIMESTAMPTZ PRIMARY KEY,
    first_seen TIMESTAMPTZ NOT NULL
);

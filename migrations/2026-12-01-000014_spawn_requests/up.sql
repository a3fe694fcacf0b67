-- Boots placed by one process onto a host another process runs: the scheduler writes the
-- request with its claim, in one transaction, and the owning process takes it (woken by the
-- `ringmaster_spawns` notification, whose payload is the host; its tracker passes take what a
-- missed notification left). A taken request is deleted, and so is the request of a build
-- settled or an instance deleted before it was taken (a build whose request is never taken is
-- settled like any build that makes no progress). No foreign key to instances: deleting a
-- million archived instances would pay a check per row for a table that is nearly always empty.
CREATE TABLE spawn_requests (
    instance_uuid UUID PRIMARY KEY,
    host          VARCHAR(255) NOT NULL,
    node          VARCHAR(255) NOT NULL,
    pci_devices   INTEGER NOT NULL DEFAULT 0,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT spawn_requests_pci_devices_check CHECK (pci_devices >= 0)
);
CREATE INDEX spawn_requests_host_idx ON spawn_requests (host);

CREATE FUNCTION notify_spawn_requested() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ringmaster_spawns', NEW.host);
    RETURN NULL;
END
$$;
CREATE TRIGGER spawn_requests_notify AFTER INSERT ON spawn_requests
    FOR EACH ROW EXECUTE FUNCTION notify_spawn_requested();

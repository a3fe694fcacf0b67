-- Typed events for the dashboards of every process of a deployment: each change below sends a
-- JSON notification on the `ringmaster_events` channel (delivered at commit, to every process
-- that listens). One notification per statement for bulk changes (a move batch, an enrollment),
-- with counts rather than rows; one per row for instances. Heartbeats send nothing.

-- An instance was created, changed state or was deleted.
CREATE FUNCTION notify_instance_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ringmaster_events', json_build_object(
        'type', 'instance', 'uuid', NEW.uuid, 'name', NEW.display_name, 'host', NEW.host,
        'node', NEW.node,
        'vm_state', CASE WHEN NEW.deleted <> 0 THEN 'deleted' ELSE NEW.vm_state END)::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER instances_notify AFTER INSERT OR UPDATE OF vm_state, deleted, host
    ON instances FOR EACH ROW EXECUTE FUNCTION notify_instance_changed();

-- A batch of moves: counts by old owner, new owner and reason.
CREATE FUNCTION notify_nodes_moved() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text;
BEGIN
    SELECT json_build_object(
        'type', 'nodes_moved', 'count', count(*), 'ring_version', max(ring_version),
        'from', (SELECT json_object_agg(host, n) FROM
                    (SELECT coalesce(from_host, '') AS host, count(*) AS n FROM moved GROUP BY 1) f),
        'to', (SELECT json_object_agg(host, n) FROM
                    (SELECT to_host AS host, count(*) AS n FROM moved GROUP BY 1) t),
        'reasons', (SELECT json_object_agg(reason, n) FROM
                    (SELECT reason, count(*) AS n FROM moved GROUP BY 1) r))::text
      INTO payload FROM moved;
    IF length(payload) > 7500 THEN
        payload := json_build_object('type', 'nodes_moved', 'count',
                                     (SELECT count(*) FROM moved))::text;
    END IF;
    PERFORM pg_notify('ringmaster_events', payload);
    RETURN NULL;
END
$$;
CREATE TRIGGER node_moves_notify AFTER INSERT ON node_moves
    REFERENCING NEW TABLE AS moved FOR EACH STATEMENT EXECUTE FUNCTION notify_nodes_moved();

-- Nodes enrolled, changed (deployed, locked, in maintenance …) or deleted in Ironic: how many,
-- and the first few.
CREATE FUNCTION notify_nodes_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    payload text;
BEGIN
    SELECT json_build_object(
        'type', 'nodes',
        'change', CASE TG_OP WHEN 'INSERT' THEN 'enrolled' WHEN 'DELETE' THEN 'deleted'
                             ELSE 'updated' END,
        'count', count(*),
        'nodes', (SELECT json_agg(uuid) FROM (SELECT uuid FROM changed LIMIT 20) first))::text
      INTO payload FROM changed;
    IF payload IS NOT NULL AND (payload::json ->> 'count')::bigint > 0 THEN
        PERFORM pg_notify('ringmaster_events', payload);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER ironic_nodes_enrolled_notify AFTER INSERT ON ironic_nodes
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_nodes_changed();
CREATE TRIGGER ironic_nodes_updated_notify AFTER UPDATE ON ironic_nodes
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_nodes_changed();
CREATE TRIGGER ironic_nodes_deleted_notify AFTER DELETE ON ironic_nodes
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION notify_nodes_changed();

-- A compute service was added, or enabled, disabled, forced down or taken by a process (not
-- its heartbeats).
CREATE FUNCTION notify_service_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ringmaster_events', json_build_object(
        'type', 'host', 'host', NEW.host, 'disabled', NEW.disabled,
        'disabled_reason', NEW.disabled_reason, 'forced_down', NEW.forced_down)::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER services_notify AFTER INSERT OR UPDATE OF disabled, disabled_reason, forced_down, holder
    ON services FOR EACH ROW EXECUTE FUNCTION notify_service_changed();

-- An archive run finished.
CREATE FUNCTION notify_archive_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ringmaster_events', json_build_object(
        'type', 'archive', 'run_id', NEW.id, 'status', NEW.status,
        'total', NEW.total_rows, 'purged', NEW.purged_rows)::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER archive_runs_notify AFTER UPDATE OF finished_at ON archive_runs
    FOR EACH ROW WHEN (NEW.finished_at IS NOT NULL AND OLD.finished_at IS NULL)
    EXECUTE FUNCTION notify_archive_finished();

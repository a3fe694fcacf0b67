-- The processes of the deployment and the ringmaster version each runs (issue 18): a process
-- records itself when it starts; it is live while its presence connection (application_name
-- 'ringmaster <holder>') is open. `ringmaster upgrade check`, GET /api/v1/hosts and the
-- dashboard show the versions.
CREATE TABLE ringmaster_processes (
    holder uuid PRIMARY KEY,
    version varchar(64) NOT NULL,
    hostname varchar(255) NOT NULL,
    pid integer NOT NULL,
    started_at timestamptz NOT NULL
);
CREATE INDEX ringmaster_processes_started_at_idx ON ringmaster_processes (started_at);

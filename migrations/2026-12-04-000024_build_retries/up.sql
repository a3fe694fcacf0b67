-- A build that fails on its node is tried again on an alternate picked at its first scheduling,
-- as Nova's [scheduler] max_attempts does (issue 31). One row per build still being tried:
-- the alternates (Ironic node uuids, best first), the attempts made and allowed, the nodes tried
-- and what each failed attempt said. Gone when the build ends (active or error).
CREATE TABLE instance_builds (
    instance_uuid   UUID PRIMARY KEY,
    alternates      UUID[] NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 1,
    max_attempts    INTEGER NOT NULL,
    failures        TEXT[] NOT NULL DEFAULT '{}',
    tried           TEXT[] NOT NULL DEFAULT '{}',
    placement_class VARCHAR(255) NOT NULL,
    pci_devices     INTEGER NOT NULL DEFAULT 0,
    created_at      TIMESTAMPTZ NOT NULL,
    CONSTRAINT instance_builds_attempts_check CHECK (attempts >= 1 AND attempts <= max_attempts)
);

-- Builds that failed on each node since its last success (Nova's failed_builds, per node here):
-- such a node is not offered during --build-failure-cooldown after its last failure, then after
-- every node without failures (Nova's BuildFailureWeigher). A build that succeeds removes it.
CREATE TABLE node_build_failures (
    node           UUID PRIMARY KEY,
    failed_builds  INTEGER NOT NULL,
    last_failed_at TIMESTAMPTZ NOT NULL,
    last_error     TEXT
);

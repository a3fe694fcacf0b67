-- The Compute API (issue 26): flavors as Nova's API database keeps them (hard-deleted, as
-- there), and what a server booted through it carries on its instance row: image, key pair,
-- user data, config drive, the flavor it was booted with (a JSON snapshot, as Nova keeps it
-- in instance_extra), its availability zone. The shadow twin gets the same columns in the
-- same order (the archiver's INSERT … SELECT *).

CREATE TABLE flavors (
    id           BIGSERIAL PRIMARY KEY,
    flavorid     VARCHAR(255) NOT NULL,
    name         VARCHAR(255) NOT NULL,
    memory_mb    INTEGER NOT NULL,
    vcpus        INTEGER NOT NULL,
    root_gb      INTEGER NOT NULL,
    ephemeral_gb INTEGER NOT NULL DEFAULT 0,
    swap         INTEGER NOT NULL DEFAULT 0,
    rxtx_factor  DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    disabled     BOOLEAN NOT NULL DEFAULT FALSE,
    is_public    BOOLEAN NOT NULL DEFAULT TRUE,
    description  TEXT,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at   TIMESTAMPTZ,
    CONSTRAINT flavors_flavorid_key UNIQUE (flavorid),
    CONSTRAINT flavors_name_key UNIQUE (name)
);

CREATE TABLE flavor_extra_specs (
    flavor_id  BIGINT NOT NULL REFERENCES flavors (id) ON DELETE CASCADE,
    key        VARCHAR(255) NOT NULL,
    value      VARCHAR(255) NOT NULL,
    PRIMARY KEY (flavor_id, key)
);

CREATE TABLE flavor_projects (
    flavor_id  BIGINT NOT NULL REFERENCES flavors (id) ON DELETE CASCADE,
    project_id VARCHAR(255) NOT NULL,
    PRIMARY KEY (flavor_id, project_id)
);

-- Key pairs, per user as in Nova; the public key goes to the machine in its config drive.
CREATE TABLE key_pairs (
    id          BIGSERIAL PRIMARY KEY,
    name        VARCHAR(255) NOT NULL,
    user_id     VARCHAR(255) NOT NULL,
    fingerprint VARCHAR(255) NOT NULL,
    public_key  TEXT NOT NULL,
    type        VARCHAR(16) NOT NULL DEFAULT 'ssh',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT key_pairs_user_name_key UNIQUE (user_id, name)
);

ALTER TABLE instances
    ADD COLUMN image_ref VARCHAR(255),
    ADD COLUMN key_name VARCHAR(255),
    ADD COLUMN key_data TEXT,
    ADD COLUMN user_data TEXT,
    ADD COLUMN config_drive VARCHAR(255),
    ADD COLUMN availability_zone VARCHAR(255);
ALTER TABLE shadow_instances
    ADD COLUMN image_ref VARCHAR(255),
    ADD COLUMN key_name VARCHAR(255),
    ADD COLUMN key_data TEXT,
    ADD COLUMN user_data TEXT,
    ADD COLUMN config_drive VARCHAR(255),
    ADD COLUMN availability_zone VARCHAR(255);
CREATE INDEX instances_project_idx ON instances (project_id, created_at) WHERE deleted = 0;

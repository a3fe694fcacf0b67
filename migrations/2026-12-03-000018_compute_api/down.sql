DROP INDEX instances_project_idx;
ALTER TABLE shadow_instances
    DROP COLUMN availability_zone, DROP COLUMN config_drive, DROP COLUMN user_data,
    DROP COLUMN key_data, DROP COLUMN key_name, DROP COLUMN image_ref;
ALTER TABLE instances
    DROP COLUMN availability_zone, DROP COLUMN config_drive, DROP COLUMN user_data,
    DROP COLUMN key_data, DROP COLUMN key_name, DROP COLUMN image_ref;
DROP TABLE flavor_projects;
DROP TABLE flavor_extra_specs;
DROP TABLE flavors;
DROP TABLE key_pairs;

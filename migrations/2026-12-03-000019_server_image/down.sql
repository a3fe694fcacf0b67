ALTER TABLE shadow_instance_extra DROP COLUMN image;
ALTER TABLE instance_extra DROP COLUMN image;

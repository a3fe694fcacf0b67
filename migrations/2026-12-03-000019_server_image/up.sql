-- What a server's deploy asks Ironic for of its image (issue 26), resolved through the image
-- service when the server is created: image_source (the uuid, or a download URL), its checksum
-- and the image's required traits, as JSON. Nova keeps the image's properties in the
-- instance's system metadata; ringmaster keeps what the deploy needs next to the flavor.
-- The shadow twin gets the same column (the archiver's INSERT … SELECT *).
ALTER TABLE instance_extra ADD COLUMN image TEXT;
ALTER TABLE shadow_instance_extra ADD COLUMN image TEXT;

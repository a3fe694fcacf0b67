DROP TABLE block_device_mapping;
DROP TABLE instance_actions_events;
DROP TABLE instance_actions;
DROP TABLE instance_faults;
DROP TABLE instance_system_metadata;
DROP TABLE instance_extra;
DROP TABLE instances;

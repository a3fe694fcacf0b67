DROP TABLE ringmaster_servers;

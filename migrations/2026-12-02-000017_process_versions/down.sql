DROP TABLE ringmaster_processes;

DROP TRIGGER spawn_requests_notify ON spawn_requests;
DROP FUNCTION notify_spawn_requested();
DROP TABLE spawn_requests;

//! Running under systemd (issue 29): with `Type=notify` the process says READY=1 only once the
//! database is migrated and the listener answers, RELOADING=1 then READY=1 around a SIGHUP, and
//! STOPPING=1 when it stops; and every metric the shipped alerts use is one it serves.

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use crate::helpers::{Running, TempDir, TestDb, http, ringmaster};

fn receive(socket: &UnixDatagram) -> String {
    let mut buffer = [0u8; 256];
    let length = socket
        .recv(&mut buffer)
        .expect("a notification within the timeout");
    String::from_utf8_lossy(&buffer[..length]).into_owned()
}

#[test]
fn serve_tells_the_service_manager_when_it_is_ready_reloading_and_stopping() {
    let dir = TempDir::new("notify");
    let path = dir.path.join("notify.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let db = TestDb::empty();
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--hosts", "cmp-1"])
        .env("DATABASE_URL", db.url())
        .env("NOTIFY_SOCKET", &path);
    let mut serve = Running::spawn(command);
    assert_eq!(receive(&socket), "READY=1");
    // By READY=1 the migrations ran and the listener is bound.
    let address =
        crate::helpers::address_of(&serve.wait_for_stdout("listening on", Duration::from_secs(5)));
    assert_eq!(http(&address, "GET", "/healthz").0, 200);
    assert_eq!(http(&address, "GET", "/api/v1/hosts").0, 200);
    every_metric_the_alerts_name_is_served(&address);
    serve.signal(nix::sys::signal::Signal::SIGHUP);
    let reloading = receive(&socket);
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading}"
    );
    assert_eq!(receive(&socket), "READY=1");
    serve.interrupt();
    assert_eq!(receive(&socket), "STOPPING=1");
    let (code, _) = serve.wait_exit(Duration::from_secs(30));
    assert_eq!(code, Some(0));
}

/// The metric names `packaging/prometheus/ringmaster-alerts.yml` uses (a histogram's `_count`
/// and `_bucket` series by the histogram's name) are all in a scrape: an alert on a name the
/// process does not serve would never fire.
fn every_metric_the_alerts_name_is_served(address: &str) {
    let alerts = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("packaging/prometheus/ringmaster-alerts.yml"),
    )
    .unwrap();
    let (status, scrape) = http(address, "GET", "/metrics");
    assert_eq!(status, 200);
    let mut names: Vec<&str> = alerts
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| word.starts_with("ringmaster_"))
        .collect();
    names.sort();
    names.dedup();
    assert!(names.len() >= 9, "{names:?}");
    for name in names {
        let family = name.trim_end_matches("_count").trim_end_matches("_bucket");
        assert!(
            scrape.contains(&format!("# TYPE {family} ")),
            "{name} (alerts) is not served: {scrape}"
        );
    }
}

//! Floods of event streams (issue 25, items 7 and 8): memory comes back once a flood ends, and
//! SIGTERM ends every open event stream and the process exits at once, instead of waiting out
//! the server's shutdown timeout with its listener closed and its hosts still held.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::helpers::{TestDb, start_serve};

/// Streams opened before the stop: the process's default cap.
const STREAMS: usize = 256;

/// Opens an event stream over a socket of its own and reads until its first event arrives.
fn open_stream(address: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET /api/v1/events HTTP/1.1\r\nHost: {address}\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("retry: 2000") {
        let read = stream.read(&mut buffer).unwrap();
        assert!(read > 0, "the stream ended before its first event");
        seen.extend_from_slice(&buffer[..read]);
    }
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));
    stream
}

/// Says whether the server ended `stream` (end of file, or the connection reset) rather than
/// leaving it open.
fn ended(mut stream: TcpStream) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(error) => {
                return !matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

#[test]
fn a_stop_with_256_open_event_streams_ends_them_and_exits_at_once() {
    let db = TestDb::new();
    let (mut serve, address) = start_serve(
        db.url(),
        &[
            "--hosts",
            "cmp-1",
            "--max-event-streams",
            "256",
            "--max-event-streams-per-client",
            "256",
        ],
        "info",
    );
    let streams: Vec<TcpStream> = (0..STREAMS).map(|_| open_stream(&address)).collect();

    let asked = Instant::now();
    serve.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, stderr) = serve.wait_exit(Duration::from_secs(60));
    let took = asked.elapsed();
    assert_eq!(code, Some(0), "{stderr:#?}");
    // Before, the server waited its 30 s shutdown timeout for the streams; the target (2 s)
    // is measured in the closing note of issue 25, this bound leaves room for a loaded machine.
    assert!(took < Duration::from_secs(5), "the stop took {took:?}");
    eprintln!("stopped with {STREAMS} open event streams in {took:?}");
    let open = streams
        .into_iter()
        .filter(|stream| !ended(stream.try_clone().unwrap()));
    assert_eq!(open.count(), 0, "every stream ended");
    // The hosts were released last: after the server stopped.
    let stopping = stderr
        .iter()
        .position(|line| line.contains("stopping: ending event streams"))
        .expect("the stop is logged");
    let released = stderr
        .iter()
        .position(|line| line.contains("compute host cmp-1 stopped"))
        .expect("the host's stop is logged");
    assert!(stopping < released, "{stderr:#?}");
}

/// The resident memory of process `pid`, in kB.
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Within 60 s of the end of three floods of 2,000 event streams (16 served, the rest
/// refused), the process is back within 1.5x of its memory at rest; before, glibc's arenas
/// kept it at 2.5x.
/// The measured figures (and a flood of 10,300 connections) are in the closing note of
/// issue 25 (`scripts/bench-floods.py`).
#[test]
fn memory_comes_back_after_a_flood_of_event_streams() {
    let db = TestDb::new();
    let (serve, address) = start_serve(db.url(), &["--hosts", "cmp-1"], "warn");
    let pid = serve.child.id();
    for _ in 0..50 {
        crate::helpers::http(&address, "GET", "/api/v1/hosts");
    }
    std::thread::sleep(Duration::from_secs(2));
    let rest = rss_kb(pid);
    for _ in 0..3 {
        stream_flood(&address);
    }
    let peak = rss_kb(pid);
    let started = Instant::now();
    while rss_kb(pid) * 2 > rest * 3 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
    }
    let after = rss_kb(pid);
    eprintln!(
        "RSS {rest} kB at rest, {peak} kB after the flood, {after} kB {:.1} s later",
        started.elapsed().as_secs_f64()
    );
    assert!(
        after * 2 <= rest * 3,
        "still {after} kB 60 s after the flood ({rest} kB at rest)"
    );
}

/// 2,000 event streams from one address at once, each held 2 s.
fn stream_flood(address: &str) {
    let clients: Vec<_> = (0..2000)
        .map(|_| {
            let address = address.to_owned();
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    let Ok(mut stream) = TcpStream::connect(&address) else {
                        return;
                    };
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                    let _ = write!(
                        stream,
                        "GET /api/v1/events HTTP/1.1\r\nHost: {address}\r\n\r\n"
                    );
                    let _ = stream.read(&mut [0u8; 4096]);
                    std::thread::sleep(Duration::from_secs(2));
                })
                .unwrap()
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
}

/// The first stream of a process starts its event listener; whatever was written before the
/// listener was up never reaches it as a notification (a page that read the ring before the
/// first claims committed kept showing no owner). Once listening, every stream is told to read
/// everything once: a `resync` event.
#[test]
fn the_first_stream_is_told_to_read_everything_once_the_listener_is_up() {
    let db = TestDb::new();
    let (_serve, address) = start_serve(db.url(), &["--hosts", "cmp-1"], "info");
    let mut stream = open_stream(&address);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("event: resync") {
        assert!(
            Instant::now() < deadline,
            "no resync event: {}",
            String::from_utf8_lossy(&seen)
        );
        let read = stream.read(&mut buffer).unwrap();
        assert!(read > 0, "the stream ended before a resync event");
        seen.extend_from_slice(&buffer[..read]);
    }
}

//! The service manager's readiness protocol (sd_notify): when systemd runs the process with
//! `Type=notify` it names a datagram socket in `NOTIFY_SOCKET`; the process says `READY=1` once
//! the database is up, migrated and the listener bound, `RELOADING=1` … `READY=1` around a
//! SIGHUP, and `STOPPING=1` when it stops. Without `NOTIFY_SOCKET` every call does nothing.

use std::os::unix::net::UnixDatagram;

/// Sends `state` (lines such as `READY=1`) to the service manager, if there is one; a failure
/// is logged once per call and otherwise ignored (the service still runs).
pub fn notify(state: &str) {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(error) = send(&socket, state) {
        log::warn!(
            "cannot tell the service manager {state:?} through {}: {error}",
            socket.to_string_lossy()
        );
    }
}

fn send(socket: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    let sender = UnixDatagram::unbound()?;
    let bytes = socket.as_encoded_bytes();
    if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        sender.send_to_addr(state.as_bytes(), &address)?;
    } else {
        sender.send_to(state.as_bytes(), socket)?;
    }
    Ok(())
}

/// The monotonic clock in microseconds, as `RELOADING=1` wants it beside (MONOTONIC_USEC).
fn monotonic_usec() -> Option<u128> {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
    let seconds = u128::try_from(now.tv_sec()).ok()?;
    let nanoseconds = u128::try_from(now.tv_nsec()).ok()?;
    Some(seconds * 1_000_000 + nanoseconds / 1_000)
}

/// Says a reload (SIGHUP) has begun.
pub fn reloading() {
    match monotonic_usec() {
        Some(usec) => notify(&format!("RELOADING=1\nMONOTONIC_USEC={usec}")),
        None => notify("RELOADING=1"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reaches_a_socket_named_by_path() {
        let dir = std::env::temp_dir().join(format!("ringmaster-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let receiver = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), "READY=1").unwrap();
        let mut buffer = [0u8; 64];
        let length = receiver.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..length], b"READY=1");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_state_reaches_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("ringmaster-notify-test-{}", std::process::id());
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let receiver = UnixDatagram::bind_addr(&address).unwrap();
        send(std::ffi::OsStr::new(&format!("@{name}")), "STOPPING=1").unwrap();
        let mut buffer = [0u8; 64];
        let length = receiver.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..length], b"STOPPING=1");
        assert!(monotonic_usec().is_some());
    }
}

//! A TCP front for a PostgreSQL server's unix socket that a test can silence: while silent it
//! accepts no connection and forwards no byte (as a host whose packets are dropped), and
//! afterwards it forwards what it held.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The proxy; it runs until the test process ends.
pub struct SilenceableProxy {
    pub port: u16,
    silent: Arc<AtomicBool>,
}

impl SilenceableProxy {
    /// Listens on a random loopback port and forwards each connection to `socket`.
    pub fn start(socket: PathBuf) -> SilenceableProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let silent = Arc::new(AtomicBool::new(false));
        let accepting = silent.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                while accepting.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let Ok(client) = client else { continue };
                let Ok(server) = UnixStream::connect(&socket) else {
                    continue;
                };
                let (client_read, server_write) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                pump(client_read, server_write, accepting.clone(), |to| {
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
                pump(server, client, accepting.clone(), |to| {
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        SilenceableProxy { port, silent }
    }

    /// Stops (`true`) or resumes forwarding.
    pub fn silence(&self, silent: bool) {
        self.silent.store(silent, Ordering::SeqCst);
    }

    /// A URL of database `database` through the proxy.
    pub fn url(&self, database: &str) -> String {
        format!("postgresql://postgres@127.0.0.1:{}/{database}", self.port)
    }
}

fn wait_while(silent: &AtomicBool) {
    while silent.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Copies `from` to `to` (holding bytes while silent), then `close`s `to`.
fn pump<R, W>(mut from: R, mut to: W, silent: Arc<AtomicBool>, close: fn(&W))
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    std::thread::spawn(move || {
        let mut buffer = [0u8; 16384];
        while let Ok(read) = from.read(&mut buffer) {
            if read == 0 {
                break;
            }
            wait_while(&silent);
            if to.write_all(&buffer[..read]).is_err() {
                break;
            }
        }
        close(&to);
    });
}

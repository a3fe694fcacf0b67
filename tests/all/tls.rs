//! TLS (issue 27): the HTTPS listener — served with a test CA's certificate, refused to a
//! client that trusts another CA, `Strict-Transport-Security` on its answers, the certificate
//! rotated by SIGHUP for new connections while an open one goes on, a bad pair refused at
//! start; trusted proxies; and ringmaster's own https client (a private CA, a client
//! certificate, insecure).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ringmaster::tls::client::{ClientTls, ClientTlsSettings};

use crate::helpers::{
    Issued, Running, TempDir, TestApp, TestCa, TestDb, address_of, assert_one_error_line,
    ringmaster, run_to_end,
};

/// A blocking TLS connection trusting only `ca`, kept open across requests.
struct Connection {
    stream: rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
}

impl Connection {
    fn open(address: &str, ca: &Path) -> Connection {
        let mut roots = rustls::RootCertStore::empty();
        let pem = std::fs::read(ca).unwrap();
        use rustls::pki_types::pem::PemObject;
        for certificate in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
            roots.add(certificate.unwrap()).unwrap();
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let socket = TcpStream::connect(address).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Connection {
            stream: rustls::StreamOwned::new(connection, socket),
        }
    }

    /// Sends `GET path` (keep-alive) and returns the status line and the head, lower-cased.
    fn get(&mut self, path: &str) -> String {
        write!(
            self.stream,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n"
        )
        .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            self.stream.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .map_or(0, |value| value.trim().parse().unwrap());
        let mut body = vec![0u8; length];
        self.stream.read_exact(&mut body).unwrap();
        head
    }

    /// The certificate the server presented.
    fn peer_certificate(&self) -> Vec<u8> {
        self.stream.conn.peer_certificates().unwrap()[0].to_vec()
    }
}

fn client_trusting(cafile: Option<&Path>) -> reqwest::Client {
    ClientTls::load(ClientTlsSettings {
        cafile: cafile.map(Path::to_owned),
        ..ClientTlsSettings::default()
    })
    .unwrap()
    .http_client(Duration::from_secs(10))
    .unwrap()
}

fn serve_tls(db: &TestDb, cert: &Path, key: &Path) -> (Running, String) {
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "127.0.0.1:0", "--tls-cert"])
        .arg(cert)
        .arg("--tls-key")
        .arg(key)
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "info");
    let mut serve = Running::spawn(command);
    let line = serve.wait_for_stdout("listening on https://", Duration::from_secs(60));
    (serve, address_of(&line))
}

/// The listener speaks only TLS with the configured certificate; a client of the same CA gets
/// answers with HSTS, one that trusts another CA (or the system's store) is refused, plain
/// HTTP gets no answer. SIGHUP with a new certificate: a new connection sees the new one, an
/// open connection is not dropped.
#[actix_web::test]
async fn the_listener_serves_https_and_rotates_its_certificate_on_sighup() {
    let db = TestDb::new();
    let dir = TempDir::new("tls-listener");
    let ca = TestCa::new("ringmaster test CA");
    let ca_file = ca.write_ca(&dir.path, "ca.pem");
    let first = ca.issue(&dir.path, "server", &["127.0.0.1", "localhost"]);
    let (mut serve, address) = serve_tls(&db, &first.cert, &first.key);

    let mut open = Connection::open(&address, &ca_file);
    let head = open.get("/healthz");
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(
        head.contains("strict-transport-security: max-age="),
        "HSTS on a TLS answer: {head}"
    );
    assert_eq!(open.peer_certificate(), first.der);

    let trusted = client_trusting(Some(&ca_file));
    let answer = trusted
        .get(format!("https://{address}/readyz"))
        .send()
        .await
        .expect("a client of the test CA gets through");
    assert_eq!(answer.status(), 200);

    only_a_client_of_its_ca_gets_an_answer(&dir, &address).await;

    // The open connection is used again just before the rotation, so that the server's
    // keep-alive timeout (5 s) cannot be what closes it on a busy machine.
    assert!(open.get("/healthz").starts_with("http/1.1 200"));
    // Rotate: the new pair replaces the files (renamed in, as a deployment tool does).
    let second = ca.issue(&dir.path, "rotated", &["127.0.0.1"]);
    std::fs::rename(&second.cert, &first.cert).unwrap();
    std::fs::rename(&second.key, &first.key).unwrap();
    serve.signal(nix::sys::signal::Signal::SIGHUP);
    serve.wait_for_stderr(
        "certificates and CA files read again",
        Duration::from_secs(10),
    );
    let mut fresh = Connection::open(&address, &ca_file);
    assert!(fresh.get("/healthz").starts_with("http/1.1 200"));
    assert_eq!(
        fresh.peer_certificate(),
        second.der,
        "a new connection sees the new certificate"
    );
    let head = open.get("/healthz");
    assert!(
        head.starts_with("http/1.1 200"),
        "the open connection goes on: {head}"
    );
    assert_eq!(open.peer_certificate(), first.der);

    // A bad file at the next SIGHUP keeps the certificate in use.
    std::fs::write(&first.cert, "not a certificate\n").unwrap();
    serve.signal(nix::sys::signal::Signal::SIGHUP);
    serve.wait_for_stderr(
        "keeping the listener's certificate",
        Duration::from_secs(10),
    );
    let mut after = Connection::open(&address, &ca_file);
    assert!(after.get("/healthz").starts_with("http/1.1 200"));
    assert_eq!(after.peer_certificate(), second.der);
    serve.interrupt();
    serve.wait_exit(Duration::from_secs(30));
}

/// A client trusting another CA, or the system's store, is refused; plain HTTP gets no answer.
async fn only_a_client_of_its_ca_gets_an_answer(dir: &TempDir, address: &str) {
    let other_ca = TestCa::new("another CA");
    let other_file = other_ca.write_ca(&dir.path, "other-ca.pem");
    for (label, client) in [
        ("another CA", client_trusting(Some(&other_file))),
        ("the system's store", client_trusting(None)),
    ] {
        let refused = client
            .get(format!("https://{address}/healthz"))
            .send()
            .await;
        assert!(refused.is_err(), "a client trusting {label} is refused");
    }
    let mut plain = TcpStream::connect(address).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The listener may close the connection before the request is written (a broken pipe):
    // that too is no answer.
    let _ = write!(plain, "GET /healthz HTTP/1.0\r\nHost: {address}\r\n\r\n");
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !String::from_utf8_lossy(&answer).contains("200 OK"),
        "plain HTTP gets no answer from the TLS listener"
    );
}

/// A certificate that is not PEM, or a key that is not the certificate's: one error line
/// naming the flag, exit 1, before the database is touched.
#[test]
fn a_bad_or_mismatched_pair_stops_the_start_with_one_line() {
    let dir = TempDir::new("tls-bad-pair");
    let ca = TestCa::new("ringmaster test CA");
    let one = ca.issue(&dir.path, "one", &["127.0.0.1"]);
    let two = ca.issue(&dir.path, "two", &["127.0.0.1"]);
    let junk = dir.path.join("junk.pem");
    std::fs::write(&junk, "hello\n").unwrap();
    let cases = [
        (&one.cert, &two.key, "are not a pair"),
        (&junk, &one.key, "--tls-cert"),
        (&one.cert, &junk, "--tls-key"),
    ];
    for (cert, key, needle) in cases {
        let (code, _, stderr) = run_to_end(
            ringmaster()
                .args(["serve", "--bind", "127.0.0.1:0", "--tls-cert"])
                .arg(cert)
                .arg("--tls-key")
                .arg(key)
                .env("DATABASE_URL", "postgres://nobody@127.0.0.1:9/none"),
        );
        assert_eq!(code, Some(1), "{stderr}");
        let lines: Vec<String> = stderr.lines().map(str::to_owned).collect();
        assert_one_error_line(&lines, needle);
    }
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .args(["serve", "--bind", "127.0.0.1:0", "--tls-cert"])
            .arg(&one.cert)
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:9/none"),
    );
    assert_eq!(code, Some(2), "--tls-cert needs --tls-key: {stderr}");
    assert!(stderr.contains("--tls-key"), "{stderr}");
}

/// Behind a TLS-terminating proxy: from a trusted proxy, `X-Forwarded-Proto: https` makes the
/// answer carry HSTS and the version document's links say https; from anyone else the header
/// is ignored.
#[actix_web::test]
async fn forwarded_https_counts_only_from_trusted_proxies() {
    for (trusted, expected) in [(true, "https"), (false, "http")] {
        let app = TestApp::spawn_configured(move |config| {
            if trusted {
                config.access.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
            }
            config.admin_token = ringmaster::config::AdminToken::new("hsts-token");
        })
        .await;
        let response = app
            .client
            .get(app.url("/compute"))
            .header("X-Forwarded-Proto", "https")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers().contains_key("strict-transport-security"),
            trusted,
            "HSTS only when a trusted proxy says https"
        );
        let body: serde_json::Value = response.json().await.unwrap();
        let link = body["versions"][0]["links"][0]["href"].as_str().unwrap();
        assert!(link.starts_with(&format!("{expected}://")), "{link}");
        let forwarded = app
            .client
            .get(app.url("/compute"))
            .header("Forwarded", "for=192.0.2.1;proto=https")
            .send()
            .await
            .unwrap();
        assert_eq!(
            forwarded
                .headers()
                .contains_key("strict-transport-security"),
            trusted
        );
        // A refusal (the admin token's 401) carries it too.
        let refused = app
            .client
            .get(app.url("/api/v1/hosts"))
            .header("X-Forwarded-Proto", "https")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
        assert_eq!(
            refused.headers().contains_key("strict-transport-security"),
            trusted
        );
    }
}

/// ringmaster's own https client (Ironic's, Keystone's): a private CA file, a client
/// certificate the server requires, `insecure`; a server outside the CA is refused.
#[actix_web::test]
async fn the_https_client_trusts_its_ca_file_and_sends_its_certificate() {
    let dir = TempDir::new("tls-client");
    let ca = TestCa::new("ironic CA");
    let ca_file = ca.write_ca(&dir.path, "ca.pem");
    let server = ca.issue(&dir.path, "ironic", &["127.0.0.1"]);
    let client = ca.issue(&dir.path, "ringmaster", &[]);

    let config = server_requiring_a_client_certificate(&ca_file, &server);
    let (handle, url) = crate::helpers::serve_https(config);

    let settings = |cafile: bool, client_cert: bool, insecure: bool| ClientTlsSettings {
        cafile: cafile.then(|| ca_file.clone()),
        client_cert: client_cert.then(|| (client.cert.clone(), client.key.clone())),
        insecure,
        ..ClientTlsSettings::default()
    };
    let ask = |settings: ClientTlsSettings| {
        let url = url.clone();
        async move {
            let tls = ClientTls::load(settings).unwrap();
            tls.http_client(Duration::from_secs(10))
                .unwrap()
                .get(&url)
                .send()
                .await
                .map(|response| response.status().as_u16())
        }
    };
    assert_eq!(ask(settings(true, true, false)).await.ok(), Some(200));
    assert!(
        ask(settings(true, false, false)).await.is_err(),
        "no client certificate: the server refuses"
    );
    assert!(
        ask(settings(false, true, false)).await.is_err(),
        "the system's store does not know the private CA"
    );
    assert_eq!(
        ask(settings(false, true, true)).await.ok(),
        Some(200),
        "insecure checks nothing"
    );

    a_replaced_ca_file_is_trusted_after_a_reload(&dir, &ca_file, &client, &url).await;
    handle.stop(false).await;
}

/// A server configuration that requires a client certificate of the CA of `ca_file`.
fn server_requiring_a_client_certificate(
    ca_file: &std::path::Path,
    server: &Issued,
) -> rustls::ServerConfig {
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_file(ca_file).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            rustls::pki_types::CertificateDer::pem_file_iter(&server.cert)
                .unwrap()
                .map(Result::unwrap)
                .collect(),
            rustls::pki_types::PrivateKeyDer::from_pem_file(&server.key).unwrap(),
        )
        .unwrap()
}

/// SIGHUP's reload: a CA file replaced is trusted by the same client from then on.
async fn a_replaced_ca_file_is_trusted_after_a_reload(
    dir: &TempDir,
    ca_file: &std::path::Path,
    client: &Issued,
    url: &str,
) {
    let rotating = dir.path.join("rotating-ca.pem");
    TestCa::new("old CA").write_ca(&dir.path, "rotating-ca.pem");
    let tls = ClientTls::load(ClientTlsSettings {
        cafile: Some(rotating.clone()),
        client_cert: Some((client.cert.clone(), client.key.clone())),
        ..ClientTlsSettings::default()
    })
    .unwrap();
    let http = tls.http_client(Duration::from_secs(10)).unwrap();
    assert!(
        http.get(url).send().await.is_err(),
        "the old CA does not know the server"
    );
    std::fs::copy(ca_file, &rotating).unwrap();
    tls.reload().unwrap();
    let answer = http
        .get(url)
        .send()
        .await
        .expect("the reloaded CA file is trusted");
    assert_eq!(answer.status(), 200);
}

/// A non-loopback bind without TLS is warned about, once.
#[test]
fn a_non_loopback_bind_without_tls_warns_once() {
    let db = TestDb::new();
    let dir = TempDir::new("tls-warn");
    let token = dir.path.join("admin-token");
    std::fs::write(&token, "warn-test-token\n").unwrap();
    let mut command = ringmaster();
    command
        .args(["serve", "--bind", "0.0.0.0:0", "--admin-token-file"])
        .arg(&token)
        .env("DATABASE_URL", db.url())
        .env("RUST_LOG", "warn");
    let mut serve = Running::spawn(command);
    serve.wait_for_stdout("listening on http://", Duration::from_secs(60));
    serve.interrupt();
    let (_, stderr) = serve.wait_exit(Duration::from_secs(30));
    let warnings = stderr
        .iter()
        .filter(|line| line.contains("without TLS: tokens and passwords cross the network"))
        .count();
    assert_eq!(warnings, 1, "{stderr:#?}");
}

//! TLS files and TLS to others (issue 44, item 9): a private key every user may read, a device
//! given as a key (`/dev/zero`) and an encrypted key each stop the start with one line naming
//! the flag and why (exit 1); an https server whose certificate is self-signed with `CA:TRUE`
//! (what `openssl req -x509` makes) is refused saying so and what to do, the error told with its
//! whole cause chain, while one self-signed with `CA:FALSE` and given as the CA file is trusted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use ringmaster::tls::client::{ClientTls, ClientTlsSettings};

use crate::helpers::{
    Issued, TempDir, TestCa, assert_one_error_line, ringmaster, run_to_end, self_signed,
    serve_https,
};

/// `serve` with `cert` and `key` against a database that is not there: the exit code and
/// stderr's lines.
fn serve_with(cert: &Path, key: &Path) -> (Option<i32>, Vec<String>) {
    let (code, _, stderr) = run_to_end(
        ringmaster()
            .args(["serve", "--bind", "127.0.0.1:0", "--tls-cert"])
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:9/none"),
    );
    (code, stderr.lines().map(str::to_owned).collect())
}

#[test]
fn a_key_others_may_read_a_device_or_an_encrypted_key_stops_the_start() {
    let dir = TempDir::new("tls-files");
    let ca = TestCa::new("ringmaster test CA");
    let pair = ca.issue(&dir.path, "server", &["127.0.0.1"]);
    let open = dir.path.join("open-key.pem");
    std::fs::copy(&pair.key, &open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let encrypted = dir.path.join("encrypted-key.pem");
    let made = Command::new("openssl")
        .args(["pkey", "-aes256", "-passout", "pass:secret", "-in"])
        .arg(&pair.key)
        .arg("-out")
        .arg(&encrypted)
        .status()
        .expect("openssl runs");
    assert!(made.success());
    std::fs::set_permissions(&encrypted, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (key, says) in [
        (open.as_path(), "is readable by every user"),
        (Path::new("/dev/zero"), "/dev/zero: is not a regular file"),
        (encrypted.as_path(), "is an encrypted private key"),
    ] {
        let (code, lines) = serve_with(&pair.cert, key);
        assert_eq!(code, Some(1), "{}: {lines:?}", key.display());
        assert_one_error_line(&lines, says);
        assert!(
            lines.iter().any(|line| line.contains("--tls-key")),
            "{lines:?}"
        );
    }
}

/// A server configuration presenting `served`, asking nothing of the client.
fn presenting(served: &Issued) -> rustls::ServerConfig {
    use rustls::pki_types::pem::PemObject;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(served.der.clone())],
            rustls::pki_types::PrivateKeyDer::from_pem_file(&served.key).unwrap(),
        )
        .unwrap()
}

#[actix_web::test]
async fn a_self_signed_ca_certificate_as_the_server_s_is_refused_saying_why() {
    let dir = TempDir::new("tls-self-signed");
    for is_ca in [true, false] {
        let stem = if is_ca { "ca-true" } else { "ca-false" };
        let served = self_signed(&dir.path, stem, &["127.0.0.1"], is_ca);
        let (handle, url) = serve_https(presenting(&served));
        let tls = ClientTls::load(ClientTlsSettings {
            cafile: Some(served.cert.clone()),
            ..ClientTlsSettings::default()
        })
        .unwrap();
        let client = tls.http_client(Duration::from_secs(10)).unwrap();
        let answer = client.get(&url).send().await;
        if is_ca {
            let error = answer.expect_err("a CA certificate as the server's is refused");
            let told = ringmaster::tls::with_causes(&error);
            assert!(told.starts_with("error sending request for url"), "{told}");
            assert!(
                told.contains("is a CA certificate (basic constraints CA:TRUE) used as a server")
                    && told.contains("issue a server certificate (CA:FALSE) from that CA"),
                "the cause chain says why and what to do: {told}"
            );
        } else {
            let answer = answer.expect("a self-signed CA:FALSE certificate, trusted, is taken");
            assert_eq!(answer.status(), 200);
        }
        handle.stop(false).await;
    }
}

//! TLS: the HTTPS listener's certificate (`server`) and the trust that ringmaster's
//! own clients of Ironic, Keystone and Glance place in the servers they call (`client`), both with
//! rustls on the `ring` provider, TLS 1.2 and 1.3 only. Certificates, keys and CA bundles are
//! PEM files, read again on SIGHUP: a rotation reaches new connections while open ones go on.

pub mod client;
pub mod server;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

/// Why a certificate, key or CA bundle cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{flag} {}: {reason}", path.display())]
    File {
        flag: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("{cert_flag} {} and {key_flag} {} are not a pair: {reason}", cert.display(), key.display())]
    NotAPair {
        cert_flag: &'static str,
        cert: PathBuf,
        key_flag: &'static str,
        key: PathBuf,
        reason: String,
    },
    #[error("TLS cannot be set up: {0}")]
    Setup(String),
}

/// Makes `ring` the process's default cryptography, for clients built without a `ClientTls`
/// (tools, tests); harmless when called again.
pub fn install_default_provider() {
    let _already = rustls::crypto::ring::default_provider().install_default();
}

/// The cryptography every TLS connection uses.
fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: std::sync::LazyLock<Arc<CryptoProvider>> =
        std::sync::LazyLock::new(|| Arc::new(rustls::crypto::ring::default_provider()));
    PROVIDER.clone()
}

/// The protocol versions spoken: TLS 1.3 and 1.2, nothing older.
const VERSIONS: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

/// The certificates of a PEM file (at least one).
fn read_certificates(
    flag: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let error = |reason: String| TlsError::File {
        flag,
        path: path.to_owned(),
        reason,
    };
    let bytes = read_pem_file(path).map_err(error)?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| error(format!("not a PEM certificate file ({source})")))?;
    if certificates.is_empty() {
        return Err(error("holds no PEM certificate".to_owned()));
    }
    Ok(certificates)
}

/// The private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
fn read_key(flag: &'static str, path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let error = |reason: String| TlsError::File {
        flag,
        path: path.to_owned(),
        reason,
    };
    let bytes = read_pem_file(path).map_err(error)?;
    if readable_by_everyone(path) {
        return Err(error(
            "is readable by every user of this machine; a private key must not be: \
             `chmod o-r` it (PostgreSQL and OpenSSH refuse such a key too)"
                .to_owned(),
        ));
    }
    if is_encrypted(&bytes) {
        return Err(error(
            "is an encrypted private key; ringmaster reads unencrypted keys only \
             (`openssl pkey -in KEY -out PLAIN` decrypts it; keep PLAIN at mode 0600)"
                .to_owned(),
        ));
    }
    PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|source| error(format!("holds no PEM private key ({source})")))
}

/// The largest certificate, key or CA file read: well above a system's CA bundle.
const MAX_PEM_FILE: u64 = 4 * 1024 * 1024;

/// A regular file of at most `MAX_PEM_FILE` bytes, read whole: a device (`/dev/zero`), a
/// directory or a larger file is refused without reading more than the limit.
fn read_pem_file(path: &Path) -> Result<Vec<u8>, String> {
    use crate::files::{Refusal, read_bounded};
    read_bounded(path, MAX_PEM_FILE).map_err(|refusal| match refusal {
        Refusal::Io(source) => source.to_string(),
        Refusal::NotRegular => "is not a regular file".to_owned(),
        Refusal::TooLarge => format!("is over {} MiB: not a PEM file", MAX_PEM_FILE / 1024 / 1024),
    })
}

/// Whether every user of the machine may read the file (its mode has `o+r`).
fn readable_by_everyone(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|metadata| metadata.permissions().mode() & 0o004 != 0)
}

/// Whether a PEM key is encrypted: PKCS#8's `ENCRYPTED PRIVATE KEY`, or OpenSSL's traditional
/// `Proc-Type: 4,ENCRYPTED` header.
fn is_encrypted(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        || text.contains("Proc-Type: 4,ENCRYPTED")
}

/// A certificate chain and the private key of its first certificate, checked to be a pair.
fn certified_key(
    (cert_flag, cert): (&'static str, &Path),
    (key_flag, key): (&'static str, &Path),
) -> Result<Arc<CertifiedKey>, TlsError> {
    let chain = read_certificates(cert_flag, cert)?;
    let private = read_key(key_flag, key)?;
    CertifiedKey::from_der(chain, private, &provider())
        .map(Arc::new)
        .map_err(|source| TlsError::NotAPair {
            cert_flag,
            cert: cert.to_owned(),
            key_flag,
            key: key.to_owned(),
            reason: source.to_string(),
        })
}

/// `error` and each of its causes, `: `-separated (`error sending request for url (…): client
/// error (Connect): invalid peer certificate: …`), as outgoing HTTP errors are told: a cause
/// whose text the message already holds is not said twice.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(current) = cause {
        let text = current.to_string();
        if !text.is_empty() && !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = current.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn private(path: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn a_key_others_may_read_a_device_or_an_encrypted_key_is_refused_saying_why() {
        let dir = std::env::temp_dir().join(format!("rm-tls-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let open = write(&dir, "open.pem", "-----BEGIN PRIVATE KEY-----\n");
        let error = read_key("--tls-key", &open).unwrap_err().to_string();
        assert!(error.contains("readable by every user"), "{error}");
        let encrypted = write(
            &dir,
            "encrypted.pem",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        );
        private(&encrypted);
        let error = read_key("--tls-key", &encrypted).unwrap_err().to_string();
        assert!(error.contains("is an encrypted private key"), "{error}");
        let traditional = write(
            &dir,
            "traditional.pem",
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n",
        );
        private(&traditional);
        let error = read_key("--tls-key", &traditional).unwrap_err().to_string();
        assert!(error.contains("is an encrypted private key"), "{error}");
        let error = read_key("--tls-key", Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert_eq!(error, "--tls-key /dev/zero: is not a regular file");
        let huge = dir.join("huge.pem");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_PEM_FILE + 1)
            .unwrap();
        let error = read_certificates("--tls-cert", &huge)
            .unwrap_err()
            .to_string();
        assert!(error.contains("is over 4 MiB"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn files_that_are_not_pem_are_named_with_their_flag() {
        let dir = std::env::temp_dir().join(format!("rm-tls-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = write(&dir, "empty.pem", "");
        let junk = write(&dir, "junk.pem", "hello\n");
        let error = read_certificates("--tls-cert", &empty)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("--tls-cert "), "{error}");
        assert!(error.contains("no PEM certificate"), "{error}");
        private(&junk);
        let error = read_key("--tls-key", &junk).unwrap_err().to_string();
        assert!(error.contains("no PEM private key"), "{error}");
        let missing = dir.join("missing.pem");
        let error = read_certificates("--tls-cert", &missing)
            .unwrap_err()
            .to_string();
        assert!(error.contains("missing.pem"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(test)]
mod cause_tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Outer(#[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("client error (Connect)")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn each_cause_is_told_once() {
        let root = std::io::Error::other("invalid peer certificate: UnknownIssuer");
        let error = Outer(Middle(root));
        assert_eq!(
            with_causes(&error),
            "error sending request: client error (Connect): invalid peer certificate: \
             UnknownIssuer"
        );
        let plain = std::io::Error::other("refused");
        assert_eq!(with_causes(&plain), "refused");
    }
}

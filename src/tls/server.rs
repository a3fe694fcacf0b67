//! The HTTPS listener's certificate: loaded at start (a bad or mismatched pair stops the start),
//! handed to each new connection by a resolver, and swapped on SIGHUP — a connection already
//! open keeps the certificate it was made with.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::TlsError;

/// `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// The listener's current certificate and where it is read from.
#[derive(Debug)]
pub struct ServerTls {
    files: TlsFiles,
    current: RwLock<Arc<CertifiedKey>>,
}

impl ServerTls {
    /// Reads the pair; refuses files that are not PEM or not a pair.
    pub fn load(files: TlsFiles) -> Result<Arc<ServerTls>, TlsError> {
        let key = read(&files)?;
        Ok(Arc::new(ServerTls {
            files,
            current: RwLock::new(key),
        }))
    }

    /// Reads the pair again; on an error the certificate in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let key = read(&self.files)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = key;
        Ok(())
    }

    /// The rustls configuration of the listener: TLS 1.2 and 1.3, this certificate.
    pub fn config(self: &Arc<ServerTls>) -> Result<rustls::ServerConfig, TlsError> {
        Ok(
            rustls::ServerConfig::builder_with_provider(super::provider())
                .with_protocol_versions(super::VERSIONS)
                .map_err(|error| TlsError::Setup(error.to_string()))?
                .with_no_client_auth()
                .with_cert_resolver(Arc::new(Resolver(self.clone()))),
        )
    }
}

fn read(files: &TlsFiles) -> Result<Arc<CertifiedKey>, TlsError> {
    super::certified_key(("--tls-cert", &files.cert), ("--tls-key", &files.key))
}

/// Gives every handshake the certificate current at that moment.
#[derive(Debug)]
struct Resolver(Arc<ServerTls>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.0
                .current
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

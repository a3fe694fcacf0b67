//! The trust ringmaster's own HTTPS clients (of Ironic, Keystone and Glance) place in the
//! servers they call, as Nova's `[ironic] cafile/certfile/keyfile/insecure` and keystoneauth's
//! `cafile/insecure` set it: the operating system's trust store by default, only the CAs of a
//! CA file when one is given, a client certificate when asked for, no check at all when
//! insecure. The CA file and the client certificate are read again on SIGHUP; the clients built
//! from a `ClientTls` see the new ones on their next connection.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rustls::DigitallySignedStruct;
use rustls::client::ResolvesClientCert;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;

use super::TlsError;

/// Which service's flags a trust setting came from (for the errors that name them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Service {
    #[default]
    Ironic,
    Keystone,
}

impl Service {
    fn flag(self, what: &str) -> &'static str {
        match (self, what) {
            (Service::Ironic, "cafile") => "--ironic-cafile",
            (Service::Ironic, "certfile") => "--ironic-certfile",
            (Service::Ironic, _) => "--ironic-keyfile",
            (Service::Keystone, _) => "--keystone-cafile",
        }
    }
}

/// How one service's servers are trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTlsSettings {
    pub service: Service,
    /// Only these CAs are trusted (else the operating system's trust store).
    pub cafile: Option<PathBuf>,
    /// The client certificate and its key, when the server asks for one.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// No certificate is checked (a warning at start says so).
    pub insecure: bool,
}

/// The current trust and client certificate of one service's clients.
#[derive(Debug)]
pub struct ClientTls {
    settings: ClientTlsSettings,
    trust: RwLock<Arc<Trust>>,
    identity: RwLock<Option<Arc<CertifiedKey>>>,
}

impl ClientTls {
    /// Reads the CA file (or the system's trust store) and the client certificate.
    pub fn load(settings: ClientTlsSettings) -> Result<Arc<ClientTls>, TlsError> {
        let trust = trust(&settings)?;
        let identity = identity(&settings)?;
        Ok(Arc::new(ClientTls {
            settings,
            trust: RwLock::new(trust),
            identity: RwLock::new(identity),
        }))
    }

    /// The system's trust store, no client certificate.
    pub fn system() -> Arc<ClientTls> {
        let settings = ClientTlsSettings::default();
        let trust =
            trust(&settings).unwrap_or_else(|error| Arc::new(Trust::Nothing(error.to_string())));
        Arc::new(ClientTls {
            settings,
            trust: RwLock::new(trust),
            identity: RwLock::new(None),
        })
    }

    /// Reads the CA file and the client certificate again; on an error the ones in use stay.
    pub fn reload(&self) -> Result<(), TlsError> {
        let trust = trust(&self.settings)?;
        let identity = identity(&self.settings)?;
        *self.trust.write().unwrap_or_else(PoisonError::into_inner) = trust;
        *self
            .identity
            .write()
            .unwrap_or_else(PoisonError::into_inner) = identity;
        Ok(())
    }

    /// Whether certificates are not checked at all.
    pub fn insecure(&self) -> bool {
        self.settings.insecure
    }

    /// An HTTP client (http and https) whose requests time out after `timeout`.
    pub fn http_client(
        self: &Arc<ClientTls>,
        timeout: Duration,
    ) -> Result<reqwest::Client, TlsError> {
        let config = rustls::ClientConfig::builder_with_provider(super::provider())
            .with_protocol_versions(super::VERSIONS)
            .map_err(|error| TlsError::Setup(error.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Current(self.clone())))
            .with_client_cert_resolver(Arc::new(Current(self.clone())));
        reqwest::Client::builder()
            .timeout(timeout)
            .tls_backend_preconfigured(config)
            .build()
            .map_err(|error| TlsError::Setup(error.to_string()))
    }

    fn current_trust(&self) -> Arc<Trust> {
        self.trust
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What a server's certificate is checked against.
#[derive(Debug)]
enum Trust {
    Roots(Arc<WebPkiServerVerifier>),
    /// No CA is trusted: every https server is refused with this reason.
    Nothing(String),
    /// `--…-insecure`.
    Anything,
}

fn trust(settings: &ClientTlsSettings) -> Result<Arc<Trust>, TlsError> {
    if settings.insecure {
        return Ok(Arc::new(Trust::Anything));
    }
    let mut roots = rustls::RootCertStore::empty();
    match &settings.cafile {
        Some(path) => {
            let flag = settings.service.flag("cafile");
            for certificate in super::read_certificates(flag, path)? {
                roots.add(certificate).map_err(|error| TlsError::File {
                    flag,
                    path: path.clone(),
                    reason: format!("not a CA certificate ({error})"),
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    if roots.is_empty() {
        return Ok(Arc::new(Trust::Nothing(format!(
            "no CA certificate is trusted: the system trust store is empty; give {}",
            settings.service.flag("cafile")
        ))));
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), super::provider())
        .build()
        .map(|verifier| Arc::new(Trust::Roots(verifier)))
        .map_err(|error| TlsError::Setup(error.to_string()))
}

fn identity(settings: &ClientTlsSettings) -> Result<Option<Arc<CertifiedKey>>, TlsError> {
    let Some((cert, key)) = &settings.client_cert else {
        return Ok(None);
    };
    let flags = (
        settings.service.flag("certfile"),
        settings.service.flag("keyfile"),
    );
    super::certified_key((flags.0, cert), (flags.1, key)).map(Some)
}

/// Checks with the trust current at each handshake, sends the current client certificate.
#[derive(Debug)]
struct Current(Arc<ClientTls>);

impl ServerCertVerifier for Current {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &*self.0.current_trust() {
            Trust::Roots(verifier) => verifier
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
                .map_err(explained),
            Trust::Nothing(reason) => Err(rustls::Error::General(reason.clone())),
            Trust::Anything => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        with_our_algorithms(rustls::crypto::verify_tls12_signature, (message, cert, dss))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        with_our_algorithms(rustls::crypto::verify_tls13_signature, (message, cert, dss))
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        super::provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// What webpki's `CaUsedAsEndEntity` means and what to do, in place of its bare name: the
/// server presents a CA certificate (`CA:TRUE`, what `openssl req -x509` makes unless told
/// otherwise) as its own, which RFC 5280 clients refuse even when that CA is trusted.
const CA_AS_SERVER: &str = "the server's certificate is a CA certificate (basic constraints \
    CA:TRUE) used as a server certificate, which ringmaster refuses even when it is the CA file \
    itself; issue a server certificate (CA:FALSE) from that CA and give the CA as the CA file";

/// A refusal of the server's certificate, told so that it says what to do where webpki's
/// own words do not.
fn explained(error: rustls::Error) -> rustls::Error {
    if let rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) = &error
        && matches!(
            other.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        )
    {
        return rustls::Error::General(CA_AS_SERVER.to_owned());
    }
    error
}

/// A signature `check` of the handshake, with this build's signature algorithms.
fn with_our_algorithms(
    check: fn(
        &[u8],
        &CertificateDer<'_>,
        &DigitallySignedStruct,
        &rustls::crypto::WebPkiSupportedAlgorithms,
    ) -> Result<HandshakeSignatureValid, rustls::Error>,
    (message, cert, dss): (&[u8], &CertificateDer<'_>, &DigitallySignedStruct),
) -> Result<HandshakeSignatureValid, rustls::Error> {
    check(
        message,
        cert,
        dss,
        &super::provider().signature_verification_algorithms,
    )
}

impl ResolvesClientCert for Current {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        self.0
            .identity
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn has_certs(&self) -> bool {
        self.0
            .identity
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

//! A test certificate authority (rcgen): a CA of its own per test, server and client
//! certificates for loopback, written as PEM files into a folder of the test's.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// A CA that signs certificates for one test.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key, as PEM files (and the certificate's DER, to recognise it).
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub der: Vec<u8>,
}

impl TestCa {
    /// A new CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let mut subject = DistinguishedName::new();
        subject.push(DnType::CommonName, name);
        params.distinguished_name = subject;
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        TestCa { issuer }
    }

    /// Writes the CA's certificate to `dir/file`.
    pub fn write_ca(&self, dir: &Path, file: &str) -> PathBuf {
        let path = dir.join(file);
        std::fs::write(&path, self.issuer.pem()).unwrap();
        path
    }

    /// Issues a certificate for `names` (DNS names or IP addresses; none for a client) as
    /// `dir/stem.pem` and `dir/stem-key.pem`.
    pub fn issue(&self, dir: &Path, stem: &str, names: &[&str]) -> Issued {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        let mut subject = DistinguishedName::new();
        subject.push(DnType::CommonName, stem);
        params.distinguished_name = subject;
        let key = KeyPair::generate().unwrap();
        let certificate = params.signed_by(&key, &self.issuer).unwrap();
        let cert = dir.join(format!("{stem}.pem"));
        let key_path = dir.join(format!("{stem}-key.pem"));
        std::fs::write(&cert, certificate.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        // Readable by its owner only, as a private key must be (others may not read it).
        let owner_only = std::os::unix::fs::PermissionsExt::from_mode(0o600);
        std::fs::set_permissions(&key_path, owner_only).unwrap();
        Issued {
            cert,
            key: key_path,
            der: certificate.der().to_vec(),
        }
    }
}

/// A certificate for `names` signed by its own key, as `openssl req -x509` makes one:
/// `CA:TRUE` when `is_ca` (openssl's default), else a plain server certificate.
pub fn self_signed(dir: &Path, stem: &str, names: &[&str], is_ca: bool) -> Issued {
    let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    if is_ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    let key = KeyPair::generate().unwrap();
    let certificate = params.self_signed(&key).unwrap();
    let cert = dir.join(format!("{stem}.pem"));
    let key_path = dir.join(format!("{stem}-key.pem"));
    std::fs::write(&cert, certificate.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    Issued {
        cert,
        key: key_path,
        der: certificate.der().to_vec(),
    }
}

/// An https server on loopback with `served`'s certificate; its URL and a handle to stop it.
pub fn serve_https(config: rustls::ServerConfig) -> (actix_web::dev::ServerHandle, String) {
    use actix_web::{App, HttpResponse, HttpServer, web};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let running = HttpServer::new(|| {
        App::new().route(
            "/",
            web::get().to(|| async { HttpResponse::Ok().body("up") }),
        )
    })
    .workers(1)
    .disable_signals()
    .listen_rustls_0_23(listener, config)
    .unwrap()
    .run();
    let handle = running.handle();
    actix_rt::spawn(running);
    (handle, format!("https://127.0.0.1:{}/", address.port()))
}

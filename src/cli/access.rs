//! The command line of how the listener is reached and who may read what: TLS,
//! trusted proxies, `/metrics` and the admin project.

use std::path::PathBuf;

use clap::Args;

use crate::config::{AccessSettings, AdminToken, ConfigError};
use crate::tls::server::TlsFiles;

/// The listener's TLS and the read access settings.
#[derive(Debug, Args)]
pub struct AccessArgs {
    /// Serve HTTPS (TLS 1.2 and 1.3) with this PEM certificate chain (with --tls-key); read
    /// again on SIGHUP.
    #[arg(long, env = "RINGMASTER_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert; read again on SIGHUP.
    #[arg(long, env = "RINGMASTER_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// TLS-terminating proxies (comma-separated addresses or CIDRs) whose Forwarded or
    /// X-Forwarded-Proto header says how the client came; from anyone else they are ignored.
    #[arg(long, env = "RINGMASTER_TRUSTED_PROXIES", value_delimiter = ',', value_parser = parse_network)]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// File whose first line is a token that GET /metrics takes as `Authorization: Bearer`
    /// (Prometheus' bearer_token_file), besides the admin credentials.
    #[arg(long, env = "RINGMASTER_METRICS_TOKEN_FILE")]
    pub metrics_token_file: Option<PathBuf>,
    /// GET /metrics answers anyone, whatever the address (it is open by default only on a
    /// loopback address without --metrics-token-file).
    #[arg(long, env = "RINGMASTER_METRICS_PUBLIC")]
    pub metrics_public: bool,
    /// The Keystone project whose members with the reader or admin role may read the admin
    /// API (system-scoped readers and admins may too).
    #[arg(long, env = "RINGMASTER_ADMIN_PROJECT", default_value = "admin")]
    pub admin_project: String,
}

/// Reads `10.0.0.0/8` or a single address (`10.0.0.5`).
fn parse_network(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>()
        .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{text:?} is not an IP address or a CIDR network (10.0.0.0/8)"))
}

impl AccessArgs {
    /// The settings, `bind` telling whether the listener is on loopback only.
    pub fn settings(&self, bind: &str) -> Result<AccessSettings, ConfigError> {
        let tls = self
            .tls_cert
            .clone()
            .zip(self.tls_key.clone())
            .map(|(cert, key)| TlsFiles { cert, key });
        let metrics_token = match &self.metrics_token_file {
            Some(file) => AdminToken::new(&super::read_secret("--metrics-token-file", file)?),
            None => None,
        };
        let loopback = bind_is_loopback(bind);
        if !loopback && tls.is_none() {
            log::warn!(
                "listening on {bind} without TLS: tokens and passwords cross the network in the \
                 clear; give --tls-cert and --tls-key, or put a TLS-terminating proxy in front"
            );
        }
        Ok(AccessSettings {
            tls,
            trusted_proxies: self.trusted_proxies.clone(),
            metrics_open: self.metrics_public || (loopback && metrics_token.is_none()),
            metrics_token,
            admin_project: self.admin_project.clone(),
        })
    }
}

/// Whether every address `bind` resolves to is a loopback one (an unresolvable bind is
/// refused later, by the bind itself).
fn bind_is_loopback(bind: &str) -> bool {
    use std::net::ToSocketAddrs;
    bind.to_socket_addrs()
        .map(|mut addresses| addresses.all(|address| address.ip().is_loopback()))
        .unwrap_or(false)
}

/// Refuses a service URL that is not `http://host…` or `https://host…`, in one wording for
/// every flag that takes one.
pub(super) fn check_service_url(flag: &str, url: &str) -> Result<(), ConfigError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest.and_then(|rest| rest.split(['/', '?', '#']).next());
    match host {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => Ok(()),
        _ => Err(ConfigError::Invalid(format!(
            "{flag} {url:?} is not an http:// or https:// URL with a host"
        ))),
    }
}

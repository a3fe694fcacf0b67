//! The command line of Keystone authentication (`serve` and `demo`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::config::ConfigError;
use crate::keystone::KeystoneSettings;
use crate::tls::client::{ClientTls, ClientTlsSettings, Service};

/// How callers are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthStrategy {
    /// A token is taken as the user (`user[:project]`), `X-Roles` as given (Placement's noauth2).
    Noauth2,
    /// Every token is validated by Keystone; its user, project and roles are the caller's.
    Keystone,
}

/// Keystone's settings.
#[derive(Debug, Args)]
pub struct KeystoneArgs {
    /// noauth2 (tokens taken as users, as Placement's noauth2) or keystone.
    #[arg(
        long,
        env = "RINGMASTER_AUTH_STRATEGY",
        value_enum,
        default_value = "noauth2"
    )]
    pub auth_strategy: AuthStrategy,
    /// Keystone's identity endpoint (http://127.0.0.1:5000/v3).
    #[arg(long, env = "RINGMASTER_KEYSTONE_URL")]
    pub keystone_url: Option<String>,
    /// ringmaster's service user in Keystone.
    #[arg(long, env = "RINGMASTER_KEYSTONE_USER", default_value = "placement")]
    pub keystone_user: String,
    /// File whose first line is the service user's password.
    #[arg(long, env = "RINGMASTER_KEYSTONE_PASSWORD_FILE")]
    pub keystone_password_file: Option<PathBuf>,
    /// The service user's project.
    #[arg(long, env = "RINGMASTER_KEYSTONE_PROJECT", default_value = "service")]
    pub keystone_project: String,
    /// The service user's domain (by name).
    #[arg(
        long,
        env = "RINGMASTER_KEYSTONE_USER_DOMAIN",
        default_value = "Default"
    )]
    pub keystone_user_domain: String,
    /// The service project's domain (by name).
    #[arg(
        long,
        env = "RINGMASTER_KEYSTONE_PROJECT_DOMAIN",
        default_value = "Default"
    )]
    pub keystone_project_domain: String,
    /// How long a validated token is believed without asking Keystone again (a revoked token
    /// is refused at most this long after its revocation).
    #[arg(long, env = "RINGMASTER_KEYSTONE_CACHE_LIFETIME", default_value = "30s", value_parser = super::parse_duration)]
    pub keystone_cache_lifetime: Duration,
    /// PEM file of the CAs that Keystone's https certificate (and that of the services found
    /// in its catalog) is checked against (keystoneauth's cafile); without it, the operating
    /// system's trust store.
    #[arg(long, env = "RINGMASTER_KEYSTONE_CAFILE")]
    pub keystone_cafile: Option<PathBuf>,
    /// Do not check Keystone's https certificate (keystoneauth's insecure): anyone on the path
    /// can pose as Keystone. Warned at start.
    #[arg(long, env = "RINGMASTER_KEYSTONE_INSECURE")]
    pub keystone_insecure: bool,
    /// The region whose endpoints are taken from Keystone's catalog (Ironic's, Glance's);
    /// without it, any region's.
    #[arg(long, env = "RINGMASTER_REGION_NAME")]
    pub region_name: Option<String>,
}

impl KeystoneArgs {
    /// Keystone's settings with `--auth-strategy keystone`; `None` with noauth2.
    pub fn settings(&self) -> Result<Option<KeystoneSettings>, ConfigError> {
        if self.auth_strategy == AuthStrategy::Noauth2 {
            if self.keystone_url.is_some() {
                return Err(ConfigError::Invalid(
                    "--keystone-url needs --auth-strategy keystone".to_owned(),
                ));
            }
            return Ok(None);
        }
        let url = self.keystone_url.clone().ok_or_else(|| {
            ConfigError::Invalid("--auth-strategy keystone needs --keystone-url".to_owned())
        })?;
        super::access::check_service_url("--keystone-url", &url)?;
        if self.keystone_insecure {
            log::warn!(
                "--keystone-insecure: Keystone's https certificate is not checked; anyone on \
                 the path can pose as Keystone"
            );
        }
        let tls = ClientTls::load(ClientTlsSettings {
            service: Service::Keystone,
            cafile: self.keystone_cafile.clone(),
            client_cert: None,
            insecure: self.keystone_insecure,
        })
        .map_err(|error| ConfigError::Invalid(error.to_string()))?;
        let file = self.keystone_password_file.as_ref().ok_or_else(|| {
            ConfigError::Invalid(
                "--auth-strategy keystone needs --keystone-password-file".to_owned(),
            )
        })?;
        let password = super::read_secret("--keystone-password-file", file)?;
        Ok(Some(KeystoneSettings {
            url,
            user: self.keystone_user.clone(),
            password,
            project: self.keystone_project.clone(),
            user_domain: self.keystone_user_domain.clone(),
            project_domain: self.keystone_project_domain.clone(),
            cache_lifetime: self.keystone_cache_lifetime,
            tls,
            region: self.region_name.clone(),
        }))
    }
}

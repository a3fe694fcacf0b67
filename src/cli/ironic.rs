//! The command line of a real Ironic as the node source (`serve` and `demo`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::config::{ConfigError, DEFAULT_IMAGE_SOURCE, IronicSettings};
use crate::ironic_api::{IronicAuth, NodeSelection};
use crate::keystone::{Keystone, KeystoneSettings};
use crate::tls::client::{ClientTls, ClientTlsSettings, Service};

/// Where the nodes come from: a real Ironic, or (without `--ironic-url`) the simulated one.
#[derive(Debug, Args)]
pub struct IronicArgs {
    /// Take the nodes from the Ironic at this URL (http://host:6385) instead of the simulated
    /// Ironic.
    #[arg(long, env = "RINGMASTER_IRONIC_URL")]
    pub ironic_url: Option<String>,
    /// User for Ironic's http_basic authentication (with --ironic-password-file); without it,
    /// no credentials are sent (noauth).
    #[arg(long, env = "RINGMASTER_IRONIC_USER")]
    pub ironic_user: Option<String>,
    /// File whose first line is the password of --ironic-user.
    #[arg(long, env = "RINGMASTER_IRONIC_PASSWORD_FILE")]
    pub ironic_password_file: Option<PathBuf>,
    /// Only the nodes of this Ironic conductor group (Nova's [ironic] conductor_group).
    #[arg(long, env = "RINGMASTER_IRONIC_CONDUCTOR_GROUP")]
    pub ironic_conductor_group: Option<String>,
    /// Only the nodes of this Ironic shard (Nova's [ironic] shard; Ironic API 1.82).
    #[arg(long, env = "RINGMASTER_IRONIC_SHARD")]
    pub ironic_shard: Option<String>,
    /// The image a deploy asks Ironic for (instance_info/image_source).
    #[arg(long, env = "RINGMASTER_IRONIC_IMAGE_SOURCE", default_value = DEFAULT_IMAGE_SOURCE)]
    pub ironic_image_source: String,
    /// How often a deploy or a tear-down reads its node while Ironic works on it.
    #[arg(long, env = "RINGMASTER_IRONIC_POLL_INTERVAL", default_value = "500ms", value_parser = super::parse_duration)]
    pub ironic_poll_interval: Duration,
    /// How long a deploy or a tear-down in Ironic may take before it fails.
    #[arg(long, env = "RINGMASTER_IRONIC_DEPLOY_TIMEOUT", default_value = "30m", value_parser = super::parse_duration)]
    pub ironic_deploy_timeout: Duration,
    /// How often a request Ironic refuses with 409 NodeLocked is sent again (with backoff).
    #[arg(long, env = "RINGMASTER_IRONIC_LOCK_RETRIES", default_value_t = 8)]
    pub ironic_lock_retries: u32,
    /// PEM file of the CAs that Ironic's https certificate is checked against (Nova's
    /// [ironic] cafile); without it, the operating system's trust store.
    #[arg(long, env = "RINGMASTER_IRONIC_CAFILE")]
    pub ironic_cafile: Option<PathBuf>,
    /// PEM client certificate sent to Ironic when it asks for one (Nova's [ironic] certfile).
    #[arg(long, env = "RINGMASTER_IRONIC_CERTFILE")]
    pub ironic_certfile: Option<PathBuf>,
    /// PEM private key of --ironic-certfile (Nova's [ironic] keyfile).
    #[arg(long, env = "RINGMASTER_IRONIC_KEYFILE")]
    pub ironic_keyfile: Option<PathBuf>,
    /// Do not check Ironic's https certificate (Nova's [ironic] insecure): anyone on the path
    /// can pose as Ironic. Warned at start.
    #[arg(long, env = "RINGMASTER_IRONIC_INSECURE")]
    pub ironic_insecure: bool,
    /// The most nodes one listing may take for gone at once: a share of the nodes known
    /// (`10%`), a number (`50`) or both (`10%,50`: the smaller). Beyond it the removals wait
    /// until the next listing lacks the same nodes (a project-scoped token or a restored
    /// Ironic database lists fewer nodes with a 200); one warning, and
    /// ringmaster_ironic_removals_held_total counts them.
    #[arg(long, env = "RINGMASTER_IRONIC_VANISH_LIMIT", default_value = "10%,50")]
    pub ironic_vanish_limit: crate::domain::mirror::VanishLimit,
    /// Under --auth-strategy keystone without --ironic-url: the catalog interfaces Ironic's
    /// endpoint is taken from, the first found (Nova's [ironic] valid_interfaces).
    #[arg(
        long,
        env = "RINGMASTER_IRONIC_VALID_INTERFACES",
        value_delimiter = ',',
        default_value = "internal,public",
        value_parser = ["internal", "public", "admin"]
    )]
    pub ironic_valid_interfaces: Vec<String>,
}

impl IronicArgs {
    /// How Ironic's certificate is checked (and the client certificate sent).
    fn tls(&self) -> Result<Arc<ClientTls>, ConfigError> {
        if self.ironic_insecure {
            log::warn!(
                "--ironic-insecure: Ironic's https certificate is not checked; anyone on the \
                 path can pose as Ironic"
            );
        }
        let settings = ClientTlsSettings {
            service: Service::Ironic,
            cafile: self.ironic_cafile.clone(),
            client_cert: self
                .ironic_certfile
                .clone()
                .zip(self.ironic_keyfile.clone()),
            insecure: self.ironic_insecure,
        };
        ClientTls::load(settings).map_err(|error| ConfigError::Invalid(error.to_string()))
    }

    /// The settings of the real Ironic, if one is named; the password file must be readable
    /// and not empty.
    /// With --auth-strategy keystone (`keystone`), Ironic takes ringmaster's Keystone token,
    /// and without --ironic-url it is looked for in Keystone's catalog at start.
    pub fn settings(
        &self,
        keystone: Option<&KeystoneSettings>,
    ) -> Result<Option<IronicSettings>, ConfigError> {
        let catalog = match (&self.ironic_url, keystone) {
            (None, Some(_)) => Some(self.ironic_valid_interfaces.clone()),
            _ => None,
        };
        if self.ironic_url.is_none() && catalog.is_none() {
            let stray = [
                self.ironic_user.as_ref().map(|_| "--ironic-user"),
                self.ironic_conductor_group
                    .as_ref()
                    .map(|_| "--ironic-conductor-group"),
                self.ironic_shard.as_ref().map(|_| "--ironic-shard"),
            ];
            if let Some(flag) = stray.into_iter().flatten().next() {
                return Err(ConfigError::Invalid(format!(
                    "{flag} needs --ironic-url (the simulated Ironic has no such setting)"
                )));
            }
            return Ok(None);
        }
        if let Some(url) = &self.ironic_url {
            super::access::check_service_url("--ironic-url", url)?;
        }
        let auth = match (&self.ironic_user, &self.ironic_password_file, keystone) {
            (Some(user), Some(file), _) => IronicAuth::Basic {
                user: user.clone(),
                password: super::read_secret("--ironic-password-file", file)?,
            },
            (_, _, Some(keystone)) => IronicAuth::Keystone(Arc::new(
                Keystone::new(keystone.clone())
                    .map_err(|error| ConfigError::Invalid(error.to_string()))?,
            )),
            _ => IronicAuth::None,
        };
        if self.ironic_poll_interval.is_zero() || self.ironic_deploy_timeout.is_zero() {
            return Err(ConfigError::Invalid(
                "--ironic-poll-interval and --ironic-deploy-timeout must be above zero".to_owned(),
            ));
        }
        Ok(Some(IronicSettings {
            url: self.ironic_url.clone().unwrap_or_default(),
            auth,
            selection: NodeSelection {
                conductor_group: self.ironic_conductor_group.clone(),
                shard: self.ironic_shard.clone(),
            },
            image_source: self.ironic_image_source.clone(),
            poll_interval: self.ironic_poll_interval,
            deploy_timeout: self.ironic_deploy_timeout,
            lock_retries: self.ironic_lock_retries,
            vanish_limit: self.ironic_vanish_limit,
            tls: self.tls()?,
            catalog,
        }))
    }
}

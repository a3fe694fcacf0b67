//! The command line of the image service the Compute API resolves images through.

use clap::Args;

use crate::config::{ConfigError, ImageSettings};

/// Where images come from and how the deploying Ironic reads them.
#[derive(Debug, Args)]
pub struct GlanceArgs {
    /// The image service (Glance, http://host:9292) a server's image is resolved through;
    /// without it, the `image` endpoint of Keystone's catalog (--auth-strategy keystone), or
    /// none: the image's uuid is then taken as it is.
    #[arg(long, env = "RINGMASTER_GLANCE_URL")]
    pub glance_url: Option<String>,
    /// The real Ironic (--ironic-url) has a Glance configured and reads it as this Keystone
    /// project: a deploy's image_source is the image's uuid, and the image must be public,
    /// owned by or shared with this project. Without it, a real Ironic is standalone: it gets
    /// the image's download URL and checksum.
    #[arg(long, env = "RINGMASTER_IRONIC_GLANCE_PROJECT")]
    pub ironic_glance_project: Option<String>,
}

impl GlanceArgs {
    /// The image settings; `real_ironic` says whether --ironic-url is given.
    pub fn settings(&self, real_ironic: bool) -> Result<ImageSettings, ConfigError> {
        if let Some(url) = &self.glance_url {
            super::access::check_service_url("--glance-url", url)?;
        }
        if self.ironic_glance_project.is_some() && !real_ironic {
            return Err(ConfigError::Invalid(
                "--ironic-glance-project needs --ironic-url".to_owned(),
            ));
        }
        Ok(ImageSettings {
            glance_url: self.glance_url.clone(),
            ironic_glance_project: self.ironic_glance_project.clone(),
            real_ironic,
        })
    }
}

//! How a server's image is resolved before anything is claimed: through the image service
//! (`--glance-url`, or the `image` endpoint of Keystone's catalog) with the caller's token, and
//! into what the deploying Ironic can read (`domain::compute::image`). Without an image
//! service the image's uuid is taken as it is.

use std::sync::{Arc, Mutex, PoisonError};

use actix_web::HttpRequest;
use actix_web::http::StatusCode;

use super::error::ComputeError;
use crate::config::ImageSettings;
use crate::domain::boot::BootRequest;
use crate::domain::compute::image::{
    ImageSource, IronicImages, image_source, parse_image, readable_without_membership,
};
use crate::glance::{Glance, GlanceError};
use crate::keystone::Keystone;

/// The image service of this process, found once.
#[derive(Default)]
pub struct ImageService {
    settings: ImageSettings,
    found: Mutex<Option<Arc<Glance>>>,
}

impl ImageService {
    pub fn new(settings: ImageSettings) -> ImageService {
        ImageService {
            settings,
            found: Mutex::new(None),
        }
    }

    /// The image service: `--glance-url`, else the catalog's `image` endpoint; `None` when
    /// there is none.
    async fn glance(
        &self,
        keystone: Option<&Keystone>,
    ) -> Result<Option<Arc<Glance>>, ComputeError> {
        if let Some(found) = self
            .found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return Ok(Some(found));
        }
        let url = match (&self.settings.glance_url, keystone) {
            (Some(url), _) => url.clone(),
            (None, Some(keystone)) => match keystone.endpoint("image").await {
                Ok(Some(url)) => url,
                Ok(None) => return Ok(None),
                Err(error) => return Err(unavailable(&error.to_string())),
            },
            (None, None) => return Ok(None),
        };
        let glance = Arc::new(
            Glance::new(
                &url,
                &keystone.map_or_else(crate::tls::client::ClientTls::system, Keystone::tls),
            )
            .map_err(|error| unavailable(&error.to_string()))?,
        );
        *self.found.lock().unwrap_or_else(PoisonError::into_inner) = Some(glance.clone());
        Ok(Some(glance))
    }

    /// What the deploy of image `id` asks Ironic for, as the caller of `request` sees the
    /// image; `None` without an image service. Unknown, invisible or inactive images, and
    /// images the Ironic could not read, are 400s.
    pub async fn resolve(
        &self,
        request: &HttpRequest,
        keystone: Option<&Keystone>,
        id: &str,
    ) -> Result<Option<ImageSource>, ComputeError> {
        let Some(glance) = self.glance(keystone).await? else {
            return Ok(None);
        };
        let token = request
            .headers()
            .get("x-auth-token")
            .and_then(|value| value.to_str().ok());
        let doc = glance.image(id, token).await.map_err(glance_error)?;
        let Some(image) = doc.as_ref().and_then(parse_image) else {
            return Err(ComputeError::bad_request(format!(
                "Can not find requested image {id}"
            )));
        };
        let ironic = match (
            &self.settings.ironic_glance_project,
            self.settings.real_ironic,
        ) {
            (Some(project), _) => IronicImages::Glance {
                project: project.clone(),
            },
            (None, true) => IronicImages::Url {
                url: glance.file_url(id),
                reachable: glance.data_reachable(id).await.map_err(glance_error)?,
            },
            (None, false) => IronicImages::Simulated,
        };
        let member = match &ironic {
            IronicImages::Glance { project } if !readable_without_membership(&image, project) => {
                glance
                    .is_member(id, project, token)
                    .await
                    .map_err(glance_error)?
            }
            _ => false,
        };
        image_source(&image, &ironic, member)
            .map(Some)
            .map_err(ComputeError::bad_request)
    }
}

/// What `asked` boots of `image`: its image source for the deploy, and the image's required
/// traits added to the flavor's (as Nova merges them); a trait the flavor forbids is a 400.
pub fn boot_from(asked: &mut BootRequest, image: &ImageSource) -> Result<(), ComputeError> {
    for name in &image.traits_required {
        if asked.forbidden_traits.contains(name) {
            return Err(ComputeError::bad_request(format!(
                "The image requires trait {name}, which the flavor forbids."
            )));
        }
        if !asked.required_traits.contains(name) {
            asked.required_traits.push(name.clone());
        }
    }
    if let Some(server) = &mut asked.server {
        server.image = Some(image.to_json().to_string());
    }
    Ok(())
}

fn glance_error(error: GlanceError) -> ComputeError {
    match error {
        GlanceError::Unauthorized => {
            ComputeError::bad_request("The image service refused the caller's token.")
        }
        GlanceError::Unavailable(reason) => unavailable(&reason),
    }
}

/// The image service cannot be asked: 503, the cause logged, not shown.
fn unavailable(reason: &str) -> ComputeError {
    log::warn!("the image service cannot be asked: {reason}");
    ComputeError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "The image service is not available now.",
    )
}

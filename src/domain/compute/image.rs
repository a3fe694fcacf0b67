//! The image a server boots, as the image service (Glance v2) shows it, and what a deploy asks
//! Ironic for from it (Nova's ironic driver): with an Ironic that has a Glance configured, the
//! image's uuid, which Ironic can read only if the image is public (or community), owned by
//! Ironic's project or shared with it; with a standalone Ironic, the image's data as a URL it
//! can download without Keystone, with its checksum. Pure: the gateway asks Glance, this
//! decides.

use serde_json::{Value, json};

/// What ringmaster learnt of one image from the image service.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Image {
    pub id: String,
    pub status: String,
    pub visibility: String,
    pub owner: Option<String>,
    pub checksum: Option<String>,
    pub os_hash_algo: Option<String>,
    pub os_hash_value: Option<String>,
    /// The image's `trait:NAME=required` properties, as Nova's `traits_required`.
    pub traits_required: Vec<String>,
}

/// How the Ironic that deploys reaches images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IronicImages {
    /// Ironic has a Glance configured and reads it as this Keystone project.
    Glance { project: String },
    /// A standalone Ironic: it downloads the image's data from `url`, when `reachable`
    /// without Keystone.
    Url { url: String, reachable: bool },
    /// The simulated Ironic: it takes the image's uuid.
    Simulated,
}

/// What a deploy writes into the node's `instance_info` for the image: `image_source` and,
/// for a URL, its checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSource {
    pub image_source: String,
    /// `(field, value)` pairs: `image_os_hash_algo`/`image_os_hash_value`, or
    /// `image_checksum`.
    pub checksum: Vec<(&'static str, String)>,
    pub traits_required: Vec<String>,
}

impl ImageSource {
    /// The JSON kept with the instance until its deploy.
    pub fn to_json(&self) -> Value {
        let mut doc = json!({
            "image_source": self.image_source,
            "traits_required": self.traits_required,
        });
        for (field, value) in &self.checksum {
            doc[*field] = json!(value);
        }
        doc
    }
}

/// Reads a Glance v2 image document.
pub fn parse_image(doc: &Value) -> Option<Image> {
    let text = |key: &str| doc.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut traits_required: Vec<String> = doc
        .as_object()?
        .iter()
        .filter_map(|(key, value)| {
            let name = key.strip_prefix("trait:")?;
            (value.as_str() == Some("required")).then(|| name.to_owned())
        })
        .collect();
    traits_required.sort();
    Some(Image {
        id: text("id")?,
        status: text("status").unwrap_or_default(),
        visibility: text("visibility").unwrap_or_else(|| "shared".to_owned()),
        owner: text("owner"),
        checksum: text("checksum"),
        os_hash_algo: text("os_hash_algo"),
        os_hash_value: text("os_hash_value"),
        traits_required,
    })
}

/// Whether Ironic's `project` may read `image` by itself (without the member list).
pub fn readable_without_membership(image: &Image, project: &str) -> bool {
    matches!(image.visibility.as_str(), "public" | "community")
        || image.owner.as_deref() == Some(project)
}

/// What the deploy of `image` asks Ironic for; `member` says whether the image is shared with
/// Ironic's project. The error is the 400's message.
pub fn image_source(
    image: &Image,
    ironic: &IronicImages,
    member: bool,
) -> Result<ImageSource, String> {
    if image.status != "active" {
        return Err(format!(
            "Image {} is not active (its status is {}).",
            image.id,
            if image.status.is_empty() {
                "unknown"
            } else {
                &image.status
            }
        ));
    }
    let uuid = |image: &Image| ImageSource {
        image_source: image.id.clone(),
        checksum: Vec::new(),
        traits_required: image.traits_required.clone(),
    };
    match ironic {
        IronicImages::Simulated => Ok(uuid(image)),
        IronicImages::Glance { project } => {
            if readable_without_membership(image, project) || member {
                Ok(uuid(image))
            } else {
                Err(format!(
                    "Image {} is {} and not shared with Ironic's project {project}: Ironic \
                     could not read it.",
                    image.id, image.visibility
                ))
            }
        }
        IronicImages::Url { url, reachable } => {
            if !reachable {
                return Err(format!(
                    "Image {}'s data cannot be downloaded without Keystone, and the Ironic \
                     has no image service: serve it over HTTP or give Ironic a Glance \
                     (--ironic-glance-project).",
                    image.id
                ));
            }
            let checksum = match (&image.os_hash_algo, &image.os_hash_value, &image.checksum) {
                (Some(algo), Some(value), _) => vec![
                    ("image_os_hash_algo", algo.clone()),
                    ("image_os_hash_value", value.clone()),
                ],
                (_, _, Some(md5)) => vec![("image_checksum", md5.clone())],
                _ => {
                    return Err(format!(
                        "Image {} has no checksum (checksum or os_hash_algo/os_hash_value): \
                         a standalone Ironic cannot verify its download.",
                        image.id
                    ));
                }
            };
            Ok(ImageSource {
                image_source: url.clone(),
                checksum,
                traits_required: image.traits_required.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn active() -> Image {
        parse_image(&json!({
            "id": "1b8d1e4c-2f7e-4d5c-9e4a-0a4f2f1e8c11", "status": "active",
            "visibility": "private", "owner": "p1", "os_hash_algo": "sha512",
            "os_hash_value": "abc", "checksum": "d41d", "trait:CUSTOM_RAID": "required",
            "trait:CUSTOM_GPU": "forbidden",
        }))
        .expect("an image")
    }

    #[test]
    fn an_image_document_gives_its_required_traits_only() {
        assert_eq!(active().traits_required, vec!["CUSTOM_RAID"]);
        assert_eq!(parse_image(&json!({"status": "active"})), None);
    }

    #[test]
    fn an_inactive_image_is_refused_whatever_the_ironic() {
        let queued = Image {
            status: "queued".to_owned(),
            ..active()
        };
        let refused = image_source(&queued, &IronicImages::Simulated, true).unwrap_err();
        assert!(
            refused.contains("not active (its status is queued)"),
            "{refused}"
        );
    }

    #[test]
    fn ironic_with_glance_reads_public_owned_or_shared_images_only() {
        let glance = |project: &str| IronicImages::Glance {
            project: project.to_owned(),
        };
        assert_eq!(
            image_source(&active(), &glance("p1"), false)
                .map(|s| s.image_source)
                .as_deref(),
            Ok(active().id.as_str())
        );
        assert!(image_source(&active(), &glance("p2"), false).is_err());
        assert!(image_source(&active(), &glance("p2"), true).is_ok());
        let public = Image {
            visibility: "public".to_owned(),
            ..active()
        };
        assert!(image_source(&public, &glance("p2"), false).is_ok());
    }

    #[test]
    fn a_standalone_ironic_gets_the_url_and_the_strongest_checksum() {
        let url = IronicImages::Url {
            url: "http://glance/v2/images/x/file".to_owned(),
            reachable: true,
        };
        let source = image_source(&active(), &url, false).expect("a source");
        assert_eq!(source.image_source, "http://glance/v2/images/x/file");
        assert_eq!(
            source.to_json()["image_os_hash_algo"],
            json!("sha512"),
            "{:?}",
            source
        );
        let md5_only = Image {
            os_hash_algo: None,
            os_hash_value: None,
            ..active()
        };
        let source = image_source(&md5_only, &url, false).expect("a source");
        assert_eq!(source.checksum, vec![("image_checksum", "d41d".to_owned())]);
        let none = Image {
            checksum: None,
            ..md5_only
        };
        assert!(
            image_source(&none, &url, false)
                .unwrap_err()
                .contains("no checksum")
        );
        let unreachable = IronicImages::Url {
            url: "http://glance/x".to_owned(),
            reachable: false,
        };
        assert!(
            image_source(&active(), &unreachable, false)
                .unwrap_err()
                .contains("without Keystone")
        );
    }
}

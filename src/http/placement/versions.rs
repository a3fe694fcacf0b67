//! `GET /placement/`: the version document.

use super::views::{Link, Version, Versions};
use actix_web::HttpResponse;

use crate::domain::placement::Microversion;

/// Returns Placement's version document (the self link is empty, as upstream's).
pub async fn get_versions() -> HttpResponse {
    HttpResponse::Ok().json(Versions {
        versions: [Version {
            id: "v1.0",
            max_version: Microversion::MAX.to_string(),
            min_version: Microversion::MIN.to_string(),
            status: "CURRENT",
            links: [Link {
                rel: "self",
                href: String::new(),
            }],
        }],
    })
}

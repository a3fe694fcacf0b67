//! `GET /placement/`: the version document.

use actix_web::HttpResponse;
use serde_json::json;

use crate::domain::placement::Microversion;

/// Returns Placement's version document (the self link is empty, as upstream's).
pub async fn get_versions() -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "versions": [{
            "id": "v1.0",
            "max_version": Microversion::MAX.to_string(),
            "min_version": Microversion::MIN.to_string(),
            "status": "CURRENT",
            "links": [{"rel": "self", "href": ""}],
        }]
    }))
}

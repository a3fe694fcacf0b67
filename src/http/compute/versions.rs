//! The Compute API's version documents: `/compute` lists v2.1, `/compute/v2.1` describes it
//! (its microversion range), as keystoneauth's discovery reads them.

use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Value, json};

use super::common::base_url;
use crate::domain::compute::version::ComputeVersion;

fn v21(request: &HttpRequest) -> Value {
    json!({
        "id": "v2.1",
        "status": "CURRENT",
        "version": ComputeVersion::MAX.to_string(),
        "min_version": ComputeVersion::MIN.to_string(),
        "updated": "2013-07-23T11:33:21Z",
        "links": [{"rel": "self", "href": format!("{}/v2.1/", base_url(request))}],
    })
}

/// `GET /compute`.
pub async fn list_versions(request: HttpRequest) -> HttpResponse {
    HttpResponse::Ok().json(json!({"versions": [v21(&request)]}))
}

/// `GET /compute/v2.1`.
pub async fn show_version(request: HttpRequest) -> HttpResponse {
    let mut version = v21(&request);
    version["links"] = json!([
        {"rel": "self", "href": format!("{}/v2.1/", base_url(&request))},
        {"rel": "describedby", "type": "text/html", "href": "http://docs.openstack.org/"},
    ]);
    version["media-types"] = json!([{
        "base": "application/json",
        "type": "application/vnd.openstack.compute+json;version=2.1",
    }]);
    HttpResponse::Ok().json(json!({"version": version}))
}

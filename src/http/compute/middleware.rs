//! Every Compute request: the version documents answer anyone; everything else negotiates
//! its microversion (Nova's 400 and 406), authenticates its caller, and gets Nova's headers:
//! `OpenStack-API-Version: compute X`, `X-OpenStack-Nova-API-Version: X` with `Vary`, and the
//! request id as `x-openstack-request-id` and `x-compute-request-id`. A method a path does
//! not take is Nova's 405 in the envelope; a POST or PUT whose `Content-Type` is not JSON,
//! Nova's 415.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage};

use super::error::ComputeError;
use crate::domain::compute::version::{ComputeVersion, VersionError, negotiate};

const VERSION_HEADER: &str = "openstack-api-version";
const LEGACY_VERSION_HEADER: &str = "x-openstack-nova-api-version";

fn is_version_document(path: &str) -> bool {
    matches!(
        path,
        "/compute" | "/compute/" | "/compute/v2.1" | "/compute/v2.1/"
    )
}

/// Says whether `request` sends a body of a type Nova does not read: a POST or PUT whose
/// `Content-Type` is neither `application/json` nor `application/vnd.openstack.compute+json`
/// (none at all is read as JSON).
fn unsupported_body(request: &ServiceRequest) -> bool {
    let method = request.method();
    if method != actix_web::http::Method::POST && method != actix_web::http::Method::PUT {
        return false;
    }
    let Some(value) = request.headers().get(actix_web::http::header::CONTENT_TYPE) else {
        return false;
    };
    let media = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media != "application/json" && media != "application/vnd.openstack.compute+json"
}

fn values<'a>(request: &'a ServiceRequest, name: &str) -> Vec<&'a str> {
    request
        .headers()
        .get_all(name)
        .filter_map(|value| value.to_str().ok())
        .collect()
}

pub async fn compute_request(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let negotiated = negotiate(
        &values(&request, VERSION_HEADER),
        &values(&request, LEGACY_VERSION_HEADER),
    );
    let version = negotiated.as_ref().copied().unwrap_or(ComputeVersion::MIN);
    let refusal = match negotiated {
        Err(error @ VersionError::Invalid(_)) => Some(ComputeError::bad_request(error.to_string())),
        Err(error @ VersionError::Unsupported(_)) => Some(ComputeError::new(
            StatusCode::NOT_ACCEPTABLE,
            error.to_string(),
        )),
        Ok(_) if is_version_document(request.path()) => None,
        Ok(_) => match super::auth::authenticate(&request).await {
            Ok(_) if unsupported_body(&request) => Some(ComputeError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Content-Type",
            )),
            Ok(caller) => {
                request.extensions_mut().insert(caller);
                None
            }
            Err(refused) => Some(refused),
        },
    };
    let mut response = match refusal {
        Some(error) => request.into_response(error.to_response()),
        None => {
            request.extensions_mut().insert(version);
            let response = next.call(request).await?.map_into_boxed_body();
            method_not_allowed_envelope(response)
        }
    };
    stamp_headers(&mut response, version);
    Ok(response)
}

fn method_not_allowed_envelope(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    crate::http::error::rewrap_method_not_allowed(response, |_, _| {
        ComputeError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "The method specified is not allowed for this resource.",
        )
        .to_response()
    })
}

fn stamp_headers(response: &mut ServiceResponse<BoxBody>, version: ComputeVersion) {
    let headers = response.headers_mut();
    let mut set = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), value);
        }
    };
    set(VERSION_HEADER, format!("compute {version}"));
    set(LEGACY_VERSION_HEADER, version.to_string());
    set(
        "vary",
        "OpenStack-API-Version, X-OpenStack-Nova-API-Version".to_owned(),
    );
    let id = crate::http::observe::current_request_id();
    set("x-openstack-request-id", id.clone());
    set("x-compute-request-id", id);
}

//! Every Placement request: negotiates the microversion (400 for a malformed header, 406 for
//! one outside 1.0–1.39), authorizes the caller (`auth`), answers errors in HTML to a client
//! that asked for HTML, and echoes `OpenStack-API-Version` with `Vary` on every answer.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage};

use super::accept::{accepts_json, wants_html};
use super::error::PlacementError;
use crate::domain::placement::{Microversion, VersionError, negotiate};

const VERSION_HEADER: &str = "openstack-api-version";

/// Negotiates, authenticates and stamps the version headers.
pub async fn placement_request(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let settings = request
        .app_data::<actix_web::web::Data<crate::http::AppState>>()
        .map(|state| state.placement.clone())
        .unwrap_or_default();
    if let Some(answer) = super::cors::preflight(&settings, &request) {
        return Ok(request.into_response(answer));
    }
    let cors_origin = super::cors::allowed_origin(&settings, request.headers());
    let keystone = request
        .app_data::<actix_web::web::Data<crate::http::AppState>>()
        .and_then(|state| state.keystone.clone());
    let vouched = match (&keystone, request.path()) {
        (_, "/placement" | "/placement/") | (None, _) => None,
        (Some(keystone), _) => Some(super::auth::keystone_caller(&request, keystone).await),
    };
    let (version, refusal) = negotiate_and_authorize(&request, &settings, vouched);
    let wants_html = wants_html(&request);
    let caching = is_cacheable(request.method(), request.path(), version);
    let mut response = match refusal {
        Some(error) if wants_html => request.into_response(html_error(&error)),
        Some(error) => request.into_response(error.to_response()),
        None => {
            request.extensions_mut().insert(version);
            let response = next.call(request).await?.map_into_boxed_body();
            let response = method_not_allowed_envelope(response);
            if wants_html && response.status().is_client_error() {
                as_html(response).await
            } else {
                response
            }
        }
    };
    if let Some(keystone) = &keystone {
        crate::http::admin_token::ask_for_keystone(&mut response, keystone);
    }
    absolute_location(&mut response);
    stamp_headers(&mut response, version, caching, cors_origin.as_ref());
    Ok(response)
}

/// The request's microversion, and why it is refused, if it is: a malformed version header
/// (400), one outside the supported range (406), a caller the policy refuses (`auth`), or a
/// GET of a Placement resource by a client that takes no JSON (406).
fn negotiate_and_authorize(
    request: &ServiceRequest,
    settings: &crate::config::PlacementSettings,
    vouched: Option<Result<super::auth::Caller, PlacementError>>,
) -> (Microversion, Option<PlacementError>) {
    let values: Vec<&str> = request
        .headers()
        .get_all(VERSION_HEADER)
        .filter_map(|value| value.to_str().ok())
        .collect();
    let negotiated = negotiate(&values);
    let version = negotiated.as_ref().copied().unwrap_or(Microversion::MIN);
    let refusal = match negotiated {
        Err(VersionError::Invalid(text)) => Some(PlacementError::bad_request(format!(
            "invalid version string: {text}"
        ))),
        Err(VersionError::Unacceptable(asked)) => Some(PlacementError::new(
            StatusCode::NOT_ACCEPTABLE,
            format!("Unacceptable version header: {asked}"),
        )),
        Ok(_) => super::auth::authorize(request, settings.policy, vouched)
            .err()
            .or_else(|| {
                let is_root = matches!(request.path(), "/placement" | "/placement/");
                // A path some route serves (the route map knows before routing).
                let known = request.match_pattern().is_some();
                (!is_root && known && request.method() == Method::GET && !accepts_json(request))
                    .then(|| {
                        PlacementError::new(
                            StatusCode::NOT_ACCEPTABLE,
                            "Only application/json is provided",
                        )
                    })
            }),
    };
    (version, refusal)
}

/// From 1.15 answers that show a resource are dated and marked uncacheable; creating a
/// resource class (201/204, no body) is not.
fn is_cacheable(method: &Method, path: &str, version: Microversion) -> bool {
    version.at_least(1, 15)
        && match *method {
            Method::GET => true,
            Method::PUT | Method::POST => !path.starts_with("/placement/resource_classes"),
            _ => false,
        }
}

/// The framework answers a method a path does not take with a bare 405 and `Allow`; Placement
/// answers it in its envelope (keeping `Allow`).
fn method_not_allowed_envelope(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    crate::http::error::rewrap_method_not_allowed(response, |request, _| {
        PlacementError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "The method {} is not allowed for this resource.",
                request.method()
            ),
        )
        .to_response()
    })
}

/// As webob does for Placement: a Location is sent as an absolute URL, which clients that
/// join relative paths to their endpoint (keystoneauth) follow correctly under /placement.
fn absolute_location(response: &mut ServiceResponse<BoxBody>) {
    let absolute = response
        .headers()
        .get(actix_web::http::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .filter(|location| location.starts_with('/'))
        .map(|location| {
            format!(
                "{}{location}",
                crate::http::transport::origin(response.request())
            )
        });
    if let Some(value) = absolute.and_then(|url| HeaderValue::from_str(&url).ok()) {
        response
            .headers_mut()
            .insert(actix_web::http::header::LOCATION, value);
    }
}

/// Stamps every answer: the version header with `Vary`, the caching headers of a successful
/// answer from 1.15, and the CORS headers for an allowed origin.
fn stamp_headers(
    response: &mut ServiceResponse<BoxBody>,
    version: Microversion,
    caching: bool,
    cors_origin: Option<&String>,
) {
    let success = response.status().is_success();
    let headers = response.headers_mut();
    if caching && success {
        headers.insert(
            actix_web::http::header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache"),
        );
        let now = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        if let Ok(value) = HeaderValue::from_str(&now) {
            headers.insert(actix_web::http::header::LAST_MODIFIED, value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&format!("placement {version}")) {
        headers.insert(HeaderName::from_static(VERSION_HEADER), value);
    }
    headers.insert(
        actix_web::http::header::VARY,
        HeaderValue::from_static(VERSION_HEADER),
    );
    if let Some(origin) = cors_origin {
        super::cors::mark(origin, headers);
    }
}

/// A refusal as the bare HTML page webob gives a browser before routing.
fn html_error(error: &PlacementError) -> actix_web::HttpResponse {
    actix_web::HttpResponse::build(error.status)
        .content_type("text/html; charset=UTF-8")
        .body(error.detail.clone())
}

/// The microversion of the current request (set by the middleware).
pub fn version_of(request: &actix_web::HttpRequest) -> Microversion {
    request
        .extensions()
        .get::<Microversion>()
        .copied()
        .unwrap_or(Microversion::MIN)
}

/// Refuses a body that is not declared JSON: 400 with no content type at all, 415 with another.
pub fn require_json(request: &actix_web::HttpRequest) -> Result<(), PlacementError> {
    let has_body = request
        .headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|length| length.parse::<u64>().ok())
        .is_some_and(|length| length > 0);
    let content_type = request
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok());
    let content_type = match content_type {
        Some(content_type) => content_type,
        None if has_body => {
            return Err(PlacementError::bad_request(
                "content-type header required when content-length > 0",
            ));
        }
        None => "None",
    };
    if content_type
        .split(';')
        .next()
        .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
    {
        Ok(())
    } else {
        Err(PlacementError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("The media type {content_type} is not supported, use application/json"),
        ))
    }
}

/// Renders a JSON value as Python's repr does in jsonschema messages ('text', 1, True).
pub fn python_repr(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => format!("'{text}'"),
        serde_json::Value::Null => "None".to_owned(),
        serde_json::Value::Bool(true) => "True".to_owned(),
        serde_json::Value::Bool(false) => "False".to_owned(),
        other => other.to_string(),
    }
}

/// Re-renders a JSON error answer as the HTML page webob writes for a browser.
async fn as_html(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let (request, response) = response.into_parts();
    let status = response.status();
    let is_json = response
        .headers()
        .get(actix_web::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("application/json"));
    if !is_json {
        return ServiceResponse::new(request, response);
    }
    let body = actix_web::body::to_bytes(response.into_body())
        .await
        .unwrap_or_default();
    let detail = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|value| value["errors"][0]["detail"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let title = format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error")
    );
    let explanation = if status == StatusCode::NOT_FOUND {
        "The resource could not be found."
    } else {
        ""
    };
    let page = format!(
        "<html>\n <head>\n  <title>{title}</title>\n </head>\n <body>\n  <h1>{title}</h1>\n  \
         {explanation}<br /><br />\n{}\n\n\n </body>\n</html>",
        html_escape(&detail)
    );
    ServiceResponse::new(
        request,
        actix_web::HttpResponse::build(status)
            .content_type("text/html; charset=UTF-8")
            .body(page),
    )
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

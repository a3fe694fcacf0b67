//! CORS for Placement as oslo.middleware's `cors` answers it when configured
//! (`--placement-cors-origins`, `--placement-cors-headers`): a preflight (`OPTIONS` with
//! `Origin` and `Access-Control-Request-Method`) is answered 200 before anything else, with the
//! allow headers only for an allowed origin asking for allowed headers; any other request from
//! an allowed origin gets `Access-Control-Allow-Origin`.

use actix_web::HttpResponse;
use actix_web::dev::ServiceRequest;
use actix_web::http::Method;
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::config::PlacementSettings;

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// The request's origin when CORS is on and the origin is allowed.
pub fn allowed_origin(settings: &PlacementSettings, headers: &HeaderMap) -> Option<String> {
    let origin = header(headers, "origin")?;
    settings
        .cors_origins
        .iter()
        .any(|allowed| allowed == origin)
        .then(|| origin.to_owned())
}

/// Answers a preflight request, or `None` for any other request.
pub fn preflight(settings: &PlacementSettings, request: &ServiceRequest) -> Option<HttpResponse> {
    let headers = request.headers();
    let is_preflight = !settings.cors_origins.is_empty()
        && request.method() == Method::OPTIONS
        && headers.contains_key("origin")
        && headers.contains_key("access-control-request-method");
    if !is_preflight {
        return None;
    }
    let mut response = HttpResponse::Ok();
    let Some(origin) = allowed_origin(settings, headers) else {
        return Some(response.finish());
    };
    let asked: Vec<String> = header(headers, "access-control-request-headers")
        .unwrap_or("")
        .split(',')
        .map(|name| name.trim().to_ascii_lowercase())
        .filter(|name| !name.is_empty())
        .collect();
    let permitted = asked.iter().all(|name| {
        settings
            .cors_headers
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name))
    });
    if !permitted {
        return Some(response.finish());
    }
    response
        .insert_header(("access-control-allow-origin", origin))
        .insert_header(("access-control-allow-credentials", "true"))
        .insert_header(("vary", "Origin"));
    if let Some(method) = header(headers, "access-control-request-method") {
        response.insert_header(("access-control-allow-methods", method.to_owned()));
    }
    if !asked.is_empty() {
        response.insert_header(("access-control-allow-headers", asked.join(",")));
    }
    Some(response.finish())
}

/// Marks an answer to an allowed origin.
pub fn mark(origin: &str, headers: &mut HeaderMap) {
    if let Ok(value) = HeaderValue::from_str(origin) {
        headers.insert(
            HeaderName::from_static("access-control-allow-origin"),
            value,
        );
        headers.insert(
            HeaderName::from_static("access-control-allow-credentials"),
            HeaderValue::from_static("true"),
        );
        headers.append(
            actix_web::http::header::VARY,
            HeaderValue::from_static("Origin"),
        );
    }
}

//! What every request must be before any route sees it (issue 17): a `Host` this server answers
//! to (DNS rebinding), no cross-origin `Origin` (but Placement's CORS origins), a mutating
//! request that a browser form cannot forge (a JSON content type, or a token header), no NUL
//! character in its URL or JSON body (400 naming the field), a body of bounded size read within a
//! deadline (413, 408). Refusals are in the envelope of the API asked: Placement's under
//! `/placement`, the admin API's elsewhere.

use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::web::{Bytes, BytesMut};
use actix_web::{Error, HttpResponse};
use futures_util::StreamExt;

use super::error::ApiError;
use super::placement::error::PlacementError;

/// The largest request body taken (a 100,000-node enroll with names fits).
pub const BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Who may be asked for: the names (besides IP literals and `localhost`) a `Host` header may
/// carry, and the origins cross-origin Placement requests may come from.
#[derive(Debug, Clone, Default)]
pub struct HygieneSettings {
    pub allowed_hosts: Vec<String>,
    pub placement_origins: Vec<String>,
    /// How long a client may take to send its whole body.
    pub body_timeout: Duration,
}

/// Refuses what no route should see, then passes the request on (its body re-attached).
pub async fn guard(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    // Shared, not copied: this runs for every request.
    let settings = request
        .app_data::<actix_web::web::Data<HygieneSettings>>()
        .cloned()
        .unwrap_or_else(|| actix_web::web::Data::new(HygieneSettings::default()));
    let placement = request.path().starts_with("/placement");
    if let Some((status, message)) = refusal(&request, &settings, placement) {
        return Ok(request.into_response(answer(placement, status, message)));
    }
    let request = match with_body_checked(request, placement, settings.body_timeout).await {
        Ok(request) => request,
        Err(refused) => return Ok(*refused),
    };
    let response = next.call(request).await?.map_into_boxed_body();
    Ok(method_not_allowed_envelope(response, placement))
}

/// Why the request is refused before its body is read, if it is.
fn refusal(
    request: &ServiceRequest,
    settings: &HygieneSettings,
    placement: bool,
) -> Option<(StatusCode, String)> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok());
    if let Some(host) = host
        && !host_allowed(host, &settings.allowed_hosts)
    {
        return Some((
            StatusCode::BAD_REQUEST,
            format!(
                "this server does not answer to the Host {host:?}: ask for it by IP address, or \
                 add the name to --allowed-hosts"
            ),
        ));
    }
    if let Some(origin) = headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok())
    {
        let same = host.is_some_and(|host| same_origin(origin, host));
        let cors = placement && settings.placement_origins.iter().any(|o| o == origin);
        // Placement answers reads across origins as Placement does (its CORS middleware: no
        // CORS headers for an origin it does not know, so the browser keeps the answer away).
        let placement_read = placement && !is_mutating(request.method());
        if !same && !cors && !placement_read {
            return Some((
                StatusCode::FORBIDDEN,
                format!("cross-origin requests are refused (Origin {origin:?})"),
            ));
        }
    }
    let uri = request.uri();
    if has_encoded_nul(uri.path()) || uri.query().is_some_and(has_encoded_nul) {
        return Some((
            StatusCode::BAD_REQUEST,
            "the URL contains a NUL character (%00)".to_owned(),
        ));
    }
    // Placement refuses a write without a token itself (401, in its words), and a browser form
    // cannot send one.
    if !placement && is_mutating(request.method()) && !has_token(headers) && !is_json(headers) {
        return Some((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a request that changes state must send Content-Type: application/json (or a token)"
                .to_owned(),
        ));
    }
    None
}

/// Reads a mutating request's body within the limit and the deadline and checks it for NUL
/// characters; returns the request with its body re-attached, or the refusal.
async fn with_body_checked(
    request: ServiceRequest,
    placement: bool,
    deadline: Duration,
) -> Result<ServiceRequest, Box<ServiceResponse<BoxBody>>> {
    if !is_mutating(request.method()) || !has_body(request.headers()) {
        return Ok(request);
    }
    let (http_request, mut payload) = request.into_parts();
    let read = actix_rt::time::timeout(deadline, read_body(&mut payload)).await;
    let refused = |status, message: String| {
        let mut response = answer(placement, status, message);
        if status == StatusCode::REQUEST_TIMEOUT {
            response.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
        }
        Box::new(ServiceResponse::new(http_request.clone(), response))
    };
    let body = match read {
        Err(_) => {
            return Err(refused(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {}",
                    humantime::format_duration(deadline)
                ),
            ));
        }
        Ok(Err(BodyError::TooLarge)) => {
            return Err(refused(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request body is too large: over {BODY_LIMIT} bytes"),
            ));
        }
        Ok(Err(BodyError::Broken)) => {
            return Err(refused(
                StatusCode::BAD_REQUEST,
                "the request body could not be read".to_owned(),
            ));
        }
        Ok(Ok(body)) => body,
    };
    if let Some(field) = nul_field(&body) {
        return Err(refused(
            StatusCode::BAD_REQUEST,
            format!("{field} contains a NUL character"),
        ));
    }
    Ok(ServiceRequest::from_parts(
        http_request,
        Payload::from(body),
    ))
}

enum BodyError {
    TooLarge,
    Broken,
}

async fn read_body(payload: &mut Payload) -> Result<Bytes, BodyError> {
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| BodyError::Broken)?;
        if body.len() + chunk.len() > BODY_LIMIT {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The field of a JSON body whose name or value holds a NUL character (`\u0000`): `nodes[0].name`,
/// or `the body` when it is not JSON but says so.
fn nul_field(body: &[u8]) -> Option<String> {
    const ESCAPE: &[u8] = b"\\u0000";
    if !body.windows(ESCAPE.len()).any(|window| window == ESCAPE) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    crate::domain::text::nul_path(&value).map(|path| {
        if path.is_empty() {
            "the body".to_owned()
        } else {
            format!("field `{path}`")
        }
    })
}

/// Puts the framework's bare 405 (with its `Allow`) into the admin API's envelope; Placement's
/// middleware does the same in Placement's.
fn method_not_allowed_envelope(
    response: ServiceResponse<BoxBody>,
    placement: bool,
) -> ServiceResponse<BoxBody> {
    if placement || response.status() != StatusCode::METHOD_NOT_ALLOWED {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let (request, _) = response.into_parts();
    let message = format!(
        "{} is not allowed on {}; allowed: {}",
        request.method(),
        request.path(),
        allow
            .as_ref()
            .and_then(|value| value.to_str().ok())
            .unwrap_or("none")
    );
    let mut answer = answer(false, StatusCode::METHOD_NOT_ALLOWED, message);
    if let Some(allow) = allow {
        answer.headers_mut().insert(header::ALLOW, allow);
    }
    ServiceResponse::new(request, answer)
}

/// A refusal in the envelope of the API asked.
fn answer(placement: bool, status: StatusCode, message: String) -> HttpResponse {
    if placement {
        PlacementError::new(status, message).to_response()
    } else {
        actix_web::ResponseError::error_response(&ApiError::Refused { status, message })
    }
}

/// Says whether `text` holds `%00`, without copying it (every request's URL is checked).
fn has_encoded_nul(text: &str) -> bool {
    text.as_bytes().windows(3).any(|window| window == b"%00")
}

fn is_mutating(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// A token header: no browser sends one cross-site without a CORS preflight.
fn has_token(headers: &HeaderMap) -> bool {
    headers.contains_key("x-auth-token") || headers.contains_key(header::AUTHORIZATION)
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|mime| mime.trim().to_ascii_lowercase())
        .is_some_and(|mime| {
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        })
}

fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    length.is_some_and(|length| length > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

/// Says whether a `Host` header names this server: an IP literal (no DNS name can be rebound
/// to it), `localhost`, or a name the operator allowed.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = host_name(host);
    name.parse::<std::net::IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || allowed
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name))
}

/// The name of `host[:port]` or `[v6]:port`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Says whether `origin` (`scheme://authority`) is the server the request went to.
fn same_origin(origin: &str, host: &str) -> bool {
    origin
        .split_once("://")
        .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_ip_literals_localhost_or_allowed_names() {
        let allowed = vec!["ringmaster.example".to_owned()];
        for host in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "[::1]:8080",
            "10.1.2.3:80",
            "localhost:8080",
            "Ringmaster.example:443",
        ] {
            assert!(host_allowed(host, &allowed), "{host}");
        }
        for host in [
            "evil.example:8080",
            "evil.example",
            "127.0.0.1.evil.example",
        ] {
            assert!(!host_allowed(host, &allowed), "{host}");
        }
    }

    #[test]
    fn origins_are_compared_with_the_host_asked() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(!same_origin("https://evil.example", "127.0.0.1:8080"));
        assert!(!same_origin("null", "127.0.0.1:8080"));
    }

    #[test]
    fn a_nul_in_a_json_body_is_found_by_field() {
        assert_eq!(
            nul_field(br#"{"nodes": [{"uuid": "x", "name": "a\u0000b"}]}"#).as_deref(),
            Some("field `nodes[0].name`")
        );
        assert_eq!(nul_field(br#"{"name": "ab"}"#), None);
    }
}

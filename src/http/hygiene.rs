//! What every request must be before any route sees it: a `Host` this server answers
//! to (DNS rebinding), no cross-origin `Origin` (but Placement's CORS origins), a mutating
//! request that a browser form cannot forge (a JSON content type, or a token header), no NUL
//! character in its URL or JSON body (400 naming the field), a body of bounded size read within a
//! deadline (413, 408). Refusals are in the envelope of the API asked: Placement's under
//! `/placement`, Nova's under `/compute`, the admin API's elsewhere.

use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::web::{Bytes, BytesMut};
use actix_web::{Error, HttpResponse};
use futures_util::StreamExt;

use super::compute::error::ComputeError;
use super::error::ApiError;
use super::placement::error::PlacementError;

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
    let surface = Surface::of(request.path());
    let placement = surface == Surface::Placement;
    if let Some((status, message)) = refusal(&request, &settings, placement) {
        return Ok(request.into_response(answer(surface, status, message)));
    }
    let request = match with_body_checked(request, surface, settings.body_timeout).await {
        Ok(request) => request,
        Err(refused) => return Ok(*refused),
    };
    let response = next.call(request).await?.map_into_boxed_body();
    Ok(method_not_allowed_envelope(response, surface))
}

/// Why the request is refused before its body is read, if it is.
fn refusal(
    request: &ServiceRequest,
    settings: &HygieneSettings,
    placement: bool,
) -> Option<(StatusCode, String)> {
    let headers = request.headers();
    let host = match asked_host(request) {
        Ok(Some(host)) => Some(host),
        Ok(None) if is_probe(request) => None,
        Ok(None) => {
            return Some((
                StatusCode::BAD_REQUEST,
                "the request has no Host header: HTTP/1.1 requires one, and this server \
                 answers only to the names it knows"
                    .to_owned(),
            ));
        }
        Err(message) => return Some((StatusCode::BAD_REQUEST, message)),
    };
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
    if let Some(refused) = origin_refusal(request, settings, placement, host) {
        return Some((StatusCode::FORBIDDEN, refused));
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

/// The server the request asks for: the authority of an absolute-form target (RFC 9112
/// 3.2.2: it replaces the `Host` header), else the one `Host` header; `None` when there is
/// neither (HTTP/1.0). A `Host` that is not a host name or address with an optional port, or
/// that comes twice, is refused: the guard cannot tell what it names (it fails closed).
fn asked_host(request: &ServiceRequest) -> Result<Option<&str>, String> {
    if let Some(authority) = request.uri().authority() {
        let authority = authority.as_str();
        return match parse_host(authority) {
            Some(_) => Ok(Some(authority)),
            None => Err(format!(
                "the request target names no valid host: {authority:?}"
            )),
        };
    }
    let mut values = request.headers().get_all(header::HOST);
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err("the request has more than one Host header".to_owned());
    }
    let host = first
        .to_str()
        .ok()
        .filter(|host| parse_host(host).is_some())
        .ok_or_else(|| {
            format!(
                "the Host header is not a host name or address: {:?}",
                String::from_utf8_lossy(first.as_bytes())
            )
        })?;
    Ok(Some(host))
}

/// A load balancer's health check, which may come over HTTP/1.0 without a `Host`.
fn is_probe(request: &ServiceRequest) -> bool {
    matches!(*request.method(), Method::GET | Method::HEAD)
        && matches!(request.path(), "/healthz" | "/readyz")
}

/// Why the request's `Origin` refuses it, if it does: another site (but Placement's CORS
/// origins, and Placement's reads as Placement answers them); on a write also an origin that is
/// `null` (a sandboxed page or a redirect), that cannot be read, or that comes twice. No
/// `Origin` at all passes: curl and the OpenStack clients send none.
fn origin_refusal(
    request: &ServiceRequest,
    settings: &HygieneSettings,
    placement: bool,
    host: Option<&str>,
) -> Option<String> {
    let mut values = request.headers().get_all(header::ORIGIN);
    let first = values.next()?;
    let write = is_mutating(request.method());
    if values.next().is_some() {
        return write.then(|| "the request has more than one Origin header".to_owned());
    }
    let Some(origin) = first
        .to_str()
        .ok()
        .filter(|origin| parse_origin(origin).is_some())
    else {
        let shown = String::from_utf8_lossy(first.as_bytes()).into_owned();
        return (write || !placement)
            .then(|| format!("the Origin {shown:?} is not a web origin: the request is refused"));
    };
    let same = host.is_some_and(|host| same_origin(origin, host));
    let cors = placement && settings.placement_origins.iter().any(|o| o == origin);
    // Placement answers reads across origins as Placement does (its CORS middleware: no
    // CORS headers for an origin it does not know, so the browser keeps the answer away).
    let placement_read = placement && !write;
    (!same && !cors && !placement_read)
        .then(|| format!("cross-origin requests are refused (Origin {origin:?})"))
}

/// Reads a mutating request's body within the limit and the deadline and checks it for NUL
/// characters; returns the request with its body re-attached, or the refusal.
async fn with_body_checked(
    request: ServiceRequest,
    surface: Surface,
    deadline: Duration,
) -> Result<ServiceRequest, Box<ServiceResponse<BoxBody>>> {
    if !is_mutating(request.method()) || !has_body(request.headers()) {
        return Ok(request);
    }
    let (http_request, mut payload) = request.into_parts();
    let limit = surface.body_limit();
    let read = actix_rt::time::timeout(deadline, read_body(&mut payload, limit)).await;
    let refused = |status, message: String| {
        let mut response = answer(surface, status, message);
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
                format!("the request body is too large: over {limit} bytes"),
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

async fn read_body(payload: &mut Payload, limit: usize) -> Result<Bytes, BodyError> {
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| BodyError::Broken)?;
        if body.len() + chunk.len() > limit {
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
    surface: Surface,
) -> ServiceResponse<BoxBody> {
    if surface != Surface::Admin {
        return response;
    }
    super::error::rewrap_method_not_allowed(response, |request, allow| {
        let message = format!(
            "{} is not allowed on {}; allowed: {}",
            request.method(),
            request.path(),
            allow.unwrap_or("none")
        );
        answer(Surface::Admin, StatusCode::METHOD_NOT_ALLOWED, message)
    })
}

/// A refusal in the envelope of the API asked.
fn answer(surface: Surface, status: StatusCode, message: String) -> HttpResponse {
    match surface {
        Surface::Placement => PlacementError::new(status, message).to_response(),
        Surface::Compute => ComputeError::new(status, message).to_response(),
        Surface::Admin => {
            actix_web::ResponseError::error_response(&ApiError::Refused { status, message })
        }
    }
}

/// The API a request is for, whose envelope its refusals take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    Admin,
    Placement,
    Compute,
}

impl Surface {
    fn of(path: &str) -> Surface {
        if path.starts_with("/placement") {
            Surface::Placement
        } else if path == "/compute" || path.starts_with("/compute/") {
            Surface::Compute
        } else {
            Surface::Admin
        }
    }

    /// The largest body this API takes: Nova's for Compute, else `BODY_LIMIT`.
    fn body_limit(self) -> usize {
        match self {
            Surface::Compute => super::COMPUTE_BODY_LIMIT,
            Surface::Admin | Surface::Placement => super::BODY_LIMIT,
        }
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
    let Some(name) = parse_host(host) else {
        return false;
    };
    name.parse::<std::net::IpAddr>().is_ok()
        || name.eq_ignore_ascii_case("localhost")
        || allowed
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(name))
}

/// The name (or address) of `host[:port]` or `[v6]:port`, when that is what `host` is: a
/// name of letters, digits, `-`, `.` and `_` (or a bracketed IPv6 address) and an optional
/// port of digits. `None` for anything else (empty, spaces, non-ASCII, user info, a path).
fn parse_host(host: &str) -> Option<&str> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (address, after) = rest.split_once(']')?;
        address.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        (address, port)
    } else {
        let (name, port) = match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        };
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        (valid.then_some(name)?, port)
    };
    let port_ok = port.is_none_or(|port| {
        !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
    });
    port_ok.then_some(name)
}

/// The authority of `scheme://authority` when `origin` is a web origin (http or https, a
/// valid host, no path).
fn parse_origin(origin: &str) -> Option<&str> {
    let (scheme, authority) = origin.split_once("://")?;
    let scheme_ok = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    (scheme_ok && parse_host(authority).is_some()).then_some(authority)
}

/// Says whether `origin` (`scheme://authority`) is the server the request went to.
fn same_origin(origin: &str, host: &str) -> bool {
    parse_origin(origin).is_some_and(|authority| authority.eq_ignore_ascii_case(host))
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
            "",
            "127.0.0.1:",
            "127.0.0.1:80:80",
            "user@127.0.0.1",
            "127.0.0.1/x",
            "127.0.0.1 evil.example",
            "[::1",
            "[evil.example]:80",
            "locälhost",
        ] {
            assert!(!host_allowed(host, &allowed), "{host}");
        }
    }

    #[test]
    fn origins_are_compared_with_the_host_asked() {
        assert!(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(!same_origin("https://evil.example", "127.0.0.1:8080"));
        assert!(!same_origin("null", "127.0.0.1:8080"));
        assert!(!same_origin("http://127.0.0.1:8080/path", "127.0.0.1:8080"));
        assert!(parse_origin("https://[::1]:8443").is_some());
        assert!(parse_origin("file://").is_none());
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

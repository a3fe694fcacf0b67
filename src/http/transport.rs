//! How a request reached ringmaster: over TLS to this listener, or over TLS to a
//! proxy in `--trusted-proxies` that says so (`Forwarded: proto=https`, `X-Forwarded-Proto:
//! https`); from anyone else those headers are ignored. A secure request's answer carries
//! `Strict-Transport-Security`; its links (version documents, `Location`) say `https`, and the
//! dashboard's cookie is `Secure`.

use actix_web::HttpRequest;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::web;

/// HSTS: a year, as a browser should remember that this server speaks only https.
const HSTS: &str = "max-age=31536000";

/// The proxies whose forwarding headers are believed (`--trusted-proxies`), as app data.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(pub Vec<ipnet::IpNet>);

/// Says whether the client reached this server over https (directly or through a trusted
/// proxy).
pub fn is_secure(request: &HttpRequest) -> bool {
    if request.app_config().secure() {
        return true;
    }
    let trusted = request
        .app_data::<web::Data<TrustedProxies>>()
        .zip(request.peer_addr())
        .is_some_and(|(proxies, peer)| proxies.0.iter().any(|net| net.contains(&peer.ip())));
    trusted
        && forwarded_proto(request.headers())
            .is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}

/// The scheme and authority the client asked for: `https://name:port`.
pub fn origin(request: &HttpRequest) -> String {
    let scheme = if is_secure(request) { "https" } else { "http" };
    let host = request
        .uri()
        .authority()
        .map(|authority| authority.as_str().to_owned())
        .or_else(|| {
            request
                .headers()
                .get(actix_web::http::header::HOST)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_else(|| request.app_config().host().to_owned());
    format!("{scheme}://{host}")
}

/// The protocol the nearest proxy saw: the last `proto=` of `Forwarded`, else the last value
/// of `X-Forwarded-Proto`.
fn forwarded_proto(headers: &HeaderMap) -> Option<&str> {
    let last_value = |name: &str| {
        headers
            .get_all(name)
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .last()
    };
    if let Some(element) = last_value("forwarded") {
        return element
            .split(';')
            .filter_map(|pair| pair.split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("proto"))
            .map(|(_, value)| value.trim().trim_matches('"'));
    }
    last_value("x-forwarded-proto").map(str::trim)
}

/// Adds `Strict-Transport-Security` to the answers of secure requests.
pub async fn strict_transport(
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let secure = is_secure(request.request());
    let mut response = next.call(request).await?;
    if secure {
        response.headers_mut().insert(
            HeaderName::from_static("strict-transport-security"),
            HeaderValue::from_static(HSTS),
        );
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        map
    }

    #[test]
    fn the_nearest_proxy_says_the_protocol() {
        assert_eq!(forwarded_proto(&headers(&[])), None);
        assert_eq!(
            forwarded_proto(&headers(&[("x-forwarded-proto", "http, https")])),
            Some("https")
        );
        assert_eq!(
            forwarded_proto(&headers(&[(
                "forwarded",
                "for=1.2.3.4;proto=http, for=10.0.0.1;proto=\"https\";host=x"
            )])),
            Some("https")
        );
        // Forwarded wins over X-Forwarded-Proto; an element without proto says nothing.
        assert_eq!(
            forwarded_proto(&headers(&[
                ("forwarded", "for=10.0.0.1"),
                ("x-forwarded-proto", "https")
            ])),
            None
        );
    }
}

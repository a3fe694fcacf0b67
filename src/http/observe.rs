//! Every request, observed once: it gets a request id (`req-<uuid>`, answered in the
//! `openstack-request-id` header as Placement does, and the `request_id` of Placement's error
//! bodies), one access log line carrying it, and its route family's count and latency in the
//! metrics. The dashboard's reads (its polls, its event stream, its files), health checks and
//! scrapes log at DEBUG; other requests at INFO; answers 500 and above at WARN.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;

/// The response header carrying the request id (Placement's name for it).
pub const REQUEST_ID_HEADER: &str = "openstack-request-id";

tokio::task_local! {
    static REQUEST_ID: String;
}

/// The id of the request being answered (outside a request: a fresh one).
pub fn current_request_id() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| new_request_id())
}

fn new_request_id() -> String {
    format!("req-{}", uuid::Uuid::new_v4())
}

/// The middleware: request id, access log line, metrics.
pub async fn observe(
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let id = new_request_id();
    let method = request.method().clone();
    let path = request.path().to_owned();
    let family = route_family(&path);
    let client = request
        .peer_addr()
        .map(|address| address.ip().to_string())
        .unwrap_or_default();
    let result = REQUEST_ID.scope(id.clone(), next.call(request)).await;
    let elapsed = started.elapsed();
    let status = match &result {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.as_response_error().status_code().as_u16(),
    };
    crate::metrics::observe_http(family, method.as_str(), status, elapsed);
    let level = if status >= 500 {
        log::Level::Warn
    } else if is_dashboard_read(&method, family) {
        log::Level::Debug
    } else {
        log::Level::Info
    };
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    log::log!(
        target: "ringmaster::access",
        level,
        request_id = id.as_str(),
        client = client.as_str(),
        method = method.as_str(),
        path = path.as_str(),
        status = status,
        duration_ms = duration_ms;
        "{id} {client} \"{method} {path}\" {status} {duration_ms:.1}ms"
    );
    let mut response = result?;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID_HEADER), value);
    }
    Ok(response)
}

/// Reads the dashboard makes over and over (and health checks, scrapes): logged at DEBUG.
fn is_dashboard_read(method: &Method, family: &str) -> bool {
    (method == Method::GET || method == Method::HEAD)
        && (family.starts_with("api/")
            || matches!(family, "dashboard" | "healthz" | "readyz" | "metrics"))
}

/// The admin API's resources (the segment after /api/v1) and their route families.
const API_FAMILIES: &[(&str, &str)] = &[
    ("hosts", "api/hosts"),
    ("nodes", "api/nodes"),
    ("node-source", "api/node-source"),
    ("ring", "api/ring"),
    ("moves", "api/moves"),
    ("timeline", "api/timeline"),
    ("usage", "api/usage"),
    ("audit", "api/audit"),
    ("providers", "api/providers"),
    ("instances", "api/instances"),
    ("events", "api/events"),
    ("archive", "api/archive"),
];

/// Placement's resources (the segment after /placement) and their route families.
const PLACEMENT_FAMILIES: &[(&str, &str)] = &[
    ("resource_providers", "placement/resource_providers"),
    ("resource_classes", "placement/resource_classes"),
    ("traits", "placement/traits"),
    ("allocations", "placement/allocations"),
    ("allocation_candidates", "placement/allocation_candidates"),
    ("usages", "placement/usages"),
    ("reshaper", "placement/reshaper"),
];

/// The Compute API's resources (the segment after /compute/v2.1) and their route families.
const COMPUTE_FAMILIES: &[(&str, &str)] = &[
    ("servers", "compute/servers"),
    ("flavors", "compute/flavors"),
    ("os-keypairs", "compute/os-keypairs"),
    ("os-services", "compute/os-services"),
    ("os-hypervisors", "compute/os-hypervisors"),
    ("os-aggregates", "compute/os-aggregates"),
    ("limits", "compute/limits"),
    ("os-quota-sets", "compute/os-quota-sets"),
];

/// What the dashboard's files (and a browser's own asks, such as its icon) end with.
const DASHBOARD_FILES: &[&str] = &[".js", ".css", ".html", ".ico", ".png", ".svg", ".map"];

/// The route family of `path`: one of a few names, whatever paths clients send.
pub fn route_family(path: &str) -> &'static str {
    let mut segments = path.trim_start_matches('/').split('/');
    match segments.next().unwrap_or("") {
        "" => "dashboard",
        "healthz" => "healthz",
        "readyz" => "readyz",
        "metrics" => "metrics",
        "api" if segments.next() == Some("v1") => {
            family_of(segments.next(), API_FAMILIES).unwrap_or("api/other")
        }
        "placement" => match segments.next() {
            None | Some("") => "placement/root",
            resource => family_of(resource, PLACEMENT_FAMILIES).unwrap_or("placement/other"),
        },
        "compute" => match (segments.next(), segments.next()) {
            (None | Some(""), _) | (Some("v2.1"), None | Some("")) => "compute/root",
            (Some("v2.1"), resource) => {
                family_of(resource, COMPUTE_FAMILIES).unwrap_or("compute/other")
            }
            _ => "compute/other",
        },
        _ if DASHBOARD_FILES.iter().any(|suffix| path.ends_with(suffix)) => "dashboard",
        _ => "other",
    }
}

fn family_of(segment: Option<&str>, known: &[(&str, &'static str)]) -> Option<&'static str> {
    let segment = segment?;
    known
        .iter()
        .find(|(name, _)| *name == segment)
        .map(|(_, family)| *family)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_families_are_few_whatever_the_path() {
        assert_eq!(route_family("/"), "dashboard");
        assert_eq!(route_family("/app.js"), "dashboard");
        assert_eq!(route_family("/favicon.ico"), "dashboard");
        assert_eq!(route_family("/healthz"), "healthz");
        assert_eq!(route_family("/readyz"), "readyz");
        assert_eq!(route_family("/metrics"), "metrics");
        assert_eq!(route_family("/api/v1/hosts/cmp-1/crash"), "api/hosts");
        assert_eq!(route_family("/api/v1/node-source"), "api/node-source");
        assert_eq!(route_family("/api/v1/whatever"), "api/other");
        assert_eq!(route_family("/placement"), "placement/root");
        assert_eq!(route_family("/placement/"), "placement/root");
        assert_eq!(
            route_family("/placement/resource_providers/abc/inventories"),
            "placement/resource_providers"
        );
        assert_eq!(route_family("/placement/nope"), "placement/other");
        assert_eq!(route_family("/compute"), "compute/root");
        assert_eq!(route_family("/compute/v2.1/"), "compute/root");
        assert_eq!(
            route_family("/compute/v2.1/servers/x/action"),
            "compute/servers"
        );
        assert_eq!(route_family("/compute/v2.1/nope"), "compute/other");
        assert_eq!(route_family("/compute/v9/servers"), "compute/other");
        assert_eq!(route_family("/etc/passwd"), "other");
    }
}

//! Request and response bodies of the admin API. Row types never cross HTTP; requests
//! refuse unknown fields.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::identity::InstanceUuid;

/// Body of `GET /healthz`.
#[derive(Debug, Serialize)]
pub struct HealthResponse {
    pub status: &'static str,
}

/// One compute host in `GET /api/v1/hosts`.
#[derive(Debug, Serialize)]
pub struct HostResponse {
    pub host: String,
    /// up, down, fenced or disabled.
    pub state: &'static str,
    pub last_seen_up: Option<DateTime<Utc>>,
    pub nodes: i64,
    pub disabled_reason: Option<String>,
    pub report_count: i64,
    /// Whether the host's actor runs in this process.
    pub local: bool,
    /// The ringmaster version of the process that runs the host (null before one recorded it).
    pub version: Option<String>,
    /// The Ironic conductor group it serves (`""`: the default group; null: every group).
    pub conductor_group: Option<String>,
    /// The Ironic shard it serves (null: every shard).
    pub shard: Option<String>,
}

/// Body of `POST /api/v1/hosts`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateHostRequest {
    pub host: String,
}

/// One node in `GET /api/v1/nodes`.
#[derive(Debug, Serialize)]
pub struct NodeResponse {
    pub uuid: Uuid,
    pub name: Option<String>,
    pub resource_class: String,
    pub host: Option<String>,
    pub compute_node_uuid: Option<Uuid>,
    pub resource_provider_uuid: Option<Uuid>,
    pub owner_epoch: Option<i64>,
    pub instance_uuid: Option<Uuid>,
    pub provision_state: String,
    /// Ironic's power state (`null` while Ironic does not know it).
    pub power_state: Option<String>,
    pub locked: bool,
    pub maintenance: bool,
    /// Ironic's last error on the node.
    pub last_error: Option<String>,
    /// Where the node comes from: `simulated` or `ironic`.
    pub source: String,
    /// Builds that failed on the node since its last success (Nova's `failed_builds`).
    pub failed_builds: i32,
    /// Until when the node is not offered to a new build, after a failed one.
    pub build_cooldown_until: Option<chrono::DateTime<chrono::Utc>>,
}

/// Body of `POST /api/v1/nodes`: a count of new nodes, or the nodes themselves.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollNodesRequest {
    pub count: Option<u32>,
    pub resource_class: Option<String>,
    pub nodes: Option<Vec<EnrollNode>>,
}

/// One node of `POST /api/v1/nodes`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnrollNode {
    pub uuid: Uuid,
    pub resource_class: String,
    pub name: Option<String>,
}

/// Answer of `POST /api/v1/nodes`.
#[derive(Debug, Serialize)]
pub struct EnrollNodesResponse {
    pub enrolled: usize,
    pub nodes: Vec<Uuid>,
}

/// Body of `GET /api/v1/ring`.
#[derive(Debug, Serialize)]
pub struct RingResponse {
    pub version: i64,
    pub algorithm: &'static str,
    pub members: Vec<String>,
    pub counts: BTreeMap<String, i64>,
    /// Every enrolled node, owned or not.
    pub nodes: i64,
    /// Whether this process leads rebalancing.
    pub leader: bool,
    /// The epoch of the rebalancer lease it leads under, when it leads.
    pub lease_epoch: Option<i64>,
    /// Where the nodes come from (`GET /api/v1/node-source`).
    pub node_source: NodeSourceResponse,
    /// The conductor groups and shards whose nodes no live host serves, and since when (as the
    /// leader last found them).
    pub unserved_groups: Vec<crate::db::node_groups::UnservedRow>,
}

/// `GET /api/v1/node-source`: where this process's nodes come from.
#[derive(Debug, Serialize)]
pub struct NodeSourceResponse {
    /// `simulated` (the built-in Ironic) or `ironic` (a real one).
    pub kind: &'static str,
    pub url: Option<String>,
    /// The Ironic API version negotiated.
    pub api_version: Option<String>,
    /// What the last listing of the real Ironic did.
    pub listing: Option<crate::actors::node_source::ListingStatus>,
}

/// Query of `GET /api/v1/moves`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MovesQuery {
    pub limit: Option<i64>,
}

/// Query of `GET /api/v1/nodes` and `GET /api/v1/instances`: filters and a page.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// At most this many (1 to 10,000); all when absent.
    pub limit: Option<i64>,
    /// Only those after this uuid: the last of the previous page.
    pub marker: Option<Uuid>,
    pub host: Option<String>,
    /// The provision state (nodes) or vm_state (instances).
    pub state: Option<String>,
    pub resource_class: Option<String>,
    /// Those whose uuid, name or node (instances) or instance (nodes) starts with it, or
    /// whose host or state it is.
    pub search: Option<String>,
    /// Skip this many of those selected (for a table scrolled to the middle).
    pub offset: Option<i64>,
}

/// The header saying how many a paged listing selects in all.
pub const TOTAL_COUNT: &str = "X-Total-Count";

impl ListQuery {
    /// Checks the page size: 1 to 10,000 when given.
    pub fn limit(&self) -> Result<Option<i64>, String> {
        match self.limit {
            Some(limit) if !(1..=10_000).contains(&limit) => {
                Err(format!("limit must be 1 to 10000, not {limit}"))
            }
            limit => Ok(limit),
        }
    }

    /// Checks the offset: 0 or more; 0 when absent.
    pub fn offset(&self) -> Result<i64, String> {
        match self.offset {
            Some(offset) if offset < 0 => Err(format!("offset must be 0 or more, not {offset}")),
            offset => Ok(offset.unwrap_or(0)),
        }
    }

    /// The filter and page it asks for, checked.
    pub fn filter(self) -> Result<crate::domain::listing::ListFilter, String> {
        Ok(crate::domain::listing::ListFilter {
            limit: self.limit()?,
            offset: self.offset()?,
            search: self.search()?,
            marker: self.marker,
            host: self.host,
            state: self.state,
            resource_class: self.resource_class,
        })
    }

    /// The search text, when not empty (at most 255 characters).
    pub fn search(&self) -> Result<Option<String>, String> {
        match self.search.as_deref().map(str::trim) {
            Some(text) if text.chars().count() > 255 => {
                Err("search must be at most 255 characters".to_owned())
            }
            Some("") | None => Ok(None),
            Some(text) => Ok(Some(text.to_owned())),
        }
    }
}

/// Reads what `query` selects with `find`, and — for a page (`limit` given) — how many it
/// selects in all with `count`; a bad query is a 400.
pub async fn page_of<T, F, C>(
    pool: &crate::db::Pool,
    query: ListQuery,
    find: F,
    count: C,
) -> Result<(Vec<T>, Option<i64>), super::error::ApiError>
where
    T: Send + 'static,
    F: FnOnce(
            &mut crate::db::Connection,
            &crate::domain::listing::ListFilter,
        ) -> Result<Vec<T>, crate::db::DbError>
        + Send
        + 'static,
    C: FnOnce(
            &mut crate::db::Connection,
            &crate::domain::listing::ListFilter,
        ) -> Result<i64, crate::db::DbError>
        + Send
        + 'static,
{
    let filter = query.filter().map_err(super::error::ApiError::BadRequest)?;
    Ok(crate::db::run(pool, move |conn| {
        let rows = find(conn, &filter)?;
        let total = filter.limit.map(|_| count(conn, &filter)).transpose()?;
        Ok((rows, total))
    })
    .await?)
}

/// Adds the `X-Total-Count` header to a page's answer.
pub fn with_total(
    mut builder: actix_web::HttpResponseBuilder,
    total: Option<i64>,
) -> actix_web::HttpResponseBuilder {
    if let Some(total) = total {
        builder.insert_header((TOTAL_COUNT, total.to_string()));
    }
    builder
}

/// Query of `GET /api/v1/timeline`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineQuery {
    /// At most this many entries (1 to 200, default 20).
    pub limit: Option<i64>,
}

/// Body of `GET /api/v1/audit`.
#[derive(Debug, Serialize)]
pub struct AuditResponse {
    pub ok: bool,
    pub violations: Vec<ViolationResponse>,
    /// The violations grouped by invariant: how many, and the first few.
    pub by_invariant: Vec<ViolationGroup>,
}

/// The violations of one invariant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViolationGroup {
    pub invariant: u8,
    pub count: usize,
    pub first: Vec<String>,
}

/// One broken invariant.
#[derive(Debug, Serialize)]
pub struct ViolationResponse {
    pub invariant: u8,
    pub message: String,
}

/// One provider in `GET /api/v1/providers`.
#[derive(Debug, Serialize)]
pub struct ProviderResponse {
    pub uuid: Uuid,
    pub name: String,
    pub generation: i64,
    pub inventory: BTreeMap<String, InventoryResponse>,
    pub usages: BTreeMap<String, i64>,
}

/// One resource class of a provider's inventory.
#[derive(Debug, Serialize)]
pub struct InventoryResponse {
    pub total: i32,
    pub reserved: i32,
}

/// Body of `POST /api/v1/instances`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootRequest {
    /// The instance's uuid, chosen by the client so that a retry (after a 503, a timeout)
    /// finds the same instance instead of booking again; a new one when absent.
    #[serde(default)]
    pub uuid: Option<InstanceUuid>,
    pub name: String,
    pub resource_class: String,
    /// PCI devices to claim on the node (default none).
    #[serde(default)]
    pub pci_devices: u32,
}

/// One instance.
#[derive(Debug, Serialize)]
pub struct InstanceResponse {
    pub uuid: InstanceUuid,
    pub name: Option<String>,
    pub host: Option<String>,
    pub node: Option<String>,
    pub vm_state: String,
    /// Why the instance is in error, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
    /// Its project (the admin API's own: `ringmaster-admin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Its image, when it was booted through the Compute API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Its flavor's name (the resource class of an admin-API boot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavor: Option<String>,
}

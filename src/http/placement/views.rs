//! The bodies the Placement API answers with, as serde view structs: a handler fills one and
//! the microversion decides which optional fields it carries (a field that is `None` is left
//! out of the body; `Some(None)` is written as `null`, as Placement writes a root provider's
//! parent). Field names are Placement's, checked by its gabbi tests.

use std::collections::BTreeMap;

use serde::Serialize;
use uuid::Uuid;

use crate::db::placement::inventories::InventoryRow;
use crate::db::placement::providers::ProviderRow;
use crate::domain::identity::{ConsumerUuid, ProviderUuid};
use crate::domain::placement::Microversion;

const PREFIX: &str = "/placement";

/// A link of a resource (`rel`, `href`).
#[derive(Debug, Serialize)]
pub struct Link {
    pub rel: &'static str,
    pub href: String,
}

/// One resource provider.
#[derive(Debug, Serialize)]
pub struct Provider<'a> {
    pub uuid: ProviderUuid,
    pub name: &'a str,
    pub generation: i64,
    pub links: Vec<Link>,
    /// 1.14+.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_provider_uuid: Option<ProviderUuid>,
    /// 1.14+ (`null` for a root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_provider_uuid: Option<Option<ProviderUuid>>,
}

impl<'a> Provider<'a> {
    /// `provider` as Placement shows it at `version`: the links the version has, the tree's
    /// uuids from 1.14.
    pub fn at(provider: &'a ProviderRow, version: Microversion) -> Provider<'a> {
        let base = format!("{PREFIX}/resource_providers/{}", provider.uuid);
        let link = |rel: &'static str, path: &str| Link {
            rel,
            href: format!("{base}{path}"),
        };
        let mut links = vec![
            link("self", ""),
            link("inventories", "/inventories"),
            link("usages", "/usages"),
        ];
        for (rel, minor) in [("aggregates", 1), ("traits", 6), ("allocations", 11)] {
            if version.at_least(1, minor) {
                links.push(link(rel, &format!("/{rel}")));
            }
        }
        let tree = version.at_least(1, 14);
        Provider {
            uuid: provider.uuid,
            name: &provider.name,
            generation: provider.generation,
            links,
            root_provider_uuid: tree.then_some(provider.root_uuid),
            parent_provider_uuid: tree.then_some(provider.parent_uuid),
        }
    }
}

/// `GET /resource_providers`.
#[derive(Debug, Serialize)]
pub struct Providers<'a> {
    pub resource_providers: Vec<Provider<'a>>,
}

/// A provider's traits, with its generation.
#[derive(Debug, Serialize)]
pub struct ProviderTraits<'a> {
    pub resource_provider_generation: i64,
    pub traits: &'a [String],
}

/// A provider's aggregates; its generation from 1.19.
#[derive(Debug, Serialize)]
pub struct ProviderAggregates<'a> {
    pub aggregates: &'a [Uuid],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_provider_generation: Option<i64>,
}

/// One inventory record.
#[derive(Debug, Serialize)]
pub struct InventoryRecord {
    pub total: i32,
    pub reserved: i32,
    pub min_unit: i32,
    pub max_unit: i32,
    pub step_size: i32,
    pub allocation_ratio: f64,
}

impl From<&InventoryRow> for InventoryRecord {
    fn from(row: &InventoryRow) -> Self {
        InventoryRecord {
            total: row.total,
            reserved: row.reserved,
            min_unit: row.min_unit,
            max_unit: row.max_unit,
            step_size: row.step_size,
            allocation_ratio: row.allocation_ratio,
        }
    }
}

/// One inventory record, with its provider's generation.
#[derive(Debug, Serialize)]
pub struct OneInventory {
    #[serde(flatten)]
    pub record: InventoryRecord,
    pub resource_provider_generation: i64,
}

/// A provider's inventories (class → record), with its generation.
#[derive(Debug, Serialize)]
pub struct Inventories {
    pub resource_provider_generation: i64,
    pub inventories: BTreeMap<String, InventoryRecord>,
}

impl Inventories {
    pub fn of(generation: i64, rows: &[InventoryRow]) -> Inventories {
        Inventories {
            resource_provider_generation: generation,
            inventories: rows
                .iter()
                .map(|row| (row.resource_class.clone(), InventoryRecord::from(row)))
                .collect(),
        }
    }
}

/// One resource class, with its link.
#[derive(Debug, Serialize)]
pub struct ResourceClass<'a> {
    pub name: &'a str,
    pub links: [Link; 1],
}

impl<'a> ResourceClass<'a> {
    pub fn named(name: &'a str) -> ResourceClass<'a> {
        ResourceClass {
            name,
            links: [Link {
                rel: "self",
                href: format!("{PREFIX}/resource_classes/{name}"),
            }],
        }
    }
}

/// `GET /resource_classes`.
#[derive(Debug, Serialize)]
pub struct ResourceClasses<'a> {
    pub resource_classes: Vec<ResourceClass<'a>>,
}

/// `GET /traits`.
#[derive(Debug, Serialize)]
pub struct Traits<'a> {
    pub traits: &'a [String],
}

/// What a consumer holds on one provider: the provider's generation and the amounts.
#[derive(Debug, Default, Serialize)]
pub struct HeldOnProvider {
    pub generation: i64,
    pub resources: BTreeMap<String, i64>,
}

/// `GET /allocations/{consumer}`: its allocations by provider, and from 1.12 (1.28, 1.38)
/// its project and user (generation, type) while it has any.
#[derive(Debug, Default, Serialize)]
pub struct ConsumerAllocations {
    pub allocations: BTreeMap<ProviderUuid, HeldOnProvider>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_generation: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer_type: Option<String>,
}

/// What one consumer holds on a provider.
#[derive(Debug, Default, Serialize)]
pub struct HeldByConsumer {
    pub resources: BTreeMap<String, i64>,
}

/// `GET /resource_providers/{uuid}/allocations`.
#[derive(Debug, Serialize)]
pub struct ProviderAllocations {
    pub allocations: BTreeMap<ConsumerUuid, HeldByConsumer>,
    pub resource_provider_generation: i64,
}

/// `GET /resource_providers/{uuid}/usages`.
#[derive(Debug, Serialize)]
pub struct ProviderUsages {
    pub usages: BTreeMap<String, i64>,
    pub resource_provider_generation: i64,
}

/// `GET /usages`: class → amount, or from 1.38 consumer type → (class → amount, and
/// `consumer_count`).
#[derive(Debug, Serialize)]
pub struct Usages<T: Serialize> {
    pub usages: T,
}

/// One error of Placement's envelope.
#[derive(Debug, Serialize)]
pub struct ErrorEntry<'a> {
    pub status: u16,
    pub title: &'a str,
    pub detail: &'a str,
    pub code: &'a str,
    pub request_id: String,
}

/// keystonemiddleware's error object (on a 401 or 403).
#[derive(Debug, Serialize)]
pub struct AuthError<'a> {
    pub code: u16,
    pub title: &'a str,
    pub message: &'a str,
}

/// Placement's error envelope.
#[derive(Debug, Serialize)]
pub struct Errors<'a> {
    pub errors: [ErrorEntry<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AuthError<'a>>,
}

/// One version of the version document.
#[derive(Debug, Serialize)]
pub struct Version {
    pub id: &'static str,
    pub max_version: String,
    pub min_version: String,
    pub status: &'static str,
    pub links: [Link; 1],
}

/// `GET /placement/`.
#[derive(Debug, Serialize)]
pub struct Versions {
    pub versions: [Version; 1],
}

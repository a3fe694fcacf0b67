//! The Placement API under `/placement`, compatible with OpenStack Placement: microversions by
//! the `OpenStack-API-Version` header (echoed, with `Vary`), noauth2-style `x-auth-token`
//! authentication, and Placement's error envelope `{"errors": [{status, title, detail, code,
//! request_id}]}`. Each path is registered once, with its methods.

mod accept;
pub mod allocations;
pub mod auth;
pub mod candidates;
pub mod common;
pub mod cors;
pub mod error;
pub mod inventories;
pub mod middleware;
pub mod names;
pub mod provider_links;
pub mod providers;
pub mod reshaper;
pub mod versions;
pub mod views;

use actix_web::middleware::from_fn;
use actix_web::web;

use error::PlacementError;

/// Registers the Placement routes under `/placement`.
pub fn configure(config: &mut web::ServiceConfig) {
    config.service(
        web::scope("/placement")
            .wrap(from_fn(middleware::placement_request))
            .app_data(web::PayloadConfig::new(crate::http::BODY_LIMIT))
            .app_data(web::QueryConfig::default().error_handler(|error, _| {
                PlacementError::bad_request(format!(
                    "Invalid query string parameters: Additional properties are not allowed: {error}"
                ))
                .into()
            }))
            .app_data(web::PathConfig::default().error_handler(|error, _| {
                PlacementError::bad_request(format!("Invalid path: {error}")).into()
            }))
            // One resource per path, its methods together: a method it lacks is answered 405
            // with `Allow` by the framework (in Placement's envelope, by the middleware).
            .configure(name_routes)
            .configure(provider_routes)
            .configure(allocation_routes)
            .default_service(web::to(error::no_route)),
    );
}

/// The version document, resource classes and traits.
#[rustfmt::skip]
fn name_routes(config: &mut web::ServiceConfig) {
    resource!(config, ["", "/"], get => versions::get_versions);
    resource!(config, "/resource_classes",
              get => names::list_resource_classes, post => names::create_resource_class);
    resource!(config, "/resource_classes/{name}", get => names::show_resource_class,
              put => names::put_resource_class, delete => names::delete_resource_class);
    resource!(config, "/traits", get => names::list_traits);
    resource!(config, "/traits/{name}",
              get => names::show_trait, put => names::put_trait, delete => names::delete_trait);
}

/// Resource providers and what hangs off each: inventories, traits, aggregates, allocations,
/// usages.
#[rustfmt::skip]
fn provider_routes(config: &mut web::ServiceConfig) {
    resource!(config, "/resource_providers",
              get => providers::list_providers, post => providers::create_provider);
    resource!(config, "/resource_providers/{uuid}", get => providers::show_provider,
              put => providers::update_provider, delete => providers::delete_provider);
    resource!(config, "/resource_providers/{uuid}/inventories",
              get => inventories::list_inventories, post => inventories::create_inventory,
              put => inventories::put_inventories, delete => inventories::delete_inventories);
    resource!(config, "/resource_providers/{uuid}/inventories/{class}",
              get => inventories::show_inventory, put => inventories::put_inventory,
              delete => inventories::delete_inventory);
    resource!(config, "/resource_providers/{uuid}/traits", get => provider_links::list_traits,
              put => provider_links::put_traits, delete => provider_links::delete_traits);
    resource!(config, "/resource_providers/{uuid}/aggregates",
              get => provider_links::list_aggregates, put => provider_links::put_aggregates);
    resource!(config, "/resource_providers/{uuid}/allocations",
              get => allocations::provider_allocations);
    resource!(config, "/resource_providers/{uuid}/usages", get => allocations::provider_usages);
}

/// Allocations, usages, allocation candidates and the reshaper.
#[rustfmt::skip]
fn allocation_routes(config: &mut web::ServiceConfig) {
    resource!(config, "/allocations", post => allocations::post_allocations);
    resource!(config, "/allocations/{consumer}", get => allocations::get_allocations,
              put => allocations::put_allocations, delete => allocations::delete_allocations);
    resource!(config, "/usages", get => allocations::usages);
    resource!(config, "/allocation_candidates", get => candidates::list_candidates);
    resource!(config, "/reshaper", post => reshaper::reshape);
}

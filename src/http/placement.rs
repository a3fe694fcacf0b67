//! The Placement API under `/placement`, compatible with OpenStack Placement: microversions by
//! the `OpenStack-API-Version` header (echoed, with `Vary`), noauth2-style `x-auth-token`
//! authentication, and Placement's error envelope `{"errors": [{status, title, detail, code,
//! request_id}]}`. Resource providers, inventories and allocations follow in later work.

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

use actix_web::middleware::from_fn;
use actix_web::web;

use error::PlacementError;

/// Registers the Placement routes under `/placement`.
pub fn configure(config: &mut web::ServiceConfig) {
    config.service(
        web::scope("/placement")
            .wrap(from_fn(middleware::placement_request))
            .app_data(web::QueryConfig::default().error_handler(|error, _| {
                PlacementError::bad_request(format!(
                    "Invalid query string parameters: Additional properties are not allowed: {error}"
                ))
                .into()
            }))
            .app_data(web::PathConfig::default().error_handler(|error, _| {
                PlacementError::bad_request(format!("Invalid path: {error}")).into()
            }))
            .route("", web::get().to(versions::get_versions))
            .route("/", web::get().to(versions::get_versions))
            .route("/resource_classes", web::get().to(names::list_resource_classes))
            .route("/resource_classes", web::post().to(names::create_resource_class))
            .route("/resource_classes/{name}", web::get().to(names::show_resource_class))
            .route("/resource_classes/{name}", web::put().to(names::put_resource_class))
            .route("/resource_classes/{name}", web::delete().to(names::delete_resource_class))
            .route("/resource_providers", web::get().to(providers::list_providers))
            .route("/resource_providers", web::post().to(providers::create_provider))
            .route("/resource_providers/{uuid}", web::get().to(providers::show_provider))
            .route("/resource_providers/{uuid}", web::put().to(providers::update_provider))
            .route("/resource_providers/{uuid}", web::delete().to(providers::delete_provider))
            .route("/resource_providers/{uuid}/inventories", web::get().to(inventories::list_inventories))
            .route("/resource_providers/{uuid}/inventories", web::put().to(inventories::put_inventories))
            .route("/resource_providers/{uuid}/inventories", web::post().to(inventories::create_inventory))
            .route("/resource_providers/{uuid}/inventories", web::delete().to(inventories::delete_inventories))
            .route("/resource_providers/{uuid}/inventories/{class}", web::get().to(inventories::show_inventory))
            .route("/resource_providers/{uuid}/inventories/{class}", web::put().to(inventories::put_inventory))
            .route("/resource_providers/{uuid}/inventories/{class}", web::delete().to(inventories::delete_inventory))
            .route("/resource_providers/{uuid}/traits", web::get().to(provider_links::list_traits))
            .route("/resource_providers/{uuid}/traits", web::put().to(provider_links::put_traits))
            .route("/resource_providers/{uuid}/traits", web::delete().to(provider_links::delete_traits))
            .route("/resource_providers/{uuid}/aggregates", web::get().to(provider_links::list_aggregates))
            .route("/resource_providers/{uuid}/aggregates", web::put().to(provider_links::put_aggregates))
            .route("/resource_providers/{uuid}/allocations", web::get().to(allocations::provider_allocations))
            .route("/resource_providers/{uuid}/usages", web::get().to(allocations::provider_usages))
            .route("/allocations", web::post().to(allocations::post_allocations))
            .route("/allocations/{consumer}", web::get().to(allocations::get_allocations))
            .route("/allocations/{consumer}", web::put().to(allocations::put_allocations))
            .route("/allocations/{consumer}", web::delete().to(allocations::delete_allocations))
            .route("/usages", web::get().to(allocations::usages))
            .route("/allocation_candidates", web::get().to(candidates::list_candidates))
            .route("/reshaper", web::post().to(reshaper::reshape))
            .route("/traits", web::get().to(names::list_traits))
            .route("/traits/{name}", web::get().to(names::show_trait))
            .route("/traits/{name}", web::put().to(names::put_trait))
            .route("/traits/{name}", web::delete().to(names::delete_trait))
            .default_service(web::to(error::no_route)),
    );
}

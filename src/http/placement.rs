//! The Placement API under `/placement`, compatible with OpenStack Placement: microversions by
//! the `OpenStack-API-Version` header (echoed, with `Vary`), noauth2-style `x-auth-token`
//! authentication, and Placement's error envelope `{"errors": [{status, title, detail, code,
//! request_id}]}`. Each path is registered once, with its methods.

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
            // One resource per path, its methods together: a method it lacks is answered 405
            // with `Allow` by the framework (in Placement's envelope, by the middleware).
            .configure(name_routes)
            .configure(provider_routes)
            .configure(allocation_routes)
            .default_service(web::to(error::no_route)),
    );
}

/// The version document, resource classes and traits.
fn name_routes(config: &mut web::ServiceConfig) {
    config.service(web::resource(["", "/"]).route(web::get().to(versions::get_versions)));
    config.service(
        web::resource("/resource_classes")
            .route(web::get().to(names::list_resource_classes))
            .route(web::post().to(names::create_resource_class)),
    );
    config.service(
        web::resource("/resource_classes/{name}")
            .route(web::get().to(names::show_resource_class))
            .route(web::put().to(names::put_resource_class))
            .route(web::delete().to(names::delete_resource_class)),
    );
    config.service(web::resource("/traits").route(web::get().to(names::list_traits)));
    config.service(
        web::resource("/traits/{name}")
            .route(web::get().to(names::show_trait))
            .route(web::put().to(names::put_trait))
            .route(web::delete().to(names::delete_trait)),
    );
}

/// Resource providers and what hangs off each: inventories, traits, aggregates, allocations, usages.
fn provider_routes(config: &mut web::ServiceConfig) {
    config.service(
        web::resource("/resource_providers")
            .route(web::get().to(providers::list_providers))
            .route(web::post().to(providers::create_provider)),
    );
    config.service(
        web::resource("/resource_providers/{uuid}")
            .route(web::get().to(providers::show_provider))
            .route(web::put().to(providers::update_provider))
            .route(web::delete().to(providers::delete_provider)),
    );
    config.service(
        web::resource("/resource_providers/{uuid}/inventories")
            .route(web::get().to(inventories::list_inventories))
            .route(web::post().to(inventories::create_inventory))
            .route(web::put().to(inventories::put_inventories))
            .route(web::delete().to(inventories::delete_inventories)),
    );
    config.service(
        web::resource("/resource_providers/{uuid}/inventories/{class}")
            .route(web::get().to(inventories::show_inventory))
            .route(web::put().to(inventories::put_inventory))
            .route(web::delete().to(inventories::delete_inventory)),
    );
    config.service(
        web::resource("/resource_providers/{uuid}/traits")
            .route(web::get().to(provider_links::list_traits))
            .route(web::put().to(provider_links::put_traits))
            .route(web::delete().to(provider_links::delete_traits)),
    );
    config.service(
        web::resource("/resource_providers/{uuid}/aggregates")
            .route(web::get().to(provider_links::list_aggregates))
            .route(web::put().to(provider_links::put_aggregates)),
    );
    config.service(
        web::resource("/resource_providers/{uuid}/allocations")
            .route(web::get().to(allocations::provider_allocations)),
    );
    config.service(
        web::resource("/resource_providers/{uuid}/usages")
            .route(web::get().to(allocations::provider_usages)),
    );
}

/// Allocations, usages, allocation candidates and the reshaper.
fn allocation_routes(config: &mut web::ServiceConfig) {
    config.service(
        web::resource("/allocations").route(web::post().to(allocations::post_allocations)),
    );
    config.service(
        web::resource("/allocations/{consumer}")
            .route(web::get().to(allocations::get_allocations))
            .route(web::put().to(allocations::put_allocations))
            .route(web::delete().to(allocations::delete_allocations)),
    );
    config.service(web::resource("/usages").route(web::get().to(allocations::usages)));
    config.service(
        web::resource("/allocation_candidates").route(web::get().to(candidates::list_candidates)),
    );
    config.service(web::resource("/reshaper").route(web::post().to(reshaper::reshape)));
}

//! The Compute API under `/compute`: the subset of Nova's v2.1 a bare-metal cloud
//! uses, with Nova's microversions (2.1–2.100), errors and policy defaults, so that
//! `openstack server create`, openstacksdk and Ansible work unchanged. docs/compute.md has
//! the routes and where ringmaster differs from Nova.

pub mod aggregates;
pub mod auth;
pub mod common;
pub mod error;
pub mod flavor_specs;
pub mod flavors;
pub mod images;
pub mod keypairs;
pub mod limits;
pub mod middleware;
pub mod server_actions;
pub mod server_body;
pub mod server_filter;
pub mod server_schema;
pub mod server_view;
pub mod servers;
pub mod service_removal;
pub mod services;
pub mod versions;

use actix_web::middleware::from_fn;
use actix_web::web;

use error::ComputeError;

/// Registers the Compute routes under `/compute`.
pub fn configure(config: &mut web::ServiceConfig) {
    config.service(
        web::scope("/compute")
            .wrap(from_fn(middleware::compute_request))
            .app_data(web::PayloadConfig::new(crate::http::COMPUTE_BODY_LIMIT))
            .app_data(web::PathConfig::default().error_handler(|error, _| {
                ComputeError::bad_request(format!("Invalid path: {error}")).into()
            }))
            .configure(version_routes)
            .service(
                web::scope("/v2.1")
                    .configure(flavor_routes)
                    .configure(server_routes)
                    .configure(operator_routes)
                    .default_service(web::to(error::no_route)),
            )
            .default_service(web::to(error::no_route)),
    );
}

#[rustfmt::skip]
fn version_routes(config: &mut web::ServiceConfig) {
    resource!(config, ["", "/"], get => versions::list_versions);
    resource!(config, ["/v2.1", "/v2.1/"], get => versions::show_version);
}

/// Flavors, their extra specs and access lists.
#[rustfmt::skip]
fn flavor_routes(config: &mut web::ServiceConfig) {
    resource!(config, "/flavors", get => flavors::list_flavors, post => flavors::create_flavor);
    resource!(config, "/flavors/detail", get => flavors::list_flavors_detail);
    resource!(config, "/flavors/{id}", get => flavors::show_flavor,
              put => flavors::update_flavor, delete => flavors::delete_flavor);
    resource!(config, "/flavors/{id}/action", post => flavor_specs::flavor_action);
    resource!(config, "/flavors/{id}/os-flavor-access", get => flavor_specs::list_access);
    resource!(config, "/flavors/{id}/os-extra_specs",
              get => flavor_specs::list_specs, post => flavor_specs::create_specs);
    resource!(config, "/flavors/{id}/os-extra_specs/{key}", get => flavor_specs::show_spec,
              put => flavor_specs::update_spec, delete => flavor_specs::delete_spec);
}

/// Servers.
#[rustfmt::skip]
fn server_routes(config: &mut web::ServiceConfig) {
    resource!(config, "/servers", get => servers::list_servers, post => servers::create_server);
    resource!(config, "/servers/detail", get => servers::list_servers_detail);
    resource!(config, "/servers/{id}", get => servers::show_server, delete => servers::delete_server);
    resource!(config, "/servers/{id}/action", post => server_actions::server_action);
}

/// Services, hypervisors, limits and quotas.
#[rustfmt::skip]
fn operator_routes(config: &mut web::ServiceConfig) {
    resource!(config, "/os-services", get => services::list_services);
    resource!(config, "/os-services/{id}", put => services::update_service,
              delete => service_removal::delete_service);
    resource!(config, "/os-aggregates", get => aggregates::list_aggregates);
    resource!(config, "/os-hypervisors", get => services::list_hypervisors);
    resource!(config, "/os-hypervisors/detail", get => services::list_hypervisors_detail);
    resource!(config, "/os-hypervisors/{id}", get => services::show_hypervisor);
    resource!(config, "/os-keypairs", get => keypairs::list_keypairs, post => keypairs::create_keypair);
    resource!(config, "/os-keypairs/{name}", get => keypairs::show_keypair,
              delete => keypairs::delete_keypair);
    resource!(config, "/limits", get => limits::show_limits);
    resource!(config, "/os-quota-sets/{project}", get => limits::show_quotas);
    resource!(config, "/os-quota-sets/{project}/defaults", get => limits::show_default_quotas);
}

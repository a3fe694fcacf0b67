//! The integration suite: one binary, so the private PostgreSQL cluster starts once per run.
//! Each test gets its own database cloned from a migrated template (see `helpers`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod adversary_candidates;
mod adversary_database;
mod adversary_requests;
mod adversary_streams;
mod adversary_writes;
mod fuzz;
mod helpers;

mod api_admin;
mod api_admin_token;
mod api_basics;
mod api_events;
mod api_listings;
mod archive;
mod browser;
mod cli_archive;
mod cli_commands;
mod cli_database;
mod cli_ha;
mod cli_observability;
mod cli_operations;
mod compute_flavors;
mod compute_servers;
mod compute_services;
mod db_constraints;
mod db_migrations;
mod db_registry;
mod db_schema;
mod ha_boots;
mod ha_fencing;
mod ha_guarantees;
mod ha_identity;
mod ha_incidents;
mod ironic_api;
mod ironic_driver;
mod ironic_source;
mod keystone;
mod placement_api;
mod placement_candidates;
mod placement_inventories;
mod placement_links;
mod scripts;
mod security;
mod shared_writers;

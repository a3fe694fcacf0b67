//! ringmaster: a single-binary control plane for bare-metal (ironic) compute.
//!
//! Dependencies point inward only: `http → service → actors → db → domain`. `http` parses,
//! authorizes and renders: its writes go through `service` (the use cases), and it calls `db`
//! directly only for reads, never opening a transaction; `domain` imports nothing of ours and
//! does no IO; only `app` and `script`, which wire it, import `http`. `cli` and `app` do the
//! wiring. docs/architecture.md has the rules module by module, and `tests/all/code_shape.rs`
//! checks them.

pub mod actors;
pub mod app;
pub mod cli;
pub mod config;
pub mod db;
pub mod domain;
pub mod files;
pub mod glance;
pub mod http;
pub mod ironic_api;
pub mod keystone;
pub mod logging;
pub mod metrics;
pub mod script;
pub mod service;
pub mod systemd;
pub mod tls;

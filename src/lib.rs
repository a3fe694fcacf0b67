//! ringmaster: a single-binary control plane for bare-metal (ironic) compute.
//!
//! Dependencies point inward only: `http → actors → db → domain`. `http` may call `db`
//! directly for plain reads; `domain` imports nothing of ours and does no IO; nothing
//! imports `http`. `cli` and `app` do the wiring.

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
pub mod systemd;
pub mod tls;

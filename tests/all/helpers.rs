//! Test fixtures, by concern: the PostgreSQL server and per-test databases (`database`), the
//! in-process app (`app`), the `ringmaster` binary (`process`) and `serve` run by a test
//! (`serve`), a message-driven deployment (`deployment`) and the HA scenarios' steps on it
//! (`scenario`), a real Ironic (`ironic`) and a stand-in serving its listing from memory
//! (`standin_ironic`), a real Keystone (`keystone`), Placement and Compute requests
//! (`openstack_request`), the admin and Compute APIs as the tests call them (`admin_api`,
//! `compute_api`), requests written on a raw socket (`raw_http`), Placement's fixtures
//! (`placement`), a browser (`browser`), certificates and an https server (`pki`), waiting
//! (`wait`), and the crate's sources as modules and the arrows between them (`source_tree`).
//! Every fixture a test file shares with another lives here: no test file imports another.

mod admin_api;
mod app;
mod browser;
mod compute_api;
mod database;
mod deployment;
mod glance;
mod ironic;
mod keystone;
mod openstack_request;
mod patroni;
mod pki;
mod placement;
mod process;
mod proxy;
mod raw_http;
mod scenario;
mod serve;
pub mod source_tree;
mod standin_ironic;
mod wait;

pub use admin_api::*;
pub use app::*;
pub use browser::*;
pub use compute_api::*;
pub use database::*;
pub use deployment::*;
pub use glance::*;
pub use ironic::*;
pub use keystone::*;
pub use patroni::*;
pub use pki::*;
pub use placement::*;
pub use process::*;
pub use proxy::*;
pub use raw_http::*;
pub use scenario::*;
pub use serve::*;
pub use standin_ironic::*;
pub use wait::*;

//! Test fixtures, by concern: the PostgreSQL server and per-test databases (`database`), the
//! in-process app (`app`), the `ringmaster` binary (`process`), a message-driven deployment
//! (`deployment`), a real Ironic (`ironic`) and a stand-in serving its listing from memory
//! (`standin_ironic`), a real Keystone (`keystone`), Placement and Compute requests
//! (`openstack_request`) and Placement's fixtures (`placement`), waiting (`wait`), and the
//! crate's sources as modules and the arrows between them (`source_tree`).

mod app;
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
pub mod source_tree;
mod standin_ironic;
mod wait;

pub use app::*;
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
pub use standin_ironic::*;
pub use wait::*;

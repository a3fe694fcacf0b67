//! Test fixtures, by concern: the PostgreSQL server and per-test databases (`database`), the
//! in-process app (`app`), the `ringmaster` binary (`process`), a message-driven deployment
//! (`deployment`), Placement requests (`placement`) and waiting (`wait`).

mod app;
mod database;
mod deployment;
mod placement;
mod process;
mod wait;

pub use app::*;
pub use database::*;
pub use deployment::*;
pub use placement::*;
pub use process::*;
pub use wait::*;

//! The use cases: what one request of a tenant or an operator does — its database work, each
//! step's transaction opened here, and the actors it tells — written once, outside `http`, and
//! called the same way by the Compute API, the admin API, Placement's API and message scripts.
//! Handlers parse, authorize and render; a use case takes typed input and answers typed
//! outcomes, with no HTTP in it and no API's wording.

pub mod compute_services;
pub mod flavors;
pub mod keypairs;
pub mod placement;
pub mod server_power;
pub mod servers;

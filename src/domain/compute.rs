//! The Compute API's rules, as Nova 34.0.0 applies them: microversion negotiation,
//! flavor and extra-spec validation, server statuses and names. Pure.

pub mod addresses;
pub mod deploy;
pub mod extra_specs;
pub mod flavor;
pub mod image;
pub mod keypair;
pub mod server;
pub mod version;

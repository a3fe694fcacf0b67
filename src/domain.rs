//! Pure types and rules of ringmaster: no IO, no diesel, no actix, no logging.

pub mod error;
pub mod host;

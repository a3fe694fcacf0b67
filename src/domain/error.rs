//! The kinds every error of every layer is classified into; `http` maps each kind to a
//! status code in exactly one place.

/// Says what kind of failure an error is, independent of the layer that raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The subject does not exist.
    NotFound,
    /// The request collides with current state (a duplicate name, a stale generation).
    Conflict,
    /// The request itself is malformed or breaks a rule.
    Invalid,
    /// A dependency (the database) cannot be reached right now; retrying may succeed.
    Unavailable,
    /// A bug or an unexpected failure; details go to the log, never to the client.
    Internal,
}

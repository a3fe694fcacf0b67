//! The kinds every error of every layer is classified into (`http` maps each kind to a
//! status code in exactly one place), and how an error is told with its causes.

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

/// `error` and each of its causes, `: `-separated (`error sending request for url (…): client
/// error (Connect): invalid peer certificate: …`), as outgoing HTTP errors are told: a cause
/// whose text the message already holds is not said twice.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(current) = cause {
        let text = current.to_string();
        if !text.is_empty() && !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = current.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Outer(#[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("client error (Connect)")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn each_cause_is_told_once() {
        let root = std::io::Error::other("invalid peer certificate: UnknownIssuer");
        let error = Outer(Middle(root));
        assert_eq!(
            with_causes(&error),
            "error sending request: client error (Connect): invalid peer certificate: \
             UnknownIssuer"
        );
        let plain = std::io::Error::other("refused");
        assert_eq!(with_causes(&plain), "refused");
    }
}

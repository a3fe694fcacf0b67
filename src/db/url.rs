//! PostgreSQL connection URLs: the socket URL of an embedded cluster, and the same server
//! with another database name (for throwaway test databases).

use super::DbError;

/// Returns the URL of database `database` on a cluster listening only on a unix socket in
/// `socket_dir`.
pub fn socket_url(socket_dir: &std::path::Path, database: &str) -> String {
    format!(
        "postgresql://postgres@/{database}?host={}&port=5432",
        percent_encode(&socket_dir.to_string_lossy())
    )
}

/// Returns `url` with its database name replaced by `database`.
pub fn with_database(url: &str, database: &str) -> Result<String, DbError> {
    let scheme_end = url
        .find("://")
        .filter(|_| url.starts_with("postgres://") || url.starts_with("postgresql://"))
        .ok_or_else(|| {
            DbError::Other("database URL must start with postgres:// or postgresql://".to_owned())
        })?;
    let after_scheme = scheme_end + 3;
    let rest = &url[after_scheme..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let query = tail.find('?').map(|at| &tail[at..]).unwrap_or("");
    Ok(format!(
        "{}{authority}/{database}{query}",
        &url[..after_scheme]
    ))
}

/// What ringmaster asks of every connection unless the URL says otherwise: a bounded connect
/// per host (a powered-off first host of a multi-host URL costs seconds, not minutes), and TCP
/// keepalives plus `tcp_user_timeout` so that a server that went silent (a dead machine, a
/// dropped route) is noticed within seconds while a query waits on it. libpq ignores the TCP
/// ones on a unix socket.
pub const CLIENT_DEFAULTS: &[(&str, &str)] = &[
    ("connect_timeout", "5"),
    ("keepalives", "1"),
    ("keepalives_idle", "5"),
    ("keepalives_interval", "2"),
    ("keepalives_count", "3"),
    ("tcp_user_timeout", "10000"),
];

/// Returns `url` (a `postgres://` URL or a `key=value` connection string) with each of
/// `CLIENT_DEFAULTS` added that it does not set itself.
pub fn with_client_defaults(url: &str) -> String {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let given: Vec<String> = if is_url {
        url.split_once('?')
            .map(|(_, query)| {
                query
                    .split('&')
                    .filter_map(|pair| pair.split('=').next())
                    .map(str::to_ascii_lowercase)
                    .collect()
            })
            .unwrap_or_default()
    } else {
        url.split_whitespace()
            .filter_map(|pair| pair.split('=').next())
            .map(|key| key.trim().to_ascii_lowercase())
            .collect()
    };
    let mut out = url.to_owned();
    for (key, value) in CLIENT_DEFAULTS {
        if given.iter().any(|name| name == key) {
            continue;
        }
        if is_url {
            out.push(if out.contains('?') { '&' } else { '?' });
            out.push_str(&format!("{key}={value}"));
        } else {
            out.push_str(&format!(" {key}={value}"));
        }
    }
    out
}

/// Percent-encodes everything but unreserved characters and `/`.
fn percent_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_database_replaces_only_the_path() {
        assert_eq!(
            with_database("postgres://u:p@h:5/old?sslmode=disable", "new").unwrap(),
            "postgres://u:p@h:5/new?sslmode=disable"
        );
        assert_eq!(
            with_database("postgresql://h", "new").unwrap(),
            "postgresql://h/new"
        );
        assert_eq!(
            with_database("postgresql://postgres@/db?host=/tmp/x", "n").unwrap(),
            "postgresql://postgres@/n?host=/tmp/x"
        );
        assert!(with_database("host=/tmp dbname=x", "n").is_err());
    }

    #[test]
    fn client_defaults_are_added_only_where_the_url_is_silent() {
        let multi =
            "postgresql://h1,h2:5433,h3/rm?target_session_attrs=read-write&connect_timeout=3";
        let with = with_client_defaults(multi);
        assert!(with.starts_with(multi), "{with}");
        assert_eq!(with.matches("connect_timeout=").count(), 1, "{with}");
        assert!(with.ends_with("&keepalives=1&keepalives_idle=5&keepalives_interval=2&keepalives_count=3&tcp_user_timeout=10000"), "{with}");
        assert_eq!(
            with_client_defaults("postgresql://h/db"),
            "postgresql://h/db?connect_timeout=5&keepalives=1&keepalives_idle=5\
             &keepalives_interval=2&keepalives_count=3&tcp_user_timeout=10000"
        );
        let keywords = with_client_defaults("host=h1,h2 dbname=rm tcp_user_timeout=500");
        assert!(
            keywords.starts_with("host=h1,h2 dbname=rm tcp_user_timeout=500 connect_timeout=5 ")
        );
        assert_eq!(
            keywords.matches("tcp_user_timeout").count(),
            1,
            "{keywords}"
        );
    }

    #[test]
    fn socket_url_encodes_the_directory() {
        assert_eq!(
            socket_url(std::path::Path::new("/tmp/a b"), "ringmaster"),
            "postgresql://postgres@/ringmaster?host=/tmp/a%20b&port=5432"
        );
    }
}

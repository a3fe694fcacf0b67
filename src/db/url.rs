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
    fn socket_url_encodes_the_directory() {
        assert_eq!(
            socket_url(std::path::Path::new("/tmp/a b"), "ringmaster"),
            "postgresql://postgres@/ringmaster?host=/tmp/a%20b&port=5432"
        );
    }
}

//! Passwords masked out of a setting shown to the operator (`config show`), in every form
//! libpq takes them: the password of a URL's user (`postgres://user:****@host/db`), a
//! `password=` or `sslpassword=` parameter of a URL's query, and a `password` or `sslpassword`
//! keyword of a key/value connection string (`host=db password=****`, quoted or not).

/// The libpq keywords whose values are secrets.
const SECRET_KEYWORDS: [&str; 2] = ["password", "sslpassword"];

/// What every password in `value` is replaced by.
const MASK: &str = "****";

/// `value` with every password in it replaced by `****`; anything else as it was.
pub fn mask_password(value: &str) -> String {
    match value.split_once("://") {
        Some((scheme, rest)) => mask_url(scheme, rest),
        None => mask_key_values(value).unwrap_or_else(|| value.to_owned()),
    }
}

/// A URL `scheme://rest`: its user's password and its secret query parameters masked.
fn mask_url(scheme: &str, rest: &str) -> String {
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{user}:{MASK}@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (tail, None),
    };
    let tail = match before_fragment.split_once('?') {
        Some((path, query)) => {
            let parameters: Vec<String> = query
                .split('&')
                .map(|parameter| match parameter.split_once('=') {
                    Some((key, _)) if is_secret(&percent_decoded(key)) => format!("{key}={MASK}"),
                    _ => parameter.to_owned(),
                })
                .collect();
            format!("{path}?{}", parameters.join("&"))
        }
        None => before_fragment.to_owned(),
    };
    let fragment = fragment.map(|fragment| format!("#{fragment}"));
    format!(
        "{scheme}://{authority}{tail}{}",
        fragment.unwrap_or_default()
    )
}

fn is_secret(key: &str) -> bool {
    SECRET_KEYWORDS
        .iter()
        .any(|secret| key.eq_ignore_ascii_case(secret))
}

/// `%xx` sequences of `text` decoded (a query key may be written `pass%77ord`).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// A key/value connection string (`keyword = value …`, a value quoted with `'` or not, `\`
/// escaping) with its secret values masked; `None` when `text` is not one (no `=` in it).
fn mask_key_values(text: &str) -> Option<String> {
    if !text.contains('=') {
        return None;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut masked = String::with_capacity(text.len());
    let mut index = 0;
    while index < chars.len() {
        // Whitespace, then the keyword up to `=` or whitespace.
        while index < chars.len() && chars[index].is_whitespace() {
            masked.push(chars[index]);
            index += 1;
        }
        let keyword_start = index;
        while index < chars.len() && chars[index] != '=' && !chars[index].is_whitespace() {
            index += 1;
        }
        let keyword: String = chars[keyword_start..index].iter().collect();
        masked.push_str(&keyword);
        while index < chars.len() && chars[index] != '=' {
            if !chars[index].is_whitespace() {
                return None;
            }
            masked.push(chars[index]);
            index += 1;
        }
        if index == chars.len() {
            return (keyword.is_empty()).then_some(masked);
        }
        masked.push('=');
        index += 1;
        while index < chars.len() && chars[index].is_whitespace() {
            masked.push(chars[index]);
            index += 1;
        }
        let value_start = index;
        index = value_end(&chars, index);
        if is_secret(&keyword) {
            masked.push_str(MASK);
        } else {
            masked.extend(&chars[value_start..index]);
        }
    }
    Some(masked)
}

/// Where the value starting at `start` ends: after its closing quote, or at whitespace.
fn value_end(chars: &[char], start: usize) -> usize {
    let quoted = chars.get(start) == Some(&'\'');
    let mut index = if quoted { start + 1 } else { start };
    while index < chars.len() {
        match chars[index] {
            '\\' => index += 2,
            '\'' if quoted => return index + 1,
            space if space.is_whitespace() && !quoted => return index,
            _ => index += 1,
        }
    }
    chars.len()
}

#[cfg(test)]
mod tests {
    use super::mask_password;

    #[test]
    fn the_password_of_a_url_s_user_is_masked() {
        assert_eq!(
            mask_password("postgres://ringmaster:s3cret@db.example.org:5432/ringmaster?x=1"),
            "postgres://ringmaster:****@db.example.org:5432/ringmaster?x=1"
        );
        assert_eq!(
            mask_password("https://admin:p@ss@keystone.example.org/v3"),
            "https://admin:****@keystone.example.org/v3"
        );
    }

    #[test]
    fn a_password_in_a_url_s_query_is_masked() {
        assert_eq!(
            mask_password("postgresql://ringmaster@db/ringmaster?password=s3cret&sslmode=require"),
            "postgresql://ringmaster@db/ringmaster?password=****&sslmode=require"
        );
        assert_eq!(
            mask_password("postgres:///ringmaster?host=/run/pg&PASSWORD=s3cret"),
            "postgres:///ringmaster?host=/run/pg&PASSWORD=****"
        );
        assert_eq!(
            mask_password("postgres://db/r?sslpassword=keypass&pass%77ord=s3cret#frag"),
            "postgres://db/r?sslpassword=****&pass%77ord=****#frag"
        );
    }

    #[test]
    fn a_password_of_a_key_value_string_is_masked_quoted_or_not() {
        assert_eq!(
            mask_password("host=db user=ringmaster password=s3cret dbname=ringmaster"),
            "host=db user=ringmaster password=**** dbname=ringmaster"
        );
        assert_eq!(
            mask_password("host=db password = 'se cr\\'et' sslpassword=k port=5432"),
            "host=db password = **** sslpassword=**** port=5432"
        );
        assert_eq!(mask_password("password=s3cret"), "password=****");
    }

    #[test]
    fn nothing_else_is_changed() {
        for unchanged in [
            "postgres://ringmaster@db/ringmaster",
            "127.0.0.1:8080",
            "http://a/b@c",
            "host=db dbname=ringmaster",
            "cmp-1",
            "",
        ] {
            assert_eq!(mask_password(unchanged), unchanged);
        }
    }
}

//! Key pairs as Nova takes them: names of `[_\- a-zA-Z0-9]` (and `@` and `.` from 2.92),
//! OpenSSH public keys, fingerprinted as Nova does (the MD5 of the key's blob, in colon-separated
//! hex). ringmaster imports keys; it does not generate them (Nova stopped at 2.92; clients
//! generate them themselves since).

use md5::Digest;

/// Checks a key pair name for the microversion (`with_at_and_dot`: 2.92 and later).
pub fn check_name(name: &str, with_at_and_dot: bool) -> Result<(), String> {
    let fits = !name.is_empty()
        && name.chars().count() <= 255
        && name.trim() == name
        && name.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | ' ')
                || (with_at_and_dot && matches!(c, '@' | '.'))
        });
    if fits {
        Ok(())
    } else {
        let allowed = if with_at_and_dot {
            r"^[_\-\@\. a-zA-Z0-9]+$"
        } else {
            r"^[_\- a-zA-Z0-9]+$"
        };
        Err(format!(
            "Invalid input for field/attribute name. Value: {name}. '{name}' does not match '{allowed}'"
        ))
    }
}

/// The fingerprint of an OpenSSH public key line (`ssh-ed25519 AAAA… comment`), or Nova's
/// reason to refuse it.
pub fn fingerprint(public_key: &str) -> Result<String, String> {
    let refused = || "Keypair data is invalid: failed to generate fingerprint".to_owned();
    let mut fields = public_key.split_whitespace();
    let (Some(kind), Some(blob)) = (fields.next(), fields.next()) else {
        return Err(refused());
    };
    let decoded = crate::domain::text::decode_base64(blob).ok_or_else(refused)?;
    // The blob starts with its own key type, length-prefixed.
    let named = decoded
        .get(..4)
        .map(|len| u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize)
        .and_then(|len| decoded.get(4..4 + len))
        .is_some_and(|name| name == kind.as_bytes());
    if !named {
        return Err(refused());
    }
    let digest = md5::Md5::digest(&decoded);
    Ok(digest
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHd2L1V8kQ3cY0b0G0b4r0wJ3mHq8m0b2R0b4o5h9T0q me@example";

    #[test]
    fn an_openssh_key_is_fingerprinted_and_junk_refused() {
        let print = fingerprint(KEY).expect("a key");
        assert_eq!(print.len(), 47, "{print}");
        assert_eq!(print.matches(':').count(), 15);
        for junk in [
            "",
            "ssh-rsa",
            "ssh-rsa !!!!",
            "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIHd2",
            "x AAAA",
        ] {
            assert!(fingerprint(junk).is_err(), "{junk}");
        }
    }

    #[test]
    fn names_take_at_and_dot_from_2_92() {
        assert!(check_name("my key_1-a", false).is_ok());
        assert!(check_name("me@example.org", false).is_err());
        assert!(check_name("me@example.org", true).is_ok());
        assert!(check_name("", true).is_err());
        assert!(check_name(" lead", true).is_err());
        assert!(check_name("slash/", true).is_err());
    }
}

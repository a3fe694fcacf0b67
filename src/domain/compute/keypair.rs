//! Key pairs as Nova takes them: names of `[_\- a-zA-Z0-9]` (and `@` and `.` from 2.92),
//! OpenSSH public keys, fingerprinted as Nova does (the MD5 of the key's blob, in colon-separated
//! hex). ringmaster imports keys; it does not generate them (Nova stopped at 2.92; clients
//! generate them themselves since).

use md5::Digest;

/// The key pairs a user may hold (Nova's default `key_pairs` quota).
pub const KEY_PAIRS_PER_USER: i64 = 100;

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

/// The longest public key line taken, in bytes: a 16384-bit RSA key (about 2,800) with a long
/// comment. A page of a user's key pairs is bounded by it.
pub const MAX_PUBLIC_KEY: usize = 16 * 1024;

/// The bounds of an RSA modulus OpenSSH takes, in bits.
const RSA_BITS: std::ops::RangeInclusive<usize> = 1024..=16384;

/// The fingerprint of an OpenSSH public key line (`ssh-ed25519 AAAA… comment`), once the key
/// parses as a real public key of the type it names (RSA of 1024 to 16384 bits, ECDSA,
/// Ed25519, DSA, or a security key's), or Nova's reason to refuse it.
pub fn fingerprint(public_key: &str) -> Result<String, String> {
    let refused = || "Keypair data is invalid: failed to generate fingerprint".to_owned();
    if public_key.len() > MAX_PUBLIC_KEY {
        return Err(format!(
            "Keypair data is invalid: a public key of {} bytes (at most {MAX_PUBLIC_KEY} are taken)",
            public_key.len()
        ));
    }
    let key = ssh_key::PublicKey::from_openssh(public_key.trim()).map_err(|_| refused())?;
    match key.key_data() {
        ssh_key::public::KeyData::Rsa(rsa) => {
            let bits = rsa
                .n
                .as_positive_bytes()
                .and_then(|n| Some(n.len() * 8 - n.first()?.leading_zeros() as usize))
                .unwrap_or(0);
            if !RSA_BITS.contains(&bits) {
                return Err(format!(
                    "Keypair data is invalid: an RSA key of {bits} bits (from {} to {} are taken)",
                    RSA_BITS.start(),
                    RSA_BITS.end()
                ));
            }
        }
        ssh_key::public::KeyData::Other(_) => return Err(refused()),
        _ => {}
    }
    // The key's blob as it was sent (a parsed key encodes back to the same bytes).
    let blob = key.to_bytes().map_err(|_| refused())?;
    let digest = md5::Md5::digest(&blob);
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

    /// Keys made by `ssh-keygen`, and what `ssh-keygen -l -E md5` says of them.
    const MADE: [(&str, &str); 2] = [
        (
            "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBL7edZKPIxGrYg9wSgIrxqx9xETvcciF27y0Gcy9WeXquuazF+pt7kPOVLgceJzWgyc2WM9L0RjTmrOxTLFtSDM= me@vm",
            "98:00:f4:85:d1:97:99:8c:75:ec:25:49:59:3c:b0:a3",
        ),
        (
            "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCYg6V2XXSW5PYxBwaBconsXd429iyObK6zSiZn+o2GfMbCdi25XVw/V81MK4xKsGRZFpEuhId5BYFzWvRHUXgaZ4AolxAnaH0jESh4B7JM/9PBw5KLUcWSZUHTQp0WIjY2bcgLIUwNJoSrpp5j8PPGMlUwWVbNsAOJOqxSXtm3qJjnWPdrDw90d0Zi1KTAXzH/6NIX5iiE2L6y/6j3fZPO/VxnUPG+DCONuAe9vDXhA63D5ocG2COZwM9q0jW3ZQEmFqzg2TGtoizjihjPIQvUGoBXWKosWbu2ku9SGfvt3i9pEtcXu6sNh/i5gtN4nVwgDTvRsOcke8Gg/PG3HvX1 me@vm",
            "ec:26:5e:d3:48:73:1d:72:10:2b:ee:1f:9e:ab:f0:39",
        ),
    ];

    #[test]
    fn real_keys_are_fingerprinted_as_ssh_keygen_does() {
        for (key, print) in MADE {
            assert_eq!(fingerprint(key).as_deref(), Ok(print), "{key}");
        }
    }

    /// A key that only looks like one: the right header over data that is not a key of its
    /// type (8 bytes of Ed25519 key, a modulus of zeros, one of 512 bits).
    #[test]
    fn a_header_over_junk_is_not_a_key() {
        let zeros = format!("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAyA{}", "A".repeat(266));
        for junk in [
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAACAAAAAAAAAAA",
            zeros.as_str(),
            "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAQQD/////////////////////////////////////////////////////////////////////////////////////",
        ] {
            let refused = fingerprint(junk).expect_err(junk);
            assert!(refused.starts_with("Keypair data is invalid"), "{refused}");
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

//! `Content-Digest` (RFC 9530): the digest of a message's body that a signature covers, so
//! the signature binds the body too.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use sha2::{Digest, Sha256, Sha512};

/// The `Content-Digest` value of `body` (SHA-256).
pub fn content_digest(body: &[u8]) -> String {
    format!("sha-256=:{}:", B64.encode(Sha256::digest(body)))
}

/// Checks the `Content-Digest` field values a message carries against its body: every
/// SHA-256 or SHA-512 member must match, and at least one must be present (members of other
/// algorithms are not understood, so they cannot stand alone).
pub fn check_content_digest(values: &[&str], body: &[u8]) -> Result<(), String> {
    let joined = values.join(", ");
    if joined.trim().is_empty() {
        return Err("no Content-Digest".into());
    }
    let dict = sfv::Parser::new(&joined)
        .parse_dictionary()
        .map_err(|e| format!("Content-Digest is not a dictionary: {e}"))?;
    let mut checked = 0;
    for (alg, entry) in &dict {
        let sfv::ListEntry::Item(item) = entry else {
            return Err(format!("Content-Digest member {} is a list", alg.as_str()));
        };
        let Some(given) = item.bare_item.as_byte_sequence() else {
            return Err(format!(
                "Content-Digest member {} is not a byte sequence",
                alg.as_str()
            ));
        };
        let actual: Vec<u8> = match alg.as_str() {
            "sha-256" => Sha256::digest(body).to_vec(),
            "sha-512" => Sha512::digest(body).to_vec(),
            _ => continue,
        };
        if given != actual.as_slice() {
            return Err(format!(
                "Content-Digest {} does not match the body",
                alg.as_str()
            ));
        }
        checked += 1;
    }
    if checked == 0 {
        return Err("Content-Digest has no sha-256 or sha-512 member".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_of_rfc_9530_appendix_b_is_reproduced() {
        // RFC 9530 appendix B.1's body and SHA-256 value.
        let body = b"{\"hello\": \"world\"}";
        assert_eq!(
            content_digest(body),
            "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
        );
        assert!(check_content_digest(&[&content_digest(body)], body).is_ok());
    }

    #[test]
    fn a_digest_of_another_body_or_an_unknown_algorithm_alone_is_refused() {
        let body = b"hub.mode=subscribe";
        let other = content_digest(b"hub.mode=unsubscribe");
        assert!(check_content_digest(&[&other], body).is_err());
        assert!(check_content_digest(&[], body).is_err());
        assert!(check_content_digest(&["md5=:AAAA:"], body).is_err());
        assert!(check_content_digest(&["sha-256=\"text\""], body).is_err());
        // A known member that matches, beside an unknown one, passes.
        let both = format!("{}, unixsum=:AAAA:", content_digest(body));
        assert!(check_content_digest(&[&both], body).is_ok());
        // Two matching members, one wrong: refused.
        let mixed = format!("{}, sha-512=:AAAA:", content_digest(body));
        assert!(check_content_digest(&[&mixed], body).is_err());
    }
}

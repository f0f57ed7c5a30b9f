//! `X-Hub-Signature: method=hex`: an HMAC of the delivered body keyed by the subscriber's
//! `hub.secret`. We send sha256 (the spec's recommendation) and verify sha1, sha256, sha384 and
//! sha512, the four methods the W3C Recommendation names: hubs run by others still sign with
//! sha1, and an HMAC does not rest on the collision resistance SHA-1 lost.

use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Sha256, Sha384, Sha512};
use std::fmt;
use std::str::FromStr;

/// The HMAC hash functions we accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureAlgorithm {
    /// HMAC-SHA1 (verified only).
    Sha1,
    /// HMAC-SHA256 (what we send).
    Sha256,
    /// HMAC-SHA384.
    Sha384,
    /// HMAC-SHA512.
    Sha512,
}

impl SignatureAlgorithm {
    /// The method name in the header.
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureAlgorithm::Sha1 => "sha1",
            SignatureAlgorithm::Sha256 => "sha256",
            SignatureAlgorithm::Sha384 => "sha384",
            SignatureAlgorithm::Sha512 => "sha512",
        }
    }
}

impl fmt::Display for SignatureAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SignatureAlgorithm {
    type Err = SignatureError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sha1" => Ok(SignatureAlgorithm::Sha1),
            "sha256" => Ok(SignatureAlgorithm::Sha256),
            "sha384" => Ok(SignatureAlgorithm::Sha384),
            "sha512" => Ok(SignatureAlgorithm::Sha512),
            other => Err(SignatureError::UnsupportedAlgorithm(other.to_string())),
        }
    }
}

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The header is not `method=hex`.
    #[error("X-Hub-Signature must be method=hexdigest, got {0:?}")]
    Malformed(String),
    /// A method the Recommendation does not name.
    #[error("signature method {0:?} is not accepted (sha1, sha256, sha384 or sha512)")]
    UnsupportedAlgorithm(String),
    /// The HMAC does not match the body: the message must be ignored.
    #[error("signature does not match the body")]
    Mismatch,
}

fn mac_of<M: Mac + KeyInit>(secret: &[u8], body: &[u8]) -> M {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <M as KeyInit>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(body);
    mac
}

/// The header value for `body` signed with `secret`: `sha256=` + lowercase hex.
pub fn sign(algorithm: SignatureAlgorithm, secret: &[u8], body: &[u8]) -> String {
    let digest = match algorithm {
        SignatureAlgorithm::Sha1 => mac_of::<Hmac<Sha1>>(secret, body)
            .finalize()
            .into_bytes()
            .to_vec(),
        SignatureAlgorithm::Sha256 => mac_of::<Hmac<Sha256>>(secret, body)
            .finalize()
            .into_bytes()
            .to_vec(),
        SignatureAlgorithm::Sha384 => mac_of::<Hmac<Sha384>>(secret, body)
            .finalize()
            .into_bytes()
            .to_vec(),
        SignatureAlgorithm::Sha512 => mac_of::<Hmac<Sha512>>(secret, body)
            .finalize()
            .into_bytes()
            .to_vec(),
    };
    format!("{}={}", algorithm, hex::encode(digest))
}

/// Checks an `X-Hub-Signature` header against `body` in constant time.
pub fn verify(
    secret: &[u8],
    body: &[u8],
    header: &str,
) -> Result<SignatureAlgorithm, SignatureError> {
    let (method, hex_digest) = header
        .trim()
        .split_once('=')
        .ok_or_else(|| SignatureError::Malformed(crate::error::excerpt(header)))?;
    let algorithm: SignatureAlgorithm = method.parse()?;
    let expected = hex::decode(hex_digest.trim())
        .map_err(|_| SignatureError::Malformed(crate::error::excerpt(header)))?;
    let ok = match algorithm {
        SignatureAlgorithm::Sha1 => mac_of::<Hmac<Sha1>>(secret, body)
            .verify_slice(&expected)
            .is_ok(),
        SignatureAlgorithm::Sha256 => mac_of::<Hmac<Sha256>>(secret, body)
            .verify_slice(&expected)
            .is_ok(),
        SignatureAlgorithm::Sha384 => mac_of::<Hmac<Sha384>>(secret, body)
            .verify_slice(&expected)
            .is_ok(),
        SignatureAlgorithm::Sha512 => mac_of::<Hmac<Sha512>>(secret, body)
            .verify_slice(&expected)
            .is_ok(),
    };
    if ok {
        Ok(algorithm)
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_test_case_2_hmac_sha256() {
        // RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?".
        let sig = sign(
            SignatureAlgorithm::Sha256,
            b"Jefe",
            b"what do ya want for nothing?",
        );
        assert_eq!(
            sig,
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            verify(b"Jefe", b"what do ya want for nothing?", &sig),
            Ok(SignatureAlgorithm::Sha256)
        );
    }

    #[test]
    fn every_accepted_algorithm_round_trips_and_detects_tampering() {
        for alg in [
            SignatureAlgorithm::Sha256,
            SignatureAlgorithm::Sha384,
            SignatureAlgorithm::Sha512,
        ] {
            let sig = sign(alg, b"secret", b"body");
            assert_eq!(verify(b"secret", b"body", &sig), Ok(alg));
            assert_eq!(
                verify(b"secret", b"bodY", &sig),
                Err(SignatureError::Mismatch)
            );
            assert_eq!(
                verify(b"Secret", b"body", &sig),
                Err(SignatureError::Mismatch)
            );
        }
    }

    #[test]
    fn malformed_and_weak_signatures_are_refused() {
        assert!(matches!(
            verify(b"k", b"b", "nonsense"),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            verify(b"k", b"b", "sha256=zz"),
            Err(SignatureError::Malformed(_))
        ));
        assert_eq!(
            verify(b"k", b"b", "sha1=0000000000000000000000000000000000000000"),
            Err(SignatureError::Mismatch)
        );
        assert!(matches!(
            verify(b"k", b"b", "md5=00000000000000000000000000000000"),
            Err(SignatureError::UnsupportedAlgorithm(_))
        ));
        // A truncated digest never matches.
        let sig = sign(SignatureAlgorithm::Sha256, b"k", b"b");
        assert_eq!(
            verify(b"k", b"b", &sig[..sig.len() - 2]),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn the_four_methods_of_the_recommendation_verify_their_test_vectors() {
        let (key, data) = (b"Jefe", b"what do ya want for nothing?");
        // RFC 2202 test case 2 (HMAC-SHA1) and RFC 4231 test case 2 (HMAC-SHA512).
        let sha1 = "sha1=effcdf6ae5eb2fa2d27416d5f184df9c259a7c79";
        assert_eq!(verify(key, data, sha1), Ok(SignatureAlgorithm::Sha1));
        let sha512 = "sha512=164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737";
        assert_eq!(verify(key, data, sha512), Ok(SignatureAlgorithm::Sha512));
        for alg in [
            SignatureAlgorithm::Sha1,
            SignatureAlgorithm::Sha256,
            SignatureAlgorithm::Sha384,
            SignatureAlgorithm::Sha512,
        ] {
            let sig = sign(alg, key, data);
            assert_eq!(verify(key, data, &sig), Ok(alg));
            // One byte of the body changed: refused.
            assert_eq!(
                verify(key, b"what do ya want for nothing!", &sig),
                Err(SignatureError::Mismatch)
            );
        }
    }
}

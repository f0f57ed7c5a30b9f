//! The key directory (`application/http-message-signatures-directory+json`): a JWK Set a
//! verifier fetches from the URL a request names, so everything in it is hostile. It is read
//! within bounds, and a key whose `kid` is not its thumbprint is refused rather than trusted.

use super::keys::Jwk;
use super::{BotAuthError, err};
use serde::{Deserialize, Serialize};

/// The largest directory read.
pub const MAX_BYTES: usize = 64 << 10;
/// The most keys looked at in one directory.
pub const MAX_KEYS: usize = 32;

/// A parsed directory: its usable Ed25519 keys by thumbprint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    /// (thumbprint, public key bytes, the JWK as published).
    pub keys: Vec<(String, [u8; 32], Jwk)>,
    /// Keys of other types or curves, not usable here.
    pub skipped: usize,
}

#[derive(Deserialize)]
struct Raw {
    keys: Vec<serde_json::Value>,
}

#[derive(Serialize)]
struct Published<'a> {
    keys: &'a [Jwk],
}

impl Directory {
    /// Reads a directory's body. Refuses one that is too large, is not a JWK Set, lists too
    /// many keys, carries a mislabelled Ed25519 key, or has no Ed25519 key at all.
    pub fn parse(body: &[u8]) -> Result<Directory, BotAuthError> {
        if body.len() > MAX_BYTES {
            return Err(err(format!(
                "the directory is {} bytes, more than the {MAX_BYTES} read",
                body.len()
            )));
        }
        let raw: Raw =
            serde_json::from_slice(body).map_err(|e| err(format!("not a JWK Set: {e}")))?;
        if raw.keys.len() > MAX_KEYS {
            return Err(err(format!(
                "the directory lists {} keys, more than {MAX_KEYS}",
                raw.keys.len()
            )));
        }
        let mut dir = Directory::default();
        for value in raw.keys {
            let is_ed25519 = value.get("kty").and_then(|v| v.as_str()) == Some("OKP")
                && value.get("crv").and_then(|v| v.as_str()) == Some("Ed25519");
            if !is_ed25519 {
                dir.skipped += 1;
                continue;
            }
            let jwk: Jwk = serde_json::from_value(value)
                .map_err(|e| err(format!("an Ed25519 key is malformed: {e}")))?;
            if jwk.d.is_some() {
                return Err(err("the directory publishes a private key (d)"));
            }
            let public = jwk.ed25519_public()?;
            dir.keys.push((jwk.thumbprint(), public, jwk));
        }
        if dir.keys.is_empty() {
            return Err(err("the directory holds no Ed25519 key"));
        }
        Ok(dir)
    }

    /// The key with thumbprint `keyid`, if it is valid at `now`.
    pub fn key(&self, keyid: &str, now: i64) -> Option<[u8; 32]> {
        self.keys
            .iter()
            .find(|(id, _, jwk)| id == keyid && jwk.valid_at(now))
            .map(|(_, k, _)| *k)
    }

    /// A directory's body for `keys` (public only).
    pub fn write(keys: &[Jwk]) -> String {
        let public: Vec<Jwk> = keys.iter().map(Jwk::without_private).collect();
        serde_json::to_string_pretty(&Published { keys: &public }).unwrap_or_default() + "\n"
    }
}

//! The signer's keys: Ed25519 JWKs (RFC 8037) with RFC 7638 thumbprints as key ids, kept as a
//! JWK Set whose private members (`d`) never leave the signer's machine.
//!
//! Several keys live in one set so that they rotate without a gap: a new key is added with a
//! `nbf` in the future, published in the directory beside the old one, and used from `nbf` on.

use super::{BotAuthError, err};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use ed25519_dalek::SigningKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One key as a JWK: public always, private (`d`) in the signer's own file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Jwk {
    /// Key type: `OKP`.
    pub kty: String,
    /// Curve: `Ed25519`.
    pub crv: String,
    /// The public key, base64url.
    pub x: String,
    /// The private key, base64url (absent in a directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<String>,
    /// The key id: the thumbprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,
    /// `sig`.
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub use_: Option<String>,
    /// Not before (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    /// Expiry (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
}

/// The RFC 7638 thumbprint of an Ed25519 public key given base64url (RFC 8037 A.3): SHA-256
/// of the required members in lexical order, base64url.
pub fn thumbprint(x: &str) -> String {
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    B64URL.encode(Sha256::digest(canonical.as_bytes()))
}

impl Jwk {
    /// The public JWK of a private key, with its thumbprint as `kid`.
    pub fn public(key: &SigningKey, nbf: Option<i64>, exp: Option<i64>) -> Jwk {
        let x = B64URL.encode(key.verifying_key().as_bytes());
        Jwk {
            kty: "OKP".into(),
            crv: "Ed25519".into(),
            kid: Some(thumbprint(&x)),
            x,
            d: None,
            use_: Some("sig".into()),
            nbf,
            exp,
        }
    }

    /// The 32 bytes of the public key, if this is a well-formed Ed25519 JWK whose `kid`, when
    /// given, is its thumbprint.
    pub fn ed25519_public(&self) -> Result<[u8; 32], BotAuthError> {
        if self.kty != "OKP" || self.crv != "Ed25519" {
            return Err(err(format!(
                "key type {}/{} is not OKP/Ed25519",
                self.kty, self.crv
            )));
        }
        let bytes = B64URL
            .decode(self.x.trim_end_matches('='))
            .map_err(|_| err("x is not base64url"))?;
        let x: [u8; 32] = bytes
            .try_into()
            .map_err(|_| err("x is not 32 bytes long"))?;
        if let Some(kid) = &self.kid
            && *kid != thumbprint(&self.x)
        {
            return Err(err(format!("kid {kid} is not the key's thumbprint")));
        }
        Ok(x)
    }

    /// This key's thumbprint.
    pub fn thumbprint(&self) -> String {
        thumbprint(&self.x)
    }

    /// Whether the key may be used at `now` (between `nbf` and `exp`).
    pub fn valid_at(&self, now: i64) -> bool {
        self.nbf.is_none_or(|n| n <= now) && self.exp.is_none_or(|e| now < e)
    }

    /// This key without its private part.
    pub fn without_private(&self) -> Jwk {
        Jwk {
            d: None,
            kid: Some(self.thumbprint()),
            use_: Some("sig".into()),
            ..self.clone()
        }
    }
}

/// A signer's key set, as kept in its key file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySet {
    /// The keys, oldest first.
    pub keys: Vec<Jwk>,
}

/// A private key ready to sign, with its key id.
#[derive(Clone)]
pub struct ActiveKey {
    /// The Ed25519 key.
    pub key: SigningKey,
    /// Its thumbprint.
    pub keyid: String,
}

impl std::fmt::Debug for ActiveKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ActiveKey({})", self.keyid)
    }
}

impl KeySet {
    /// Reads a key file, refusing anything but Ed25519 keys whose private part matches.
    pub fn parse(text: &str) -> Result<KeySet, BotAuthError> {
        let set: KeySet =
            serde_json::from_str(text).map_err(|e| err(format!("not a JWK Set: {e}")))?;
        if set.keys.is_empty() {
            return Err(err("the key set holds no key"));
        }
        for (i, k) in set.keys.iter().enumerate() {
            private_of(k).map_err(|e| err(format!("key {}: {e}", i + 1)))?;
        }
        Ok(set)
    }

    /// The key file's text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Adds a key made from 32 random bytes, usable from `nbf`.
    pub fn add(&mut self, secret: [u8; 32], nbf: i64) -> String {
        let key = SigningKey::from_bytes(&secret);
        let mut jwk = Jwk::public(&key, Some(nbf), None);
        jwk.d = Some(B64URL.encode(secret));
        let kid = jwk.thumbprint();
        self.keys.push(jwk);
        kid
    }

    /// When the key to sign with may next change after `now` (a key's `nbf` or `exp` passing).
    pub fn next_change(&self, now: i64) -> Option<i64> {
        self.keys
            .iter()
            .flat_map(|k| [k.nbf, k.exp])
            .flatten()
            .filter(|t| *t > now)
            .min()
    }

    /// The key to sign with at `now`: the newest that is valid then.
    pub fn active(&self, now: i64) -> Option<ActiveKey> {
        self.keys
            .iter()
            .filter(|k| k.valid_at(now))
            .max_by_key(|k| k.nbf.unwrap_or(i64::MIN))
            .and_then(|k| {
                Some(ActiveKey {
                    key: private_of(k).ok()?,
                    keyid: k.thumbprint(),
                })
            })
    }

    /// The keys a directory publishes at `now` (expired ones left out), ready to sign its
    /// binding signatures.
    pub fn published(&self, now: i64) -> Vec<ActiveKey> {
        self.keys
            .iter()
            .filter(|k| k.exp.is_none_or(|e| now < e))
            .filter_map(|k| {
                Some(ActiveKey {
                    key: private_of(k).ok()?,
                    keyid: k.thumbprint(),
                })
            })
            .collect()
    }

    /// The public keys, as a directory publishes them (expired ones left out).
    pub fn public(&self, now: i64) -> Vec<Jwk> {
        self.keys
            .iter()
            .filter(|k| k.exp.is_none_or(|e| now < e))
            .map(Jwk::without_private)
            .collect()
    }
}

fn private_of(k: &Jwk) -> Result<SigningKey, BotAuthError> {
    let public = k.ed25519_public()?;
    let d = k.d.as_deref().ok_or_else(|| err("no private part (d)"))?;
    let bytes = B64URL
        .decode(d.trim_end_matches('='))
        .map_err(|_| err("d is not base64url"))?;
    let secret: [u8; 32] = bytes
        .try_into()
        .map_err(|_| err("d is not 32 bytes long"))?;
    let key = SigningKey::from_bytes(&secret);
    if key.verifying_key().as_bytes() != &public {
        return Err(err("d does not belong to x"));
    }
    Ok(key)
}

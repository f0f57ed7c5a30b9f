//! Signing a request: `Signature-Agent` names the signer's directory, `Signature-Input` says
//! what is covered (`@authority` and that `Signature-Agent` member) with `created`,
//! `expires`, `keyid`, `alg`, `nonce` and `tag`, and `Signature` holds the Ed25519 signature
//! over the RFC 9421 signature base.
//!
//! Written here rather than with the `web-bot-auth` crate's signer, which reads the system
//! clock for `created`: the caller's time keeps signing testable (the crate verifies).

use super::TAG;
use super::keys::ActiveKey;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::Signer;

/// The label of our signature in `Signature`, `Signature-Input` and `Signature-Agent`.
pub const LABEL: &str = "sig1";

/// The three headers of a signed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHeaders {
    /// `Signature-Agent`.
    pub agent: String,
    /// `Signature-Input`.
    pub input: String,
    /// `Signature`.
    pub signature: String,
}

impl SignatureHeaders {
    /// The headers as (name, value) pairs.
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            ("signature-agent", self.agent.as_str()),
            ("signature-input", self.input.as_str()),
            ("signature", self.signature.as_str()),
        ]
    }
}

/// What one signature says besides the authority.
#[derive(Debug, Clone, Copy)]
pub struct SignParams<'a> {
    /// The signer's origin (its directory is at [`super::DIRECTORY_PATH`] there).
    pub agent: &'a str,
    /// Unix seconds.
    pub created: i64,
    /// Seconds the signature stays valid.
    pub lifetime: i64,
    /// A fresh random value (base64), so a verifier can refuse a replay.
    pub nonce: &'a str,
}

/// Whether `s` can stand inside a structured-field string as it is.
fn sf_safe(s: &str) -> bool {
    s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// What signs: an Ed25519 key with its key id. Implemented here with ed25519-dalek; the
/// crawler brings a faster implementation of its own (signing is most of its cost per request).
pub trait Ed25519Key {
    /// The key's thumbprint.
    fn keyid(&self) -> &str;
    /// The Ed25519 signature of `message`.
    fn sign_bytes(&self, message: &[u8]) -> [u8; 64];
}

impl Ed25519Key for ActiveKey {
    fn keyid(&self) -> &str {
        &self.keyid
    }

    fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

/// Signs a request to `authority` (`host` or `host:port` as the request's `Host` says), or
/// `None` when the agent URL or the nonce cannot be written into a header.
pub fn sign(key: &impl Ed25519Key, authority: &str, p: SignParams<'_>) -> Option<SignatureHeaders> {
    if !sf_safe(p.agent) || !sf_safe(p.nonce) || !sf_safe(authority) {
        return None;
    }
    let agent_value = format!("\"{}\"", p.agent);
    let params = format!(
        "(\"@authority\" \"signature-agent\";key=\"{LABEL}\");created={};expires={};keyid=\"{}\";alg=\"ed25519\";nonce=\"{}\";tag=\"{TAG}\"",
        p.created,
        p.created.saturating_add(p.lifetime),
        key.keyid(),
        p.nonce
    );
    let base = format!(
        "\"@authority\": {}\n\"signature-agent\";key=\"{LABEL}\": {agent_value}\n\"@signature-params\": {params}",
        authority.to_ascii_lowercase()
    );
    let signature = key.sign_bytes(base.as_bytes());
    Some(SignatureHeaders {
        agent: format!("{LABEL}={agent_value}"),
        input: format!("{LABEL}={params}"),
        signature: format!("{LABEL}=:{}:", B64.encode(signature)),
    })
}

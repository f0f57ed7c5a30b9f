//! Web Bot Auth (draft-meunier-webbotauth-httpsig-protocol, on RFC 9421 HTTP Message
//! Signatures): a crawler signs each request with an Ed25519 key it publishes in a key
//! directory, and a site verifies the signature against that directory.
//!
//! - [`keys`]: the signer's private key set (a JWK Set on disk) and RFC 7638 thumbprints;
//! - [`directory`]: the public key directory a verifier fetches, read within bounds;
//! - [`sign`]: the three request headers, covering `@authority` and `Signature-Agent` (and
//!   the method, target and body digest of a state-changing request);
//! - [`digest`]: `Content-Digest` (RFC 9530), written and checked;
//! - [`binding`]: the directory's own signatures, binding its keys to its authority;
//! - [`verify`]: reading a request's claim, then checking it against a directory;
//! - [`card`]: the Signature Agent Card (draft-meunier-webbotauth-registry).
//!
//! Pure: time, nonces and fetched directories come from the caller.

pub mod binding;
pub mod card;
pub mod digest;
pub mod directory;
pub mod keys;
pub mod sign;
pub mod verify;

/// The `tag` every Web Bot Auth signature carries.
pub const TAG: &str = "web-bot-auth";
/// Where an origin publishes its key directory.
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";
/// The media type of a key directory.
pub const DIRECTORY_MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";
/// The longest signature lifetime accepted (the draft recommends at most 24 hours).
pub const MAX_LIFETIME_SECS: i64 = 24 * 3600;
/// How far in the future a `created` may lie (clocks differ).
pub const CLOCK_SKEW_SECS: i64 = 60;

/// Why key material or a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BotAuthError(pub String);

pub(crate) fn err(what: impl Into<String>) -> BotAuthError {
    BotAuthError(what.into())
}

#[cfg(test)]
mod tests;

//! The webmaster's policy on who is asking (Web Bot Auth): who may subscribe to the hub,
//! and the rates of verified crawlers and of everyone else. The service applies it.

use std::num::NonZeroU32;
use url::Url;

/// Who may subscribe to the hub.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Subscribers {
    /// Anyone (WebSub as specified).
    #[default]
    Any,
    /// Crawlers whose requests carry a verified Web Bot Auth signature.
    Verified,
}

/// The webmaster's policy on identities.
#[derive(Debug, Clone, Default)]
pub struct IdentityPolicy {
    /// Who may subscribe.
    pub(crate) subscribers: Subscribers,
    /// Signers allowed to subscribe (origins publishing their key directory); when any are
    /// named, only they may.
    pub(crate) signers: Vec<Url>,
    /// Requests per minute for each verified crawler on changes, deltas and snapshots.
    pub(crate) rate_verified: Option<NonZeroU32>,
    /// Requests per minute for each address without a verified signature there.
    pub(crate) rate_unverified: Option<NonZeroU32>,
}

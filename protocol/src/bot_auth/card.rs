//! The Signature Agent Card (draft-meunier-webbotauth-registry): who runs a bot, what it is
//! for and where its keys are, as OAuth client metadata with a `web_bot_auth` extension.

use super::keys::Jwk;
use serde::Serialize;

/// What the card says.
#[derive(Debug, Clone, Serialize)]
pub struct Card {
    /// The card's own URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The bot's name.
    pub client_name: String,
    /// A page about the bot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_uri: Option<String>,
    /// How to reach its operator (`mailto:` URIs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub contacts: Vec<String>,
    /// The key directory.
    pub jwks_uri: String,
    /// The keys themselves.
    pub jwks: Keys,
    /// The Web Bot Auth extension.
    pub web_bot_auth: Extension,
}

/// A JWK Set.
#[derive(Debug, Clone, Serialize)]
pub struct Keys {
    /// The public keys.
    pub keys: Vec<Jwk>,
}

/// The `web_bot_auth` members.
#[derive(Debug, Clone, Serialize)]
pub struct Extension {
    /// The `User-Agent` it sends.
    #[serde(rename = "expected-user-agent")]
    pub expected_user_agent: String,
    /// Its robots.txt product token.
    #[serde(rename = "rfc9309-product-token")]
    pub product_token: String,
    /// Whether it obeys robots.txt.
    #[serde(rename = "rfc9309-compliance")]
    pub compliance: bool,
    /// `crawler`: it runs on its own.
    pub trigger: String,
    /// What the content is used for (aipref terms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// How it can be slowed down.
    #[serde(rename = "rate-control")]
    pub rate_control: String,
}

impl Card {
    /// The card as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }
}

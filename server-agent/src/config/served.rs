//! What the agent serves, each checked on its own: its HTTP service (changes, deltas, hub),
//! the IndexNow endpoint it posts to, and its console.

use super::checks::{check_base_url, cidrs, default_public_url, given};
use super::error::ConfigError;
use super::identity;
use super::options::AgentOptions;
use std::time::Duration;
use url::Url;

/// Where the console listens and the token that guards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// The address.
    pub(crate) addr: std::net::SocketAddr,
    /// The token every request must carry (required off loopback).
    pub(crate) token: Option<String>,
}

/// Settings of the HTTP service (changes, deltas, hub, metrics).
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Where it listens.
    pub listen: std::net::SocketAddr,
    /// Its public URL prefix (ends with `/`), e.g. `https://www.example.org/.well-known/webcoop/`.
    pub public_url: Url,
    /// Networks the hub may call back although they are not public.
    pub(crate) allow_callback_nets: Vec<ipnet::IpNet>,
    /// How long the hub gathers changes into one delivery.
    pub(crate) hub_window: Duration,
    /// How long a subscriber may keep failing before it is dropped.
    pub(crate) hub_drop_after: Duration,
    /// Time limit of a delivery or verification of intent.
    pub delivery_timeout: Duration,
    /// Most subscriptions the hub holds.
    pub(crate) max_subscriptions: usize,
    /// Proxies whose `X-Forwarded-For` the hub believes.
    pub(crate) trusted_proxies: Vec<ipnet::IpNet>,
    /// The policy on who is asking (Web Bot Auth).
    pub identity: identity::IdentityPolicy,
}

/// Settings of IndexNow pings.
#[derive(Debug, Clone)]
pub struct IndexNowConfig {
    /// Where to post.
    pub endpoint: Url,
    /// The site's key.
    pub(crate) key: String,
    /// Networks the endpoint may be in although not public (`--allow-callback-net`).
    pub(crate) allow_nets: Vec<ipnet::IpNet>,
}

/// The identity policy from its options: signers must be origins, rates above zero.
fn identity_policy(
    subscribers: Option<identity::Subscribers>,
    signers: Vec<String>,
    rate_verified: Option<u32>,
    rate_unverified: Option<u32>,
) -> Result<identity::IdentityPolicy, ConfigError> {
    let signers = signers
        .iter()
        .map(|s| {
            let url = Url::parse(s)
                .map_err(|e| ConfigError::Value(format!("--hub-signer {s:?}: {e}")))?;
            if !matches!(url.scheme(), "https" | "http")
                || !matches!(url.path(), "" | "/")
                || url.query().is_some()
            {
                return Err(ConfigError::Value(format!(
                    "--hub-signer {s:?} is not an origin (https://HOST[:PORT])"
                )));
            }
            Ok(url)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rate = |name: &str, v: Option<u32>| match v {
        None => Ok(None),
        Some(n) => std::num::NonZeroU32::new(n).map(Some).ok_or_else(|| {
            ConfigError::Value(format!(
                "--{name} 0: a rate is at least 1 a minute (leave it unset for none)"
            ))
        }),
    };
    Ok(identity::IdentityPolicy {
        subscribers: subscribers.unwrap_or_default(),
        signers,
        rate_verified: rate("rate-verified", rate_verified)?,
        rate_unverified: rate("rate-unverified", rate_unverified)?,
    })
}

/// The service's settings, when `--listen` is given.
pub(super) fn service(
    o: &AgentOptions,
    base_url: &Url,
    allow_callback_nets: &[ipnet::IpNet],
) -> Result<Option<ServiceConfig>, ConfigError> {
    let Some(listen) = &o.listen else {
        return Ok(None);
    };
    let listen = listen.parse().map_err(|e| {
        ConfigError::Value(format!(
            "--listen {listen:?}: {e} (expected an address such as 127.0.0.1:8081)"
        ))
    })?;
    let public_url = match &o.public_url {
        Some(u) => check_base_url(u)?,
        None => default_public_url(base_url),
    };
    let trusted = o.trusted_proxy.clone().unwrap_or_default();
    Ok(Some(ServiceConfig {
        listen,
        public_url,
        allow_callback_nets: allow_callback_nets.to_vec(),
        hub_window: Duration::from_millis(given(o.hub_window_ms, "hub_window_ms")?),
        hub_drop_after: Duration::from_secs(given(o.hub_drop_after, "hub_drop_after")?),
        delivery_timeout: Duration::from_secs(10),
        max_subscriptions: given(o.hub_max_subscriptions, "hub_max_subscriptions")?,
        trusted_proxies: cidrs("--trusted-proxy", &trusted)?,
        identity: identity_policy(
            o.hub_subscribers,
            o.hub_signer.clone().unwrap_or_default(),
            o.rate_verified,
            o.rate_unverified,
        )?,
    }))
}

/// IndexNow's settings: both the endpoint and the key, or neither.
pub(super) fn indexnow(
    o: &AgentOptions,
    allow_nets: Vec<ipnet::IpNet>,
) -> Result<Option<IndexNowConfig>, ConfigError> {
    let (endpoint, key) = match (&o.indexnow_endpoint, &o.indexnow_key) {
        (Some(endpoint), Some(key)) => (endpoint, key),
        (None, None) => return Ok(None),
        _ => {
            return Err(ConfigError::Value(
                "IndexNow needs both --indexnow-endpoint and --indexnow-key".into(),
            ));
        }
    };
    let endpoint = Url::parse(endpoint)
        .map_err(|e| ConfigError::Value(format!("--indexnow-endpoint {endpoint:?}: {e}")))?;
    if !(8..=128).contains(&key.len())
        || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return Err(ConfigError::Value(format!(
            "--indexnow-key {key:?}: IndexNow keys are 8 to 128 letters, digits or dashes"
        )));
    }
    Ok(Some(IndexNowConfig {
        endpoint,
        key: key.clone(),
        allow_nets,
    }))
}

/// The console's settings, when `--console` is given: never on the public service's address,
/// off loopback only with a token.
pub(super) fn console(
    o: &AgentOptions,
    service: Option<&ServiceConfig>,
) -> Result<Option<ConsoleSettings>, ConfigError> {
    let Some(addr) = &o.console else {
        return Ok(None);
    };
    let addr: std::net::SocketAddr = addr.parse().map_err(|e| {
        ConfigError::Value(format!(
            "--console {addr:?}: {e} (expected an address such as 127.0.0.1:8082)"
        ))
    })?;
    if service.is_some_and(|s| s.listen == addr) {
        return Err(ConfigError::Value(
            "--console must not be the public --listen address".into(),
        ));
    }
    let token = match &o.console_token_file {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                ConfigError::Value(format!("--console-token-file {}: {e}", path.display()))
            })?;
            Some(text.lines().next().unwrap_or("").trim().to_string())
        }
    };
    webcoop_daemon::console::access::check_bind(addr.ip(), token.as_deref())
        .map_err(|e| ConfigError::Value(e.to_string()))?;
    Ok(Some(ConsoleSettings { addr, token }))
}

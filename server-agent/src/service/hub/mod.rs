//! The WebSub hub for the changes topic (W3C Recommendation, 23 January 2018).

pub mod dispatch;
pub mod document;
pub mod store;
pub mod subscribe;

use super::callback_net::CallbackPolicy;
use governor::{DefaultKeyedRateLimiter, Quota};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;
use tokio::sync::mpsc;
use webcoop_protocol::websub::LeasePolicy;

/// What the subscribe endpoint needs of the hub.
pub struct HubHandle {
    /// To the dispatcher.
    pub commands: mpsc::Sender<dispatch::Command>,
    /// Which callbacks may be called.
    pub policy: CallbackPolicy,
    /// Subscription requests per client address.
    pub limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// Lease lengths.
    pub leases: LeasePolicy,
    /// The client for verifications and deliveries.
    pub client: reqwest::Client,
    /// Time limit of a verification.
    pub timeout: Duration,
}

/// The content coding a callback's answer asks deliveries to use (RFC 7694 `Accept-Encoding`).
pub fn accepted_coding(
    headers: &reqwest::header::HeaderMap,
) -> Option<webcoop_protocol::websub::BodyCoding> {
    let accepts = headers
        .get_all(reqwest::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    webcoop_protocol::websub::choose_body_coding(&accepts)
}

/// Subscription requests allowed per client address: 30 a minute, 10 at once.
pub fn subscribe_limiter() -> DefaultKeyedRateLimiter<IpAddr> {
    let per_minute = NonZeroU32::new(30).unwrap_or(NonZeroU32::MIN);
    let burst = NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN);
    governor::RateLimiter::keyed(Quota::per_minute(per_minute).allow_burst(burst))
}

/// The hub's HTTP client: no redirects (the spec counts them as failures), host names resolved
/// through the callback policy.
pub fn http_client(policy: &CallbackPolicy) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(std::sync::Arc::new(policy.clone()))
        .connect_timeout(Duration::from_secs(5))
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!(
            "webcoop-agent/",
            env!("CARGO_PKG_VERSION"),
            " (WebSub hub)"
        ))
        .build()
}

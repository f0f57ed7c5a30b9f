//! The WebSub hub for the changes topic (W3C Recommendation, 23 January 2018).

pub(crate) mod dispatch;
pub(crate) mod document;
pub(crate) mod store;
pub(crate) mod subscribe;

use super::callback_net::CallbackPolicy;
use governor::{DefaultKeyedRateLimiter, Quota};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use webcoop_protocol::websub::LeasePolicy;

/// Longest callback URL accepted.
pub(crate) const MAX_CALLBACK_LEN: usize = 2048;
/// Largest subscription request body accepted.
pub(crate) const MAX_REQUEST_BYTES: usize = 16 << 10;
/// Verifications of intent under way at once; more requests wait for none of them (503).
pub(crate) const MAX_PENDING_VERIFICATIONS: usize = 64;

/// The current subscriptions as the subscribe endpoint sees them: each callback's secret. The
/// dispatcher keeps it; the endpoint reads it to enforce the cap and to protect secrets.
#[derive(Clone, Default)]
pub(crate) struct Registry(Arc<RwLock<HashMap<String, Option<String>>>>);

impl Registry {
    /// The secret of the subscription at `callback`, if there is one (`Some(None)`: no secret).
    pub(crate) fn secret_of(&self, callback: &str) -> Option<Option<String>> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(callback)
            .cloned()
    }

    /// How many subscriptions there are.
    pub(crate) fn len(&self) -> usize {
        self.0.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Records a subscription.
    pub(crate) fn set(&self, callback: &str, secret: Option<String>) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(callback.to_string(), secret);
    }

    /// Forgets a subscription.
    pub(crate) fn remove(&self, callback: &str) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(callback);
    }
}

/// The network a client address belongs to for rate limiting: its /24 (IPv4) or /64 (IPv6),
/// since one machine holds a whole prefix of addresses as easily as one.
pub(crate) fn client_network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(Ipv4Addr::from(u32::from(v4) & 0xFFFF_FF00)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => client_network(IpAddr::V4(v4)),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

/// What the subscribe endpoint needs of the hub.
pub(crate) struct HubHandle {
    /// To the dispatcher.
    pub(crate) commands: mpsc::Sender<dispatch::Command>,
    /// Which callbacks may be called.
    pub(crate) policy: CallbackPolicy,
    /// Subscription requests per client address.
    pub(crate) limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// Subscription requests per client network (/24, /64).
    pub(crate) network_limiter: DefaultKeyedRateLimiter<IpAddr>,
    /// Verifications of intent under way.
    pub(crate) verifications: Arc<Semaphore>,
    /// The current subscriptions.
    pub(crate) registry: Registry,
    /// Most subscriptions held.
    pub(crate) max_subscriptions: usize,
    /// Lease lengths.
    pub(crate) leases: LeasePolicy,
    /// The client for verifications and deliveries.
    pub(crate) client: reqwest::Client,
    /// Time limit of a verification.
    pub(crate) timeout: Duration,
    /// Proxies whose `X-Forwarded-For` is believed (`--trusted-proxy`).
    pub(crate) trusted_proxies: Vec<ipnet::IpNet>,
}

impl HubHandle {
    /// The hub of `service`, sending to its dispatcher through `commands`, calling back
    /// with `client` where `policy` allows.
    pub(crate) fn new(
        service: &crate::config::ServiceConfig,
        commands: mpsc::Sender<dispatch::Command>,
        registry: Registry,
        (client, policy): (&reqwest::Client, &CallbackPolicy),
    ) -> HubHandle {
        HubHandle {
            commands,
            policy: policy.clone(),
            limiter: subscribe_limiter(),
            network_limiter: network_limiter(),
            verifications: Arc::new(Semaphore::new(MAX_PENDING_VERIFICATIONS)),
            registry,
            max_subscriptions: service.max_subscriptions,
            leases: LeasePolicy::default(),
            client: client.clone(),
            timeout: service.delivery_timeout,
            trusted_proxies: service.trusted_proxies.clone(),
        }
    }
}

/// The content coding a callback's answer asks deliveries to use (RFC 7694 `Accept-Encoding`);
/// on a tie, zstd for CBOR deliveries and gzip for Atom ones.
pub(crate) fn accepted_coding(
    headers: &reqwest::header::HeaderMap,
    cbor: bool,
) -> Option<webcoop_protocol::websub::BodyCoding> {
    use webcoop_protocol::websub::BodyCoding;
    let accepts = headers
        .get_all(reqwest::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let tie = if cbor {
        BodyCoding::Zstd
    } else {
        BodyCoding::Gzip
    };
    webcoop_protocol::websub::choose_body_coding_preferring(&accepts, tie)
}

/// Whether a callback's answer asks for deliveries in CBOR (`Accept` naming its media type).
pub(crate) fn accepts_cbor(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get_all(reqwest::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let kind = parts.next().unwrap_or("").trim();
            // `q=0` says "not this one"; a weight that does not parse counts as that, as it
            // does for `Accept-Encoding`.
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().map_or(true, |q| q <= 0.0))
            });
            kind.eq_ignore_ascii_case(webcoop_protocol::changes_feed::CBOR_MEDIA_TYPE) && !refused
        })
}

/// Subscription requests allowed per client address: 30 a minute, 10 at once.
pub(crate) fn subscribe_limiter() -> DefaultKeyedRateLimiter<IpAddr> {
    let per_minute = NonZeroU32::new(30).unwrap_or(NonZeroU32::MIN);
    let burst = NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN);
    governor::RateLimiter::keyed(Quota::per_minute(per_minute).allow_burst(burst))
}

/// Subscription requests allowed per client network: 120 a minute, 30 at once.
pub(crate) fn network_limiter() -> DefaultKeyedRateLimiter<IpAddr> {
    let per_minute = NonZeroU32::new(120).unwrap_or(NonZeroU32::MIN);
    let burst = NonZeroU32::new(30).unwrap_or(NonZeroU32::MIN);
    governor::RateLimiter::keyed(Quota::per_minute(per_minute).allow_burst(burst))
}

/// The hub's HTTP client: no redirects (the spec counts them as failures), host names resolved
/// through the callback policy, and no proxy from the environment (a proxy would resolve and
/// connect on the hub's behalf, past the policy).
pub(crate) fn http_client(policy: &CallbackPolicy) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(policy.resolver())
        .connect_timeout(Duration::from_secs(5))
        .pool_idle_timeout(Duration::from_secs(30))
        .user_agent(concat!(
            "webcoop-agent/",
            env!("CARGO_PKG_VERSION"),
            " (WebSub hub)"
        ))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_limited_by_their_network_too() {
        for (ip, net) in [
            ("203.0.113.77", "203.0.113.0"),
            ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"),
            ("::ffff:198.51.100.9", "198.51.100.0"),
        ] {
            assert_eq!(
                client_network(ip.parse().unwrap()),
                net.parse::<IpAddr>().unwrap(),
                "{ip}"
            );
        }
    }

    #[test]
    fn cbor_is_sent_only_to_a_callback_that_asks_for_it_and_does_not_refuse_it() {
        use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
        let with = |values: &[&[u8]]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(ACCEPT, HeaderValue::from_bytes(v).unwrap());
            }
            accepts_cbor(&h)
        };
        assert!(with(
            &[webcoop_protocol::websub::CALLBACK_ACCEPT.as_bytes()]
        ));
        assert!(with(&[
            b"text/html",
            b"APPLICATION/VND.WEBCOOP.CHANGES+CBOR; q=0.5"
        ]));
        assert!(!with(&[]));
        assert!(!with(&[b"application/atom+xml, */*"]));
        assert!(!with(&[b"application/vnd.webcoop.changes+cbor;q=0"]));
        assert!(!with(&[b"application/vnd.webcoop.changes+cbor-not"]));
        // Not text: ignored, never a panic.
        assert!(!with(&[b"\xff\xfe application/vnd.webcoop.changes+cbor"]));
        assert!(!with(&[
            &b"application/vnd.webcoop.changes+cbor;q=".repeat(1000)[..]
        ]));
    }
}

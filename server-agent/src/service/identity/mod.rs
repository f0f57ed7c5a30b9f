//! Who is asking: the Web Bot Auth signature of each request to the service, verified
//! against the key directory it names, and the webmaster's policy on that identity (hub
//! subscriptions only from verified crawlers, or from listed ones; rates per crawler on
//! `changes`, `delta/` and, through the web server's `auth_request`, snapshots).
//!
//! Unsigned requests keep the behaviour they always had unless the policy says otherwise.
//! A signature that does not verify is never an identity: it counts as unsigned where that is
//! allowed and is refused where a verified one is required.

pub(crate) mod directories;
pub(crate) mod replays;

use super::{ServiceState, plain};
pub(crate) use crate::config::identity::{IdentityPolicy, Subscribers};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use directories::Directories;
use governor::{DefaultKeyedRateLimiter, Quota};
use replays::Replays;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use url::Url;
use webcoop_protocol::bot_auth::digest::check_content_digest;
use webcoop_protocol::bot_auth::sign::{Component, PAGE_REQUEST, STATE_CHANGING, accept_signature};
use webcoop_protocol::bot_auth::verify::{Reading, RequestView, read};

/// What a request's signature came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Identity {
    /// No Web Bot Auth signature.
    Unsigned,
    /// Verified against the key directory at this URL, with this key.
    Verified { directory: String, keyid: String },
    /// Cannot be valid: forged, expired, replayed, made for another site.
    Invalid(String),
    /// Could not be decided: the directory could not be fetched, or lacks the key.
    Unverified(String),
}

impl Identity {
    fn outcome(&self) -> &'static str {
        match self {
            Identity::Unsigned => "unsigned",
            Identity::Verified { .. } => "verified",
            Identity::Invalid(_) => "invalid",
            Identity::Unverified(_) => "unverified",
        }
    }
}

/// The identity checks the service runs.
pub(crate) struct Identities {
    policy: IdentityPolicy,
    directories: Directories,
    replays: Replays,
    authority: String,
    scheme: String,
    verified_limiter: Option<DefaultKeyedRateLimiter<String>>,
    unverified_limiter: Option<DefaultKeyedRateLimiter<IpAddr>>,
    checks: AtomicU64,
}

fn limiter<K: std::hash::Hash + Eq + Clone>(
    per_minute: Option<NonZeroU32>,
) -> Option<DefaultKeyedRateLimiter<K>> {
    per_minute.map(|n| governor::RateLimiter::keyed(Quota::per_minute(n).allow_burst(n)))
}

/// What a hub POST's signature must cover to count: its method, whole target and body
/// digest, so that a signature made for a page request (or another POST) cannot be replayed
/// to subscribe.
const HUB_POST: &[Component] = STATE_CHANGING;

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Identities {
    /// The checks for the site at `base_url`.
    pub(crate) fn new(
        policy: IdentityPolicy,
        base_url: &Url,
        directories: Directories,
    ) -> Identities {
        let host = base_url.host_str().unwrap_or_default();
        let authority = match base_url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        Identities {
            verified_limiter: limiter(policy.rate_verified),
            unverified_limiter: limiter(policy.rate_unverified),
            policy,
            directories,
            replays: Replays::default(),
            authority,
            scheme: base_url.scheme().to_string(),
            checks: AtomicU64::new(0),
        }
    }

    /// What the signature of a request (its method, URI and headers) comes to. `body` is
    /// given where the signature must also cover the method, target and body (hub POSTs):
    /// one covering less is not an identity there.
    pub(crate) async fn identify(
        &self,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
        request_headers: &axum::http::HeaderMap,
        body: Option<&[u8]>,
    ) -> Identity {
        let headers: Vec<(&str, &str)> = request_headers
            .iter()
            .filter(|(n, _)| n.as_str().starts_with("signature") || n.as_str() == "content-digest")
            .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
            .collect();
        if headers.is_empty() {
            return Identity::Unsigned;
        }
        let host = request_headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        let view = RequestView {
            scheme: &self.scheme,
            authority: host,
            method: method.as_str(),
            path: uri.path(),
            query: uri.query(),
            headers: &headers,
        };
        let now = unix_now();
        let claim = match read(&view, &self.authority, now, true) {
            Reading::Unsigned => return Identity::Unsigned,
            Reading::Invalid(e) => return Identity::Invalid(e.to_string()),
            Reading::Claim(c) => c,
        };
        if let Some(body) = body {
            if !claim.covers(HUB_POST) {
                return Identity::Invalid(
                    "a hub request's signature must cover @method, @target-uri, @authority and \
                     content-digest (this one was made for another kind of request)"
                        .into(),
                );
            }
            let digests: Vec<&str> = request_headers
                .get_all("content-digest")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            if let Err(e) = check_content_digest(&digests, body) {
                return Identity::Invalid(format!("the signed request's body: {e}"));
            }
        }
        if claim.directory.scheme() == "http" && !self.directories.http_allowed(&claim.directory) {
            return Identity::Invalid(format!(
                "{}: a key directory must be https",
                claim.directory
            ));
        }
        let directory = claim.directory.to_string();
        let keyid = claim.keyid.clone();
        let (nonce, expires) = (claim.nonce.clone(), claim.expires);
        let dir = match self.directories.get(&claim.directory, &keyid).await {
            Ok(d) => d,
            Err(why) => return Identity::Unverified(why),
        };
        if dir.key(&keyid, now).is_none() {
            // Not proof of a forgery: a key added to the directory since the copy was fetched
            // is known after the next fetch (at most every few seconds).
            return Identity::Unverified(format!("{directory} holds no valid key {keyid} (yet)"));
        }
        if let Err(e) = claim.verify(&dir, now) {
            return Identity::Invalid(e.to_string());
        }
        if let Some(nonce) = nonce
            && let Err(why) = self.replays.first_use(&directory, &nonce, expires, now)
        {
            return Identity::Invalid(why.to_string());
        }
        Identity::Verified { directory, keyid }
    }

    /// Why the hub refuses a subscription from `who`, if it does.
    fn refuses_subscription(&self, who: &Identity) -> Option<String> {
        let must_verify =
            self.policy.subscribers == Subscribers::Verified || !self.policy.signers.is_empty();
        if !must_verify {
            return None;
        }
        let Identity::Verified { directory, .. } = who else {
            let why = match who {
                Identity::Invalid(e) | Identity::Unverified(e) => e.clone(),
                _ => "the request is not signed".into(),
            };
            return Some(format!(
                "this hub takes subscriptions from verified crawlers only (Web Bot Auth): {why}"
            ));
        };
        let listed = self.policy.signers.is_empty()
            || self.policy.signers.iter().any(|s| {
                s.join(webcoop_protocol::bot_auth::DIRECTORY_PATH)
                    .is_ok_and(|d| d.as_str() == directory)
            });
        (!listed).then(|| format!("{directory} is not among the crawlers this hub serves"))
    }

    /// Whether `who` (else its address) has used its rate.
    fn limited(&self, who: &Identity, client: IpAddr) -> bool {
        if self.checks.fetch_add(1, Ordering::Relaxed) % 4096 == 4095 {
            if let Some(l) = &self.verified_limiter {
                l.retain_recent();
            }
            if let Some(l) = &self.unverified_limiter {
                l.retain_recent();
            }
        }
        match who {
            Identity::Verified { directory, .. } => self
                .verified_limiter
                .as_ref()
                .is_some_and(|l| l.check_key(directory).is_err()),
            _ => self
                .unverified_limiter
                .as_ref()
                .is_some_and(|l| l.check_key(&client).is_err()),
        }
    }
}

/// Which endpoint a path is, for the policy.
fn governed(path: &str) -> Option<&'static str> {
    let rest = path.strip_prefix("/.well-known/webcoop/")?;
    match rest.split('/').next()? {
        "changes" => Some("changes"),
        "delta" => Some("delta"),
        "hub" => Some("hub"),
        "authorize" => Some("snapshot"),
        _ => None,
    }
}

/// A refusal; `ask` names what a signature should cover when the client is asked to sign
/// (`Accept-Signature`, as the draft asks of a refusing site).
fn refused(status: StatusCode, why: &str, ask: Option<&[Component]>) -> Response {
    let mut r = plain(status, &format!("{why}\n"));
    if let Some(components) = ask
        && let Ok(v) = HeaderValue::from_str(&accept_signature(components))
    {
        r.headers_mut().insert("accept-signature", v);
    }
    if status == StatusCode::TOO_MANY_REQUESTS {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
    }
    r
}

/// The middleware: identifies the requests to `changes`, `delta/`, `hub` and `authorize`,
/// counts them by identity and applies the policy.
pub(crate) async fn identify(
    State(s): State<Arc<ServiceState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let Some(endpoint) = governed(request.uri().path()) else {
        return next.run(request).await;
    };
    let ids = &s.identities;
    let signed = request
        .headers()
        .keys()
        .any(|n| n.as_str().starts_with("signature"));
    let hub_post = endpoint == "hub" && request.method() == axum::http::Method::POST;
    // A signed hub POST is read whole (it is small) so its digest can be checked; the
    // handler gets the same bytes.
    let (request, body) = if signed && hub_post {
        let (parts, body) = request.into_parts();
        match axum::body::to_bytes(body, super::hub::MAX_REQUEST_BYTES).await {
            Ok(bytes) => (
                Request::from_parts(parts, axum::body::Body::from(bytes.clone())),
                Some(bytes),
            ),
            Err(_) => {
                return refused(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request body is larger than a hub request may be",
                    None,
                );
            }
        }
    } else {
        (request, None)
    };
    // An unsigned request (most) is known at once; a signed one may wait for its directory,
    // across which the request itself cannot be held.
    let who = if signed {
        let (method, uri, headers) = (
            request.method().clone(),
            request.uri().clone(),
            request.headers().clone(),
        );
        ids.identify(&method, &uri, &headers, body.as_deref()).await
    } else {
        Identity::Unsigned
    };
    s.metrics.signatures(who.outcome());
    let name = match &who {
        Identity::Verified { directory, .. } => Some(directory.as_str()),
        _ => None,
    };
    s.metrics.identity_request(name, endpoint);
    match &who {
        Identity::Verified { directory, keyid } => s.activity.identity_seen(directory, keyid, None),
        Identity::Invalid(why) | Identity::Unverified(why) => {
            tracing::debug!("{endpoint}: signature not accepted: {why}");
            s.activity.identity_refused(why);
        }
        Identity::Unsigned => {}
    }
    let client = super::client_ip::client_ip(peer, request.headers(), &s.hub.trusted_proxies);
    if matches!(who, Identity::Verified { .. }) {
        // A verified crawler: its reads of pages in the access log are not visitors'.
        let agent = request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        s.activity.verified_client(format!("{client} {agent}"));
    }
    if endpoint == "hub"
        && request.method() == axum::http::Method::POST
        && let Some(why) = ids.refuses_subscription(&who)
    {
        return refused(StatusCode::FORBIDDEN, &why, Some(HUB_POST));
    }
    if endpoint != "hub" && ids.limited(&who, client) {
        s.metrics.rate_limited(who.outcome());
        let verified = matches!(who, Identity::Verified { .. });
        let why = if verified {
            "too many requests from this crawler; try again in a minute"
        } else {
            "too many requests from this address; a crawler with a verified signature (Web Bot Auth) has its own rate"
        };
        // nginx's auth_request passes on only 401 and 403 (anything else is its own 500).
        let status = if endpoint == "snapshot" {
            StatusCode::FORBIDDEN
        } else {
            StatusCode::TOO_MANY_REQUESTS
        };
        return refused(status, why, (!verified).then_some(PAGE_REQUEST));
    }
    next.run(request).await
}

/// `authorize`: the web server's `auth_request` for snapshots. The middleware has let the
/// request through by then: an empty yes.
pub(crate) async fn authorize() -> StatusCode {
    StatusCode::NO_CONTENT
}

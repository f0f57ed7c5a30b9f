//! `POST hub`: subscription requests, answered 202 Accepted at once and confirmed by a
//! verification of intent to the callback; refused with a 4xx naming the problem when the
//! request is malformed, the topic is not ours, the callback is not allowed, or the client asks
//! too often.

use super::super::client_ip::client_ip;
use super::super::{ServiceState, plain};
use super::dispatch::Command;
use super::document::Format;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use webcoop_protocol::websub::{Challenge, IntentVerification, Mode, SubscriptionRequest};

/// The endpoint.
pub(crate) async fn hub(
    State(s): State<Arc<ServiceState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let client = client_ip(peer, &headers, &s.hub.trusted_proxies);
    if let Some(refused) = rate_limited(&s, client) {
        return refused;
    }
    // WebSub publishers tell the hub of changes at the same address (in origin mode; a
    // docroot's changes are seen, not told).
    if s.notices.is_some()
        && form_urlencoded::parse(&body).any(|(k, v)| k == "hub.mode" && v == "publish")
    {
        return crate::service::notify::take(&s, peer, &uri, &headers, &body);
    }
    if body.len() > super::MAX_REQUEST_BYTES {
        return plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            "a subscription request is a short form; this one is too large\n",
        );
    }
    let request = match SubscriptionRequest::from_form(&body) {
        Ok(r) => r,
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("{e}\n")),
    };
    if request.callback.as_str().len() > super::MAX_CALLBACK_LEN {
        return plain(
            StatusCode::BAD_REQUEST,
            &format!(
                "hub.callback is longer than {} bytes\n",
                super::MAX_CALLBACK_LEN
            ),
        );
    }
    if let Some(refused) = subscription_refused(&s, &request, &headers, &body) {
        return refused;
    }
    if request.topic != s.topic && request.topic != s.resourcesync_topic {
        return plain(
            StatusCode::BAD_REQUEST,
            &format!(
                "hub.topic {} is not a topic of this hub; subscribe to {} (webcoop changes) or {} (ResourceSync change notifications)\n",
                request.topic, s.topic, s.resourcesync_topic
            ),
        );
    }
    if let Err(reason) = s.hub.policy.check(&request.callback).await {
        return plain(StatusCode::FORBIDDEN, &format!("{reason}\n"));
    }
    let Ok(permit) = s.hub.verifications.clone().try_acquire_owned() else {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many verifications of intent under way; try again shortly\n",
        );
        r.headers_mut().insert(
            header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("10"),
        );
        return r;
    };
    let state = s.clone();
    tokio::spawn(async move {
        verify(state, request).await;
        drop(permit);
    });
    (StatusCode::ACCEPTED, "verification of intent follows\n").into_response()
}

/// A subscription request from a client over its rate (by address, then by network).
fn rate_limited(s: &ServiceState, client: std::net::IpAddr) -> Option<Response> {
    let limited = if s.hub.limiter.check_key(&client).is_err() {
        Some("this address")
    } else if s
        .hub
        .network_limiter
        .check_key(&super::client_network(client))
        .is_err()
    {
        Some("this network")
    } else {
        None
    };
    let who = limited?;
    let mut r = plain(
        StatusCode::TOO_MANY_REQUESTS,
        &format!("too many subscription requests from {who}; try again in a minute\n"),
    );
    r.headers_mut().insert(
        header::RETRY_AFTER,
        axum::http::HeaderValue::from_static("60"),
    );
    Some(r)
}

/// A subscription the hub refuses before verifying intent: over the most it holds, or a
/// renewal that would hand deliveries to whoever sent it (a new secret must be signed with
/// the old one, or the old subscription ended, verified, first).
fn subscription_refused(
    s: &ServiceState,
    request: &SubscriptionRequest,
    headers: &HeaderMap,
    body: &[u8],
) -> Option<Response> {
    if request.mode != Mode::Subscribe {
        return None;
    }
    match &s.hub.registry.secret_of(request.callback.as_str()) {
        None if s.hub.registry.len() >= s.hub.max_subscriptions => {
            return Some(plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "this hub holds as many subscriptions as it may; try again later\n",
            ));
        }
        Some(old) if *old != request.secret => {
            let signed = old.as_deref().is_some_and(|old| {
                headers
                    .get("x-hub-signature")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|sig| {
                        webcoop_protocol::websub::verify(old.as_bytes(), body, sig).is_ok()
                    })
            });
            if !signed {
                return Some(plain(
                    StatusCode::CONFLICT,
                    "this callback is subscribed with another hub.secret; sign the request \
                     with the current one (X-Hub-Signature) or unsubscribe first\n",
                ));
            }
        }
        _ => {}
    }
    None
}

/// Reads at most `limit` bytes of a response body; `None` past it.
async fn bounded_body(mut response: reqwest::Response, limit: usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() > limit {
            return None;
        }
    }
    Some(body)
}

/// The verification of intent (WebSub §5.3): the subscriber must echo a fresh challenge.
async fn verify(s: Arc<ServiceState>, request: SubscriptionRequest) {
    let mut random = [0u8; 32];
    rand::fill(&mut random);
    let challenge = Challenge::from_random(random);
    let lease =
        (request.mode == Mode::Subscribe).then(|| s.hub.leases.grant(request.lease_seconds));
    let url = IntentVerification {
        mode: request.mode,
        topic: request.topic.clone(),
        challenge: challenge.as_str().to_string(),
        lease_seconds: lease,
    }
    .callback_url(&request.callback);
    let (mut coding, mut cbor) = (None, false);
    let confirmed = match s.hub.client.get(url).timeout(s.hub.timeout).send().await {
        Ok(r) if r.status().is_success() => {
            // RFC 7694: the callback lists the codings it accepts for the deliveries to come.
            cbor = super::accepts_cbor(r.headers());
            coding = super::accepted_coding(r.headers(), cbor);
            bounded_body(r, 1024)
                .await
                .is_some_and(|b| challenge.echoed_by(&b))
        }
        Ok(r) => {
            tracing::info!(callback = %request.callback, status = %r.status(), "verification of intent refused");
            false
        }
        Err(e) => {
            tracing::info!(callback = %request.callback, "verification of intent failed: {e}");
            false
        }
    };
    if !confirmed {
        return;
    }
    let command = match (request.mode, lease) {
        (Mode::Subscribe, Some(lease)) => Command::Subscribe {
            callback: request.callback,
            secret: request.secret,
            lease_expires: s.clock.now()
                + chrono::Duration::seconds(lease.min(i64::MAX as u64) as i64),
            coding,
            format: if request.topic == s.resourcesync_topic {
                Format::ResourceSync
            } else if cbor {
                Format::Cbor
            } else {
                Format::Atom
            },
        },
        _ => Command::Unsubscribe(request.callback),
    };
    let _ = s.hub.commands.send(command).await;
}

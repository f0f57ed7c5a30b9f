//! A third-party WebSub hub for the bench's sites without the agent, on its own origin, as the
//! public hubs (Superfeedr, Google's, WordPress.com's) are: subscriptions verified by intent
//! (W3C WebSub, 5.3), a publisher's ping (`hub.mode=publish&hub.url=TOPIC`) answered by fetching
//! the topic and posting it whole to each subscriber, signed with HMAC-SHA512 (the method such
//! hubs pick; the crawler's own agent signs with sha256) and carrying the hub and self links.

use axum::extract::State;
use axum::http::StatusCode;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use webcoop_protocol::websub::{Mode, SubscriptionRequest};
use webcoop_protocol::websub::{SignatureAlgorithm, sign};

/// Longest lease granted (the specification leaves it to the hub; ten days is common).
const MAX_LEASE: u64 = 864_000;

/// A topic's verified callbacks and the secret each gave.
type Callbacks = HashMap<String, Option<String>>;

#[derive(Clone)]
struct Hub {
    url: String,
    /// Topic to callback to secret, for verified subscriptions.
    subscribers: Arc<Mutex<HashMap<String, Callbacks>>>,
    client: reqwest::Client,
    counts: Arc<Mutex<HubCounts>>,
    /// A topic's origin and the address the hub reaches it at instead: the bench's sites sit
    /// behind the proxy that counts the crawler's requests, which the hub's fetches are not.
    direct: Option<(String, String)>,
}

/// What the hub did, for the run's report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HubCounts {
    /// Subscriptions verified.
    pub verified: u64,
    /// Publish pings received.
    pub pings: u64,
    /// Deliveries answered 2xx by the subscriber.
    pub delivered: u64,
    /// Deliveries that failed.
    pub failed: u64,
}

/// A hub running on the current tokio runtime.
pub struct RunningHub {
    /// Its URL, `http://127.0.0.1:PORT/`.
    pub url: String,
    counts: Arc<Mutex<HubCounts>>,
}

impl RunningHub {
    /// What it did so far.
    pub fn counts(&self) -> HubCounts {
        self.counts.lock().map(|c| *c).unwrap_or_default()
    }
}

/// Starts a hub on a free loopback port; it fetches topics of `direct`'s first origin from its
/// second.
pub async fn start(direct: Option<(String, String)>) -> std::io::Result<RunningHub> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr: SocketAddr = listener.local_addr()?;
    let url = format!("http://{addr}/");
    // The one TLS provider of the workspace; loopback needs none, but reqwest insists.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(std::io::Error::other)?;
    let counts = Arc::new(Mutex::new(HubCounts::default()));
    let hub = Hub {
        url: url.clone(),
        subscribers: Arc::default(),
        client,
        counts: counts.clone(),
        direct,
    };
    let app = axum::Router::new()
        .route("/", axum::routing::post(take))
        .with_state(hub);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(RunningHub { url, counts })
}

fn count(hub: &Hub, f: impl FnOnce(&mut HubCounts)) {
    if let Ok(mut c) = hub.counts.lock() {
        f(&mut c);
    }
}

async fn take(State(hub): State<Hub>, body: axum::body::Bytes) -> (StatusCode, String) {
    let publish = form_urlencoded_pairs(&body);
    if publish.get("hub.mode").map(String::as_str) == Some("publish") {
        let Some(topic) = publish.get("hub.url").cloned() else {
            return (StatusCode::BAD_REQUEST, "hub.url is missing\n".into());
        };
        count(&hub, |c| c.pings += 1);
        tokio::spawn(distribute(hub, topic));
        return (StatusCode::NO_CONTENT, String::new());
    }
    match SubscriptionRequest::from_form(&body) {
        Ok(req) => {
            tokio::spawn(verify(hub, req));
            (StatusCode::ACCEPTED, String::new())
        }
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")),
    }
}

fn form_urlencoded_pairs(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

/// Verification of intent: the subscriber echoes a random challenge, or the request is dropped.
async fn verify(hub: Hub, req: SubscriptionRequest) {
    let challenge: String = (0..24)
        .map(|_| char::from(b'a' + rand::random_range(0..26u8)))
        .collect();
    let lease = req.lease_seconds.unwrap_or(MAX_LEASE).min(MAX_LEASE);
    let mut check = req.callback.clone();
    check
        .query_pairs_mut()
        .append_pair("hub.mode", req.mode.as_str())
        .append_pair("hub.topic", req.topic.as_str())
        .append_pair("hub.challenge", &challenge)
        .append_pair("hub.lease_seconds", &lease.to_string());
    let echoed = match hub.client.get(check).send().await {
        Ok(r) if r.status().is_success() => r.text().await.is_ok_and(|t| t == challenge),
        _ => false,
    };
    if !echoed {
        return;
    }
    let Ok(mut subs) = hub.subscribers.lock() else {
        return;
    };
    let topic = subs.entry(req.topic.to_string()).or_default();
    match req.mode {
        Mode::Subscribe => {
            topic.insert(req.callback.to_string(), req.secret.clone());
            count(&hub, |c| c.verified += 1);
        }
        Mode::Unsubscribe => {
            topic.remove(req.callback.as_str());
        }
    }
}

/// Fetches the topic and posts it to each of its subscribers.
async fn distribute(hub: Hub, topic: String) {
    let from = match &hub.direct {
        Some((origin, direct)) if topic.starts_with(origin.as_str()) => {
            format!("{direct}{}", &topic[origin.len()..])
        }
        _ => topic.clone(),
    };
    let Ok(answer) = hub.client.get(&from).send().await else {
        return;
    };
    let media_type = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/atom+xml")
        .to_string();
    let Ok(content) = answer.bytes().await else {
        return;
    };
    let subscribers: Vec<(String, Option<String>)> = hub
        .subscribers
        .lock()
        .map(|s| {
            s.get(&topic)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    for (callback, secret) in subscribers {
        let mut post = hub
            .client
            .post(&callback)
            .header("content-type", &media_type)
            .header(
                "link",
                format!("<{}>; rel=\"hub\", <{topic}>; rel=\"self\"", hub.url),
            )
            .body(content.clone());
        if let Some(s) = &secret {
            post = post.header(
                "x-hub-signature",
                sign(SignatureAlgorithm::Sha512, s.as_bytes(), &content),
            );
        }
        let ok = post.send().await.is_ok_and(|r| r.status().is_success());
        count(&hub, |c| if ok { c.delivered += 1 } else { c.failed += 1 });
    }
}

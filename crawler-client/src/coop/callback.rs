//! The WebSub callback server the crawler runs in push mode: it confirms the subscriptions it
//! asked for (verification of intent), refuses those it did not, checks the signature of every
//! delivery, and hands deliveries to the crawl loop. One callback per site: `BASE/{host id}`.

use crate::worker::Outcome;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use url::Url;
use webcoop_protocol::websub::{self, CallbackQuery, Mode};

/// Largest delivery accepted.
const MAX_DELIVERY: usize = 64 << 20;

/// What the callback expects of a site's hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The topic subscribed to.
    pub topic: String,
    /// The HMAC key of deliveries.
    pub secret: String,
    /// A request sent and not yet verified.
    pub pending: Option<Mode>,
    /// Whether deliveries are wanted (subscribed, not unsubscribed).
    pub active: bool,
}

/// What the callback heard, for the crawl loop.
#[derive(Debug, Clone, PartialEq)]
pub enum CallbackEvent {
    /// The hub verified our intent.
    Verified {
        /// The site.
        host: i64,
        /// Subscribe or unsubscribe.
        mode: Mode,
        /// The lease granted, seconds (subscribe).
        lease: Option<u64>,
    },
    /// The hub refused the subscription.
    Denied {
        /// The site.
        host: i64,
        /// Its reason.
        reason: Option<String>,
    },
    /// A signed delivery.
    Delivery {
        /// The site.
        host: i64,
        /// The changes feed document.
        body: Vec<u8>,
    },
    /// A delivery whose signature did not verify (ignored, as WebSub requires).
    BadSignature {
        /// The site.
        host: i64,
        /// Why.
        why: String,
    },
    /// A pushed inline delta could not be applied (sent by the task that tried).
    InlineFailed {
        /// The site.
        host: i64,
        /// The page's fingerprint.
        fp: u64,
        /// The page.
        url: String,
        /// Why.
        why: String,
    },
}

#[derive(Clone)]
struct Shared {
    expected: Arc<Mutex<HashMap<i64, Expected>>>,
    tx: Arc<Mutex<Sender<Outcome>>>,
}

impl Shared {
    fn send(&self, e: CallbackEvent) {
        if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(Outcome::Callback(e));
        }
    }
}

/// The running callback server.
pub struct CallbackServer {
    /// Where it listens.
    pub local: SocketAddr,
    /// The callback base URL as the hubs see it.
    pub base: Url,
    expected: Arc<Mutex<HashMap<i64, Expected>>>,
}

impl CallbackServer {
    /// Starts listening on `listen`; `public` is the base URL hubs are given (default: the
    /// address listened on).
    pub async fn start(
        listen: SocketAddr,
        public: Option<Url>,
        tx: Sender<Outcome>,
    ) -> std::io::Result<CallbackServer> {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let local = listener.local_addr()?;
        let base = match public {
            Some(u) => u,
            None => Url::parse(&format!("http://{local}/websub"))
                .map_err(|e| std::io::Error::other(e.to_string()))?,
        };
        let shared = Shared {
            expected: Arc::new(Mutex::new(HashMap::new())),
            tx: Arc::new(Mutex::new(tx)),
        };
        let expected = shared.expected.clone();
        let app = axum::Router::new()
            .route("/{*path}", axum::routing::get(verify).post(deliver))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_DELIVERY))
            .with_state(shared);
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!("WebSub callback server stopped: {e}");
            }
        });
        Ok(CallbackServer {
            local,
            base,
            expected,
        })
    }

    /// The callback URL of a site.
    pub fn callback_for(&self, host: i64) -> String {
        format!("{}/{host}", self.base.as_str().trim_end_matches('/'))
    }

    /// Records what is expected of a site's hub (before a request is sent to it).
    pub fn expect(&self, host: i64, e: Expected) {
        if let Ok(mut m) = self.expected.lock() {
            m.insert(host, e);
        }
    }

    /// Whether a request to a site's hub still waits for its verification.
    pub fn pending(&self, host: i64) -> bool {
        self.expected
            .lock()
            .map(|m| m.get(&host).is_some_and(|e| e.pending.is_some()))
            .unwrap_or(false)
    }
}

fn host_of(path: &str) -> Option<i64> {
    path.rsplit('/').next()?.parse().ok()
}

async fn verify(
    State(s): State<Shared>,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
) -> (StatusCode, String) {
    let Some(host) = host_of(&path) else {
        return (StatusCode::NOT_FOUND, "unknown callback".into());
    };
    let query = match CallbackQuery::parse(query.as_deref().unwrap_or("")) {
        Ok(q) => q,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()),
    };
    let mut expected = match s.expected.lock() {
        Ok(m) => m,
        Err(_) => return (StatusCode::INTERNAL_SERVER_ERROR, String::new()),
    };
    let Some(e) = expected.get_mut(&host) else {
        return (
            StatusCode::NOT_FOUND,
            "no subscription for this callback".into(),
        );
    };
    match query {
        CallbackQuery::Denied(d) if d.topic.as_str() == e.topic => {
            e.pending = None;
            e.active = false;
            drop(expected);
            s.send(CallbackEvent::Denied {
                host,
                reason: d.reason,
            });
            (StatusCode::OK, String::new())
        }
        CallbackQuery::Verify(v) if v.topic.as_str() == e.topic && e.pending == Some(v.mode) => {
            e.pending = None;
            e.active = v.mode == Mode::Subscribe;
            drop(expected);
            s.send(CallbackEvent::Verified {
                host,
                mode: v.mode,
                lease: v.lease_seconds,
            });
            (StatusCode::OK, v.challenge)
        }
        // A renewal the hub confirms again while we still want it.
        CallbackQuery::Verify(v)
            if v.topic.as_str() == e.topic && e.active && v.mode == Mode::Subscribe =>
        {
            drop(expected);
            s.send(CallbackEvent::Verified {
                host,
                mode: v.mode,
                lease: v.lease_seconds,
            });
            (StatusCode::OK, v.challenge)
        }
        _ => (StatusCode::NOT_FOUND, "not requested".into()),
    }
}

async fn deliver(
    State(s): State<Shared>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let Some(host) = host_of(&path) else {
        return StatusCode::NOT_FOUND;
    };
    let secret = match s.expected.lock() {
        Ok(m) => m.get(&host).filter(|e| e.active).map(|e| e.secret.clone()),
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR,
    };
    // Not (or no longer) subscribed: 410 tells the hub to stop.
    let Some(secret) = secret else {
        return StatusCode::GONE;
    };
    let signature = headers.get("x-hub-signature").and_then(|v| v.to_str().ok());
    let checked = match signature {
        None => Err("no X-Hub-Signature".to_string()),
        Some(sig) => websub::verify(secret.as_bytes(), &body, sig)
            .map(|_| ())
            .map_err(|e| e.to_string()),
    };
    match checked {
        Ok(()) => s.send(CallbackEvent::Delivery {
            host,
            body: body.to_vec(),
        }),
        Err(why) => s.send(CallbackEvent::BadSignature { host, why }),
    }
    // 2xx either way: a forged message learns nothing (WebSub §7, "locally ignore").
    StatusCode::ACCEPTED
}

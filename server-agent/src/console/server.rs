//! The agent console's HTTP side: the page, its assets, the JSON API and a stream of events.
//!
//! API (JSON): `GET /api/overview` (files, head, publications, exclusions by reason),
//! `GET /api/popularity` (each page's decayed distinct visitors and published share),
//! `GET /api/changes` (the last changes with their sequence numbers), `GET /api/excluded`
//! (paths left out and why), `GET /api/hub` (subscribers and deliveries over time),
//! `GET /api/indexnow` (pings and answers), `GET /api/events` (server-sent events: head,
//! files and delivery counters once a second).

use crate::activity::{Activity, DeliverySample};
use crate::config::ConsoleSettings;
use crate::service::hub::store::SubscriptionStore;
use crate::service::metrics::{Metrics, OutcomeLabels};
use crate::store::{Store, to_ms};
use axum::Json;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use webcoop_daemon::console::access::{self, Gate};
use webcoop_daemon::console::http::{self, LazyStore};

/// The console's page, its body from `assets/agent.html`.
static PAGE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    webcoop_daemon::console::assets::page(
        "webcoop-agent",
        "agent.js",
        include_str!("assets/agent.html"),
    )
});
const SCRIPT: &str = include_str!("assets/agent.js");

/// What the console shows of the agent's setup.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The docroot.
    pub docroot: PathBuf,
    /// The site's URL.
    pub base_url: String,
    /// The state directory.
    pub state: PathBuf,
    /// The service's public URL, when it runs.
    pub service: Option<String>,
    /// The IndexNow endpoint, when configured.
    pub indexnow: Option<String>,
    /// The policy on who is asking, when the service runs.
    pub identity: Option<crate::config::identity::IdentityPolicy>,
}

struct Console {
    gate: Gate,
    setup: Setup,
    activity: Arc<Activity>,
    metrics: Option<Arc<Metrics>>,
    store: Arc<LazyStore<Store>>,
    tick: tokio::sync::watch::Sender<u64>,
}

/// Starts the console on the current runtime; returns where it listens. With `metrics` (the
/// service runs), it samples the delivery counters once a second.
pub async fn start(
    settings: &ConsoleSettings,
    setup: Setup,
    activity: Arc<Activity>,
    metrics: Option<Arc<Metrics>>,
) -> Result<SocketAddr, String> {
    access::check_bind(settings.addr.ip(), settings.token.as_deref()).map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(settings.addr)
        .await
        .map_err(|e| format!("console on {}: {e}", settings.addr))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("console on {}: {e}", settings.addr))?;
    let state = setup.state.clone();
    let console = Arc::new(Console {
        gate: Gate::new(settings.addr.ip(), settings.token.clone()),
        setup,
        activity,
        metrics,
        store: Arc::new({
            LazyStore::new(move || Store::open_read_only(&state).map_err(|e| e.to_string()))
        }),
        tick: tokio::sync::watch::Sender::new(0),
    });
    tokio::spawn(sample(console.clone()));
    let app = http::with_shared_assets(axum::Router::new())
        .route("/", get(|| async { http::page(PAGE.as_str()) }))
        .route(
            "/assets/agent.js",
            get(|| async { http::asset("text/javascript", SCRIPT) }),
        )
        .route("/api/overview", get(overview))
        .route("/api/changes", get(changes))
        .route("/api/excluded", get(excluded))
        .route("/api/popularity", get(popularity))
        .route("/api/hub", get(hub))
        .route("/api/indexnow", get(indexnow))
        .route("/api/identities", get(identities))
        .route("/api/events", get(events))
        .fallback(|| async { http::error(StatusCode::NOT_FOUND, "no such page of the console") })
        .layer(axum::middleware::from_fn_with_state(console.clone(), gate))
        .with_state(console);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!("console stopped: {e}");
        }
    });
    Ok(local)
}

/// Samples the delivery counters once a second and wakes the event streams.
async fn sample(c: Arc<Console>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        every.tick().await;
        if let Some(m) = &c.metrics {
            let count = |outcome| m.deliveries.get_or_create(&OutcomeLabels { outcome }).get();
            c.activity.sample(DeliverySample {
                t: crate::store::to_ms(chrono::Utc::now()),
                ok: count("ok"),
                failed: count("failed"),
                retries: m.retries.get(),
                subscriptions: m.subscriptions.get(),
            });
        }
        c.tick.send_modify(|n| *n = n.wrapping_add(1));
    }
}

async fn gate(State(c): State<Arc<Console>>, request: Request, next: Next) -> Response {
    http::admit(&c.gate, request, next, || {}).await
}

/// Runs `f` on the read-only store, opened at first use.
async fn with_store<T: Send + 'static>(
    c: &Arc<Console>,
    f: impl FnOnce(&Store) -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, Response> {
    c.store.read("the agent's state", f).await
}

async fn overview(State(c): State<Arc<Console>>) -> Response {
    let read = with_store(&c, |s| {
        Ok((
            s.file_count()?,
            s.head_seq()?,
            s.oldest_seq()?,
            s.versions_bytes(),
        ))
    })
    .await;
    let (files, head, oldest, versions_bytes) = match read {
        Ok(r) => r,
        Err(r) => return r,
    };
    let exclusions = c.activity.exclusions();
    let mut publications = c.activity.publications();
    publications.reverse();
    publications.truncate(50);
    Json(json!({
        "docroot": c.setup.docroot.display().to_string(),
        "base_url": c.setup.base_url,
        "service": c.setup.service,
        "indexnow": c.setup.indexnow,
        "files": files,
        "head": head,
        "oldest": oldest,
        "versions_bytes": versions_bytes,
        "excluded": exclusions.total,
        "excluded_by_reason": exclusions.by_reason,
        "publications": publications,
        "deliveries": c.activity.last_delivery(),
        "judge": c.activity.judge(),
    }))
    .into_response()
}

/// `?limit=N` of the lists.
#[derive(serde::Deserialize)]
struct Limit {
    limit: Option<usize>,
}

async fn changes(State(c): State<Arc<Console>>, Query(q): Query<Limit>) -> Response {
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    match with_store(&c, move |s| s.recent_changes(limit)).await {
        Ok(changes) => {
            let rows: Vec<Value> = changes
                .iter()
                .rev()
                .map(|ch| {
                    json!({
                        "seq": ch.seq,
                        "kind": ch.kind.to_string(),
                        "path": ch.path,
                        "time": to_ms(ch.time),
                        "size": ch.size,
                        "changed": ch.changed,
                    })
                })
                .collect();
            Json(json!({ "changes": rows })).into_response()
        }
        Err(r) => r,
    }
}

async fn excluded(State(c): State<Arc<Console>>) -> Response {
    let e = c.activity.exclusions();
    let paths: Vec<Value> = e
        .paths
        .iter()
        .map(|(path, why)| json!({ "path": path, "why": why }))
        .collect();
    Json(json!({ "total": e.total, "by_reason": e.by_reason, "paths": paths })).into_response()
}

/// What visitors read: each page's decayed distinct visitors, and the shares published.
async fn popularity(State(c): State<Arc<Console>>) -> Response {
    let published = c.activity.popularity();
    let pages: Vec<Value> = c
        .activity
        .visitors()
        .into_iter()
        .map(|(path, visitors)| {
            let share = published.as_ref().and_then(|p| p.get(&path)).copied();
            json!({ "path": path, "visitors": visitors, "published": share })
        })
        .collect();
    Json(json!({ "pages": pages, "publishing": published.is_some() })).into_response()
}

/// A callback as the console shows it: its origin and path, never its query (which may carry
/// the subscriber's own secrets).
fn shown_callback(u: &url::Url) -> String {
    format!("{}{}", u.origin().ascii_serialization(), u.path())
}

async fn hub(State(c): State<Arc<Console>>) -> Response {
    let state = c.setup.state.clone();
    let subs =
        tokio::task::spawn_blocking(move || SubscriptionStore::open(&state).and_then(|s| s.load()))
            .await;
    let subs = match subs {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return http::error(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
        Err(e) => return http::error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let head = with_store(&c, |s| s.head_seq()).await.unwrap_or(0);
    let now = chrono::Utc::now();
    let rows: Vec<Value> = subs
        .iter()
        .map(|s| {
            json!({
                "callback": shown_callback(&s.callback),
                "host": s.callback.host_str().unwrap_or(""),
                "lease_left_secs": (s.lease_expires - now).num_seconds().max(0),
                "cursor": s.cursor,
                "lag": head.saturating_sub(s.cursor),
                "failing_since": s.failing_since.map(to_ms),
                "failing_secs": s.failing_since.map(|f| (now - f).num_seconds().max(0)),
                "coding": s.coding.map_or("identity", |c| c.token()),
                "signed": s.secret.is_some(),
            })
        })
        .collect();
    Json(json!({
        "serving": c.metrics.is_some(),
        "head": head,
        "subscribers": rows,
        "deliveries": c.activity.deliveries(),
    }))
    .into_response()
}

async fn indexnow(State(c): State<Arc<Console>>) -> Response {
    let mut pings = c.activity.pings();
    pings.reverse();
    Json(json!({ "configured": c.setup.indexnow, "pings": pings })).into_response()
}

async fn identities(State(c): State<Arc<Console>>) -> Response {
    let (verified, refused) = c.activity.identities();
    let refused: Vec<Value> = refused
        .into_iter()
        .rev()
        .map(|(at, why)| json!({ "at": at, "why": why }))
        .collect();
    let policy = c.setup.identity.clone().unwrap_or_default();
    Json(json!({
        "subscribers": match policy.subscribers {
            crate::config::identity::Subscribers::Any => if policy.signers.is_empty() { "anyone" } else { "listed crawlers" },
            crate::config::identity::Subscribers::Verified => if policy.signers.is_empty() { "verified crawlers" } else { "listed crawlers" },
        },
        "signers": policy.signers.iter().map(|u| u.to_string()).collect::<Vec<_>>(),
        "rate_verified": policy.rate_verified.map(|n| n.get()),
        "rate_unverified": policy.rate_unverified.map(|n| n.get()),
        "verified": verified,
        "refused": refused,
    }))
    .into_response()
}

async fn events(State(c): State<Arc<Console>>) -> Response {
    let rx = c.tick.subscribe();
    let stream = futures_util::stream::unfold((rx, c), |(mut rx, c)| async move {
        rx.changed().await.ok()?;
        let head = with_store(&c, |s| Ok((s.head_seq()?, s.file_count()?)))
            .await
            .ok();
        let data = json!({
            "head": head.map(|h| h.0),
            "files": head.map(|h| h.1),
            "deliveries": c.activity.last_delivery(),
            "publications": c.activity.publications().len(),
        });
        Some((
            Ok::<_, Infallible>(Event::default().data(data.to_string())),
            (rx, c),
        ))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

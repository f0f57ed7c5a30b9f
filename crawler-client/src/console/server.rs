//! The console's HTTP side: the page, its assets, the JSON API and the event stream, behind
//! the gate of `webcoop_daemon::console::access`.
//!
//! API (all JSON; docs/CRAWLER.md has the fields):
//! `GET /api/overview`, `GET /api/hosts`, `GET /api/hosts/{id}`, `GET /api/freshness`,
//! `GET /api/actions`, `POST /api/actions` (one action, e.g. `{"action":"pause"}`), and
//! `GET /api/events` (server-sent events: the overview and the newest sample, once a second).

use super::ConsoleError;
use super::actions::{Action, ActionLog, Logged};
use super::live::{HostLive, Live};
use crate::config::ConsoleSettings;
use crate::coop::CoopMode;
use crate::coop::site::{CoopConfig, SiteCoop};
use crate::state::{HostFigures, HostQuery, HostSort, Store};
use axum::Json;
use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use webcoop_daemon::console::access::{self, Gate};
use webcoop_daemon::console::http::{self, LazyStore};

/// The console's page, its body from `assets/crawl.html`.
static PAGE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    webcoop_daemon::console::assets::page(
        "webcoop-crawl",
        "crawl.js",
        include_str!("assets/crawl.html"),
    )
});
const SCRIPT: &str = include_str!("assets/crawl.js");

/// Largest action body accepted (a thousand seeds of 2 KB, with room).
const MAX_ACTION_BYTES: usize = 4 << 20;

/// What the handlers share.
struct Console {
    gate: Gate,
    dir: PathBuf,
    store: Arc<LazyStore<Store>>,
    live: Option<Arc<Live>>,
    log: ActionLog,
    fleet: bool,
    /// The crawl's figures as last counted, when, and what counting them took.
    figures: std::sync::Mutex<Option<CountedFigures>>,
}

/// The figures of the crawl's database, kept while counting them again would cost more than a
/// twentieth of the time: the pages' are one kept row (`state::page_figures`), but the queue's
/// and the hosts' are counts, and a page watching the console asks every two seconds.
#[derive(Clone, Copy)]
struct CountedFigures {
    figures: crate::state::Figures,
    at: std::time::Instant,
    took: std::time::Duration,
}

impl CountedFigures {
    /// Still served: younger than a second, or than twenty times its cost.
    fn fresh(&self, now: std::time::Instant) -> bool {
        now.duration_since(self.at) < (self.took * 20).max(std::time::Duration::from_secs(1))
    }
}

/// Starts the console of a running crawl on the crawl's runtime; returns where it listens.
pub(crate) fn start_live(
    rt: &tokio::runtime::Runtime,
    settings: &ConsoleSettings,
    dir: &std::path::Path,
    live: Arc<Live>,
    fleet: bool,
) -> Result<SocketAddr, ConsoleError> {
    let (listener, console) = bind(rt, settings, dir, Some(live), fleet)?;
    let local = listener
        .local_addr()
        .map_err(|source| ConsoleError::Listen {
            addr: settings.addr,
            source,
        })?;
    rt.spawn(serve(listener, console));
    Ok(local)
}

/// Serves the console of a crawl that is not running, until `stop` resolves.
pub fn run_offline(
    settings: &ConsoleSettings,
    dir: &std::path::Path,
    ready: impl FnOnce(SocketAddr),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ConsoleError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|source| ConsoleError::Listen {
            addr: settings.addr,
            source,
        })?;
    let (listener, console) = bind(&rt, settings, dir, None, false)?;
    let local = listener
        .local_addr()
        .map_err(|source| ConsoleError::Listen {
            addr: settings.addr,
            source,
        })?;
    ready(local);
    rt.block_on(async move {
        tokio::select! {
            _ = serve(listener, console) => {}
            _ = stop => {}
        }
    });
    Ok(())
}

fn bind(
    rt: &tokio::runtime::Runtime,
    settings: &ConsoleSettings,
    dir: &std::path::Path,
    live: Option<Arc<Live>>,
    fleet: bool,
) -> Result<(tokio::net::TcpListener, Arc<Console>), ConsoleError> {
    access::check_bind(settings.addr.ip(), settings.token.as_deref())?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(settings.addr))
        .map_err(|source| ConsoleError::Listen {
            addr: settings.addr,
            source,
        })?;
    let console = Arc::new(Console {
        gate: Gate::new(settings.addr.ip(), settings.token.clone()),
        dir: dir.to_path_buf(),
        store: Arc::new({
            let dir = dir.to_path_buf();
            LazyStore::new(move || Store::open_read_only(&dir).map_err(|e| e.to_string()))
        }),
        live,
        log: ActionLog::new(dir),
        fleet,
        figures: std::sync::Mutex::new(None),
    });
    Ok((listener, console))
}

async fn serve(listener: tokio::net::TcpListener, console: Arc<Console>) {
    let app = http::with_shared_assets(axum::Router::new())
        .route("/", get(|| async { http::page(PAGE.as_str()) }))
        .route(
            "/assets/crawl.js",
            get(|| async { http::asset("text/javascript", SCRIPT) }),
        )
        .route("/api/overview", get(overview))
        .route("/api/hosts", get(hosts))
        .route("/api/hosts/{id}", get(host))
        .route("/api/freshness", get(freshness))
        .route(
            "/api/actions",
            get(actions)
                .post(act)
                .layer(axum::extract::DefaultBodyLimit::max(MAX_ACTION_BYTES)),
        )
        .route("/api/events", get(events))
        .fallback(|| async { http::error(StatusCode::NOT_FOUND, "no such page of the console") })
        .layer(axum::middleware::from_fn_with_state(console.clone(), gate))
        .with_state(console)
        .into_make_service_with_connect_info::<SocketAddr>();
    if let Err(e) = axum::serve(listener, app).await {
        tracing::warn!("console stopped: {e}");
    }
}

/// Lets a request in or refuses it; sets the token's cookie when it came in the query.
async fn gate(State(c): State<Arc<Console>>, request: Request, next: Next) -> Response {
    http::admit(&c.gate, request, next, || {
        if let Some(live) = &c.live {
            live.touch(crate::clock::now_ms(), None);
        }
    })
    .await
}

/// Runs `f` on the read-only store, opened at first use.
async fn with_store<T: Send + 'static>(
    c: &Arc<Console>,
    f: impl FnOnce(&Store) -> Result<T, crate::state::StoreError> + Send + 'static,
) -> Result<T, Response> {
    c.store.read("the crawl's database", f).await
}

/// The crawl's figures, counted again only when the last count is stale (`CountedFigures`).
async fn figures(c: &Arc<Console>) -> Result<crate::state::Figures, Response> {
    let now = std::time::Instant::now();
    let kept = c.figures.lock().ok().and_then(|k| *k);
    if let Some(k) = kept.filter(|k| k.fresh(now)) {
        return Ok(k.figures);
    }
    let figures = with_store(c, |s| s.figures()).await?;
    if let Ok(mut k) = c.figures.lock() {
        *k = Some(CountedFigures {
            figures,
            at: now,
            took: now.elapsed(),
        });
    }
    Ok(figures)
}

async fn overview(State(c): State<Arc<Console>>) -> Response {
    let figures = match figures(&c).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let mut out = json!({ "figures": figures, "live": c.live.is_some(), "fleet": c.fleet });
    match &c.live {
        Some(live) => {
            let v = live.view();
            out["overview"] = json!(v.overview);
            out["samples"] = json!(v.samples);
        }
        None => {
            let controls = c.log.controls().map(|(c, _)| c).unwrap_or_default();
            let running = crate::state::is_running(&c.dir);
            out["overview"] = json!({
                "state": if running { "running elsewhere" } else { "not running" },
                "out": c.dir.display().to_string(),
                "pages_total": figures.fetched(),
                "queued": figures.queued,
                "hosts": figures.hosts,
                "warc_bytes": figures.warc_bytes,
                "bytes": figures.bytes,
                "errors": {
                    "4xx": figures.client_errors, "5xx": figures.server_errors,
                    "failed": figures.failures, "disallowed": figures.disallowed,
                    "usage": figures.usage_skipped + figures.usage_not_kept,
                },
                "disk_free": super::disk_free(&c.dir),
                "paused": controls.paused,
                "blocked": controls.blocked,
                "delays": controls.delays,
            });
            out["samples"] = json!([]);
        }
    }
    Json(out).into_response()
}

/// The cooperation settings the crawl ran with, to judge saved sites by.
fn coop_config(s: &Store) -> CoopConfig {
    s.meta(crate::state::COOP_CONFIG_META)
        .ok()
        .flatten()
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default()
}

/// Rows of the host table given at most per request.
const MAX_HOST_ROWS: u64 = 500;

/// `?sort=COLUMN&dir=asc|desc&q=TEXT&offset=N&limit=N`: the host table sorted, filtered and
/// cut by the database, so that a crawl of 100,000 hosts sends a page, not all of them.
/// Columns only the running crawl knows (state, delay) are not sortable here; the answer says
/// which sort it used.
async fn hosts(
    State(c): State<Arc<Console>>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let sort = params
        .get("sort")
        .and_then(|s| HostSort::of(s))
        .unwrap_or(HostSort::Fetched);
    let query = HostQuery {
        sort,
        descending: params.get("dir").is_none_or(|d| d != "asc"),
        filter: params
            .get("q")
            .map(|q| q.chars().take(200).collect())
            .unwrap_or_default(),
        offset: params
            .get("offset")
            .and_then(|o| o.parse().ok())
            .unwrap_or(0),
        limit: params
            .get("limit")
            .and_then(|l| l.parse().ok())
            .unwrap_or(100)
            .clamp(1, MAX_HOST_ROWS),
    };
    let (offset, limit, descending) = (query.offset, query.limit, query.descending);
    let read = with_store(&c, move |s| Ok((s.host_page(&query)?, coop_config(s)))).await;
    let ((saved, total), config) = match read {
        Ok(r) => r,
        Err(r) => return r,
    };
    let shown: std::collections::HashSet<i64> = saved.iter().map(|f| f.id).collect();
    // The loop publishes the rows of the hosts shown lately: a page shown the first time
    // has its saved figures, and its live ones from the loop's next second.
    if let Some(l) = &c.live {
        l.show(crate::clock::now_ms(), shown.iter().copied());
    }
    let live: HashMap<i64, HostLive> = c.live.as_ref().map_or_else(HashMap::new, |l| {
        l.view()
            .hosts
            .iter()
            .filter(|h| shown.contains(&h.id))
            .map(|h| (h.id, h.clone()))
            .collect()
    });
    let blocked = c.log.controls().map(|(c, _)| c.blocked).unwrap_or_default();
    let now = crate::clock::now_ms();
    let rows: Vec<Value> = saved
        .into_iter()
        .map(|f| host_row(f, &live, &blocked, &config, now))
        .collect();
    Json(json!({
        "hosts": rows,
        "live": c.live.is_some(),
        "total": total,
        "offset": offset,
        "limit": limit,
        "sort": sort.column(),
        "dir": if descending { "desc" } else { "asc" },
    }))
    .into_response()
}

/// A host's row: saved figures, and the loop's view of it when the crawl runs.
fn host_row(
    f: HostFigures,
    live: &HashMap<i64, HostLive>,
    blocked: &std::collections::BTreeSet<String>,
    config: &CoopConfig,
    now: i64,
) -> Value {
    let site: Option<SiteCoop> = f
        .coop
        .as_ref()
        .and_then(|j| serde_json::from_value(j.clone()).ok());
    let mut row = json!({
        "id": f.id,
        "origin": f.origin,
        "queued": f.queued,
        "fetched": f.fetched,
        "errors": f.errors,
        "failures": f.failures,
        "robots_status": f.robots_status,
        "coop": site.as_ref().map_or("none", |s| s.level(config.mode, config.failures_to_degrade).as_str()),
        "offered": site.as_ref().map_or("none", |s| s.level(CoopMode::Push, u32::MAX).as_str()),
        "trust": site.as_ref().map(|s| s.trust.score()),
        "saved": site.as_ref().map_or(0, |s| s.stats.deltas),
    });
    match live.get(&f.id) {
        Some(h) => {
            row["queued"] = json!(h.waiting);
            row["in_flight"] = json!(h.in_flight);
            row["delay_secs"] = json!(h.delay_secs);
            row["delay_why"] = json!(h.delay_why);
            row["next_in_secs"] = json!(h.next_in_secs);
            row["robots"] = json!(h.robots);
            row["state"] = json!(h.state);
            row["coop"] = json!(h.coop);
            row["trust"] = json!(h.trust);
            row["saved"] = json!(h.saved);
            row["failures"] = json!(h.failures);
        }
        None => {
            let state = if let Some(why) = &f.skipped {
                format!("skipped: {why}")
            } else if blocked.contains(&f.origin) {
                "blocked".into()
            } else if f.parked_until.is_some_and(|t| t > now) {
                format!("parked ({} failures)", f.failures)
            } else if f.queued > 0 {
                "waiting".into()
            } else {
                "idle".into()
            };
            row["state"] = json!(state);
            row["robots"] = json!(match f.robots_status {
                None => "unknown",
                Some(_) => "known",
            });
        }
    }
    row
}

async fn host(State(c): State<Arc<Console>>, Path(id): Path<i64>) -> Response {
    if let Some(live) = &c.live {
        live.touch(crate::clock::now_ms(), Some(id));
    }
    let read = with_store(&c, move |s| {
        let figures = s.host_figures()?.into_iter().find(|h| h.id == id);
        Ok((figures, s.recent_visits(id, 100)?, coop_config(s)))
    })
    .await;
    let (figures, visits, config) = match read {
        Ok(r) => r,
        Err(r) => return r,
    };
    let Some(figures) = figures else {
        return http::error(StatusCode::NOT_FOUND, "no host with this id");
    };
    let live: HashMap<i64, HostLive> = c.live.as_ref().map_or_else(HashMap::new, |l| {
        l.view()
            .hosts
            .iter()
            .filter(|h| h.id == id)
            .map(|h| (h.id, h.clone()))
            .collect()
    });
    let blocked = c.log.controls().map(|(c, _)| c.blocked).unwrap_or_default();
    let coop_saved = figures.coop.clone();
    let row = host_row(figures, &live, &blocked, &config, crate::clock::now_ms());
    let detail = c
        .live
        .as_ref()
        .and_then(|l| l.view().host.clone())
        .filter(|d| d.id == id);
    Json(json!({
        "host": row,
        "visits": visits,
        "schedule": detail.as_ref().map(|d| d.schedule.clone()),
        "coop_stats": detail.and_then(|d| d.coop).or_else(|| coop_saved.and_then(|j| j.get("stats").cloned())),
    }))
    .into_response()
}

async fn freshness(State(c): State<Arc<Console>>) -> Response {
    let samples = c.live.as_ref().and_then(|l| l.view().freshness.clone());
    Json(json!({ "keep_fresh": samples.is_some(), "samples": samples.unwrap_or_default() }))
        .into_response()
}

async fn actions(State(c): State<Arc<Console>>) -> Response {
    match c.log.read() {
        Ok((actions, problems)) => {
            Json(json!({ "actions": actions, "problems": problems })).into_response()
        }
        Err(e) => http::error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

async fn act(
    State(c): State<Arc<Console>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    body: axum::body::Bytes,
) -> Response {
    let action: Action = match serde_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => return http::error(StatusCode::BAD_REQUEST, &format!("not an action: {e}")),
    };
    let action = match action.checked() {
        Ok(a) => a,
        Err(e) => return http::error(StatusCode::BAD_REQUEST, &e),
    };
    if c.fleet && matches!(action, Action::AddSeeds { .. }) {
        return http::error(
            StatusCode::CONFLICT,
            "a fleet's seeds are the crawl's: give them with --seeds to a process that joins",
        );
    }
    let logged = Logged {
        at: crate::clock::now_ms(),
        from: peer.ip().to_string(),
        action,
    };
    let result = match &c.live {
        Some(live) => live.act(logged.clone()),
        None => {
            if matches!(logged.action, Action::Pause | Action::Resume) {
                return http::error(
                    StatusCode::CONFLICT,
                    "the crawl is not running: pause and resume act on a running crawl",
                );
            }
            if crate::state::is_running(&c.dir) {
                return http::error(
                    StatusCode::CONFLICT,
                    "the crawl is running in another process: use its --console",
                );
            }
            c.log.append(&Logged {
                from: "offline".into(),
                ..logged.clone()
            })
        }
    };
    match result {
        Ok(()) => Json(json!({ "ok": true, "logged": logged, "applies": if c.live.is_some() { "now" } else { "at the next start" } })).into_response(),
        Err(e) => http::error(StatusCode::INTERNAL_SERVER_ERROR, &format!("the action log could not be written: {e}")),
    }
}

async fn events(State(c): State<Arc<Console>>) -> Response {
    let Some(live) = c.live.clone() else {
        // A crawl that is not running changes only by offline actions: a slow heartbeat.
        let stream = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Some((
                Ok::<_, Infallible>(Event::default().data("{\"offline\":true}")),
                (),
            ))
        });
        return Sse::new(stream)
            .keep_alive(KeepAlive::default())
            .into_response();
    };
    let rx = live.subscribe();
    let stream = futures_util::stream::unfold((rx, live), |(mut rx, live)| async move {
        rx.changed().await.ok()?;
        let data = {
            let v = live.view();
            json!({
                "overview": v.overview,
                "sample": v.samples.back(),
                "fresh": v.freshness.as_ref().and_then(|f| f.back()),
            })
        };
        live.touch(crate::clock::now_ms(), None);
        Some((
            Ok::<_, Infallible>(Event::default().data(data.to_string())),
            (rx, live),
        ))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::CountedFigures;
    use std::time::{Duration, Instant};

    #[test]
    fn figures_are_counted_again_at_most_a_twentieth_of_the_time() {
        let at = Instant::now();
        let kept = |took| CountedFigures {
            figures: Default::default(),
            at,
            took,
        };
        // A cheap count (a small crawl) is at most a second old.
        let cheap = kept(Duration::from_millis(2));
        assert!(cheap.fresh(at + Duration::from_millis(900)));
        assert!(!cheap.fresh(at + Duration::from_millis(1100)));
        // 300 ms over a million pages: kept six seconds, so counting costs 5% of a core.
        let dear = kept(Duration::from_millis(300));
        assert!(dear.fresh(at + Duration::from_millis(5900)));
        assert!(!dear.fresh(at + Duration::from_millis(6100)));
    }
}

//! The IndexNow endpoint the crawler serves (`--indexnow-listen`), as search engines serve it:
//! `POST /indexnow` (JSON) and `GET /indexnow?url=&key=`. A submission is checked as the
//! protocol says (400, 422), held to the crawl's scope (422), limited per client and per host
//! (429), and answered by what is known of its key: 200 proved, 202 its proof pending (the key
//! file is fetched from the site, politely), 403 refused. Accepted submissions go to the crawl
//! loop; nothing a submission says is acted on before its key is proved there.

use super::indexnow::Proof;
use axum::extract::{ConnectInfo, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::indexnow::{self, Rejection, Submission};

/// Requests one client may make a minute.
const PER_CLIENT_MINUTE: u64 = 120;

/// Keys whose proof the endpoint remembers, at most: past them it forgets them all and answers
/// 202 until the loop tells it again (the loop's own record is bounded per site).
const PROOFS_KEPT: usize = 100_000;

/// URLs one host may submit an hour: past them its submissions are answered 429, so that no
/// site floods the frontier or another site's share of it.
pub(crate) const PER_HOST_HOUR: u64 = 10_000;

/// Where accepted submissions go: the loop's channel, or a test's.
pub(crate) type Report = Arc<dyn Fn(Submission) + Send + Sync>;

/// Whether a URL is within the crawl's scope.
pub(crate) type InScope = Arc<dyn Fn(&Url) -> bool + Send + Sync>;

type Proofs = Arc<Mutex<HashMap<(String, String), Proof>>>;

#[derive(Clone)]
struct Shared {
    proofs: Proofs,
    hosts: Arc<Mutex<HashMap<String, (Instant, u64)>>>,
    clients: Arc<Mutex<HashMap<IpAddr, (Instant, u64)>>>,
    in_scope: InScope,
    report: Report,
}

/// The running endpoint.
pub(crate) struct IndexNowServer {
    /// Where it listens.
    pub local: SocketAddr,
    proofs: Proofs,
}

impl IndexNowServer {
    /// Starts listening on `listen`; accepted submissions within `in_scope` go to `report`.
    pub(crate) async fn start(
        listen: SocketAddr,
        in_scope: InScope,
        report: Report,
    ) -> std::io::Result<IndexNowServer> {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let local = listener.local_addr()?;
        let shared = Shared {
            proofs: Arc::default(),
            hosts: Arc::default(),
            clients: Arc::default(),
            in_scope,
            report,
        };
        let proofs = shared.proofs.clone();
        let app = axum::Router::new()
            .route("/indexnow", axum::routing::get(get).post(post))
            .layer(axum::extract::DefaultBodyLimit::max(indexnow::MAX_BODY))
            .with_state(shared);
        tokio::spawn(async move {
            let service = app.into_make_service_with_connect_info::<SocketAddr>();
            if let Err(e) = axum::serve(listener, service).await {
                tracing::warn!("IndexNow endpoint stopped: {e}");
            }
        });
        Ok(IndexNowServer { local, proofs })
    }

    /// What the loop learnt of `key`, proved by `file`: told to the next submitters.
    pub(crate) fn set_proof(&self, key: &str, file: &Url, proof: Proof) {
        if let Ok(mut p) = self.proofs.lock() {
            if p.len() >= PROOFS_KEPT {
                p.clear();
            }
            p.insert((key.to_string(), file.to_string()), proof);
        }
    }
}

async fn post(
    State(s): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    body: axum::body::Bytes,
) -> Response {
    take(&s, peer.ip(), indexnow::parse_post(&body))
}

async fn get(
    State(s): State<Shared>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    RawQuery(query): RawQuery,
) -> Response {
    take(
        &s,
        peer.ip(),
        indexnow::parse_get(&query.unwrap_or_default()),
    )
}

fn answer(status: StatusCode, text: impl Into<String>) -> Response {
    (status, text.into()).into_response()
}

/// Whether a window of `span` starting at `start` with `used` of `max` has room for `n`;
/// takes them when it has.
fn room(window: &mut (Instant, u64), span: Duration, max: u64, n: u64) -> bool {
    if window.0.elapsed() >= span {
        *window = (Instant::now(), 0);
    }
    if window.1 + n > max {
        return false;
    }
    window.1 += n;
    true
}

fn take(s: &Shared, client: IpAddr, parsed: Result<Submission, Rejection>) -> Response {
    let client_ok = s.clients.lock().is_ok_and(|mut c| {
        if c.len() > 100_000 {
            c.retain(|_, w| w.0.elapsed() < Duration::from_secs(60));
        }
        let w = c.entry(client).or_insert((Instant::now(), 0));
        room(w, Duration::from_secs(60), PER_CLIENT_MINUTE, 1)
    });
    if !client_ok {
        return answer(StatusCode::TOO_MANY_REQUESTS, "too many requests");
    }
    let sub = match parsed {
        Ok(sub) => sub,
        Err(r) => {
            let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
            return answer(status, r.why);
        }
    };
    if let Some(u) = sub.urls.iter().find(|u| !(s.in_scope)(u)) {
        return answer(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{u} is not within this crawler's scope"),
        );
    }
    let host_ok = s.hosts.lock().is_ok_and(|mut h| {
        if h.len() > 100_000 {
            h.retain(|_, w| w.0.elapsed() < Duration::from_secs(3600));
        }
        let w = h.entry(sub.host.clone()).or_insert((Instant::now(), 0));
        room(
            w,
            Duration::from_secs(3600),
            PER_HOST_HOUR,
            sub.urls.len() as u64,
        )
    });
    if !host_ok {
        return answer(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{} submitted more than {PER_HOST_HOUR} URLs this hour",
                sub.host
            ),
        );
    }
    let proof = s
        .proofs
        .lock()
        .ok()
        .and_then(|p| p.get(&(sub.key.clone(), sub.key_file.to_string())).copied());
    let refused = format!("key not valid: {} does not hold it", sub.key_file);
    let (status, text) = match proof {
        // Told to the loop all the same: a key refused an hour ago is asked for again.
        Some(Proof::Refused) => (StatusCode::FORBIDDEN, refused),
        Some(Proof::Proved) => (StatusCode::OK, String::new()),
        _ => (StatusCode::ACCEPTED, String::new()),
    };
    (s.report)(sub);
    answer(status, text)
}

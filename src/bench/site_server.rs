//! The bench's web server when nginx is not asked for: static files from the docroot (with
//! `Last-Modified` and conditional GET, by tower-http's `ServeDir`, gzip for clients that
//! ask), and
//! `/.well-known/webcoop/` passed to the agent, as the shipped nginx server block does, but
//! for the files the agent writes there (snapshots, ResourceSync lists), served as files.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, Response, StatusCode};
use axum::serve::ListenerExt;
use std::net::SocketAddr;
use std::path::Path;
use tower_http::services::ServeDir;
use webcoop_protocol::clock::{Clock, ScaledClock};

/// The prefix of the agent's service on the site.
pub const SERVICE_PREFIX: &str = "/.well-known/webcoop/";

#[derive(Clone)]
struct Upstream {
    agent: Option<SocketAddr>,
    client: reqwest::Client,
}

/// Serves `docroot` on a free loopback port, passing the service prefix to `agent`; returns
/// the address. The server runs on the current tokio runtime until it ends.
pub async fn start(docroot: &Path, agent: Option<SocketAddr>) -> std::io::Result<SocketAddr> {
    start_dated(docroot, agent, None).await
}

/// As [`start`], its answers' `Date` on `clock` when given: a run's files are dated on its
/// simulated clock, and a `Last-Modified` ahead of the real `Date` would read as written
/// within the second of the answer (validators a crawler must not trust), so the server lives
/// on the same clock as its files.
pub async fn start_dated(
    docroot: &Path,
    agent: Option<SocketAddr>,
    clock: Option<ScaledClock>,
) -> std::io::Result<SocketAddr> {
    // The one TLS provider of the workspace; loopback needs none, but reqwest insists.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(std::io::Error::other)?;
    // Files as nginx with `gzip on` and `gzip_types` covering HTML and XML serves them; the
    // agent's answers pass untouched (it negotiates its own encodings).
    let files = axum::Router::new()
        .fallback_service(ServeDir::new(docroot).append_index_html_on_directories(true))
        .layer(tower_http::compression::CompressionLayer::new().gzip(true))
        .layer(axum::middleware::map_request(gzip_only));
    let written = |dir: &str| ServeDir::new(docroot.join(".well-known/webcoop").join(dir));
    let app = axum::Router::new()
        .nest_service("/.well-known/webcoop/snapshot", written("snapshot"))
        .nest_service("/.well-known/webcoop/resourcesync", written("resourcesync"))
        .route("/.well-known/webcoop/{*rest}", axum::routing::any(pass))
        .with_state(Upstream { agent, client })
        .fallback_service(files)
        .layer(axum::middleware::map_response(
            move |mut r: Response<Body>| {
                let clock = clock.clone();
                async move {
                    if let Some(c) = &clock {
                        let date = httpdate::fmt_http_date(c.now().into());
                        if let Ok(v) = axum::http::HeaderValue::from_str(&date) {
                            r.headers_mut().insert(axum::http::header::DATE, v);
                        }
                    }
                    r
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    // ServeDir writes the head and the body apart: with Nagle's algorithm the body waits for
    // the client's delayed ACK, 40 ms per page.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

/// Like nginx, which compresses with gzip alone, answers gzip to any client that accepts it:
/// tower-http compiled for gzip only would otherwise answer `gzip, br, zstd` (what the crawler
/// sends) uncompressed, preferring codings it does not have.
async fn gzip_only(mut req: Request<Body>) -> Request<Body> {
    let gzip = req
        .headers()
        .get(axum::http::header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("gzip"));
    if gzip {
        req.headers_mut().insert(
            axum::http::header::ACCEPT_ENCODING,
            axum::http::HeaderValue::from_static("gzip"),
        );
    }
    req
}

/// Hop-by-hop fields a proxy does not pass on (RFC 9110, 7.6.1).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "host",
    "content-length",
];

async fn pass(State(up): State<Upstream>, req: Request<Body>) -> Response<Body> {
    let Some(agent) = up.agent else {
        return status(StatusCode::NOT_FOUND, "no agent beside this site");
    };
    let target = req
        .uri()
        .path_and_query()
        .map_or(SERVICE_PREFIX, |p| p.as_str())
        .to_string();
    let method = req.method().clone();
    let headers = req.headers().clone();
    let Ok(body) = axum::body::to_bytes(req.into_body(), 1 << 20).await else {
        return status(StatusCode::PAYLOAD_TOO_LARGE, "request body over 1 MiB");
    };
    let mut out = up
        .client
        .request(method, format!("http://{agent}{target}"))
        .body(body);
    for (name, value) in &headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out = out.header(name, value);
        }
    }
    let answer = match out.send().await {
        Ok(a) => a,
        Err(e) => return status(StatusCode::BAD_GATEWAY, &format!("agent: {e}")),
    };
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    match answer.bytes().await {
        Ok(bytes) => response
            .body(Body::from(bytes))
            .unwrap_or_else(|e| status(StatusCode::BAD_GATEWAY, &e.to_string())),
        Err(e) => status(StatusCode::BAD_GATEWAY, &format!("agent: {e}")),
    }
}

fn status(code: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Body::from(format!("{text}\n")));
    *r.status_mut() = code;
    r
}

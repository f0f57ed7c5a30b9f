//! What the hostile scenarios share: the binaries, a loopback web whose every answer a test
//! writes byte for byte, and small HTTP helpers.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop_testkit::workspace_bin;

pub(crate) fn agent_bin() -> PathBuf {
    workspace_bin("webcoop-agent")
}

pub(crate) fn crawl_bin() -> PathBuf {
    workspace_bin("webcoop-crawl")
}

pub(crate) use webcoop_testkit::free_port;

/// An HTTP client that goes straight to loopback (reqwest is built without a TLS provider of
/// its own: ring's is installed once).
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Polls `ok` every 50 ms until it holds, failing the test with `what` after `secs` seconds.
pub(crate) fn wait_for(secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// POSTs `body` over HTTP/1.0 and returns the status (0 if the server hung up first).
pub(crate) fn http_post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> u16 {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let mut head = format!(
        "POST {path} HTTP/1.0\r\nHost: cb.test\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// One canned answer.
#[derive(Clone)]
pub(crate) struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Arc<Vec<u8>>,
}

impl Canned {
    pub(crate) fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Canned {
        Canned {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: Arc::new(body.into()),
        }
    }
}

/// POST bodies received, with `host path`.
type Posts = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// Answers canned by host and path.
type Answers<T> = Arc<Mutex<HashMap<(String, String), T>>>;

/// A web on loopback whose answers a test writes byte for byte, per host and path; anything
/// else is 404. Every request is logged as `host path`.
pub(crate) struct HostileWeb {
    pub addr: SocketAddr,
    pages: Answers<Canned>,
    /// Answers given once each, in order, before `pages` (the last one given stays there).
    queued: Answers<std::collections::VecDeque<Canned>>,
    log: Arc<Mutex<Vec<String>>>,
    posts: Posts,
    /// Hosts that answer every conditional request 304, whatever they serve.
    claims_unchanged: Arc<Mutex<Vec<String>>>,
    _runtime: tokio::runtime::Runtime,
}

impl HostileWeb {
    pub(crate) fn start() -> HostileWeb {
        Self::start_on([127, 0, 0, 1])
    }

    /// On another loopback address (`127.0.0.2`), so that `127.0.0.1` can stand for the
    /// inside of a network the crawler must never reach.
    pub(crate) fn start_on(ip: [u8; 4]) -> HostileWeb {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let pages: Answers<Canned> = Arc::default();
        let queued: Answers<std::collections::VecDeque<Canned>> = Arc::default();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let posts: Posts = Arc::default();
        let claims_unchanged: Arc<Mutex<Vec<String>>> = Arc::default();
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::from(ip), 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (p, q, l, b, u) = (
            pages.clone(),
            queued.clone(),
            log.clone(),
            posts.clone(),
            claims_unchanged.clone(),
        );
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new().fallback(move |req: Request<Body>| {
                let (pages, queued, log, bodies, unchanged) =
                    (p.clone(), q.clone(), l.clone(), b.clone(), u.clone());
                async move {
                    let host = req
                        .headers()
                        .get("host")
                        .and_then(|h| h.to_str().ok())
                        .unwrap_or("")
                        .split(':')
                        .next()
                        .unwrap_or("")
                        .to_string();
                    let path = req
                        .uri()
                        .path_and_query()
                        .map(|p| p.as_str().to_string())
                        .unwrap_or_default();
                    let conditional = req.headers().contains_key("if-none-match")
                        || req.headers().contains_key("if-modified-since");
                    let credentials = req.headers().contains_key("authorization");
                    log.lock().unwrap().push(if credentials {
                        format!("{host} {path} (with credentials)")
                    } else {
                        format!("{host} {path}")
                    });
                    if conditional && unchanged.lock().unwrap().contains(&host) {
                        return Response::builder()
                            .status(StatusCode::NOT_MODIFIED)
                            .body(Body::empty())
                            .unwrap();
                    }
                    let key = (host.clone(), req.uri().path().to_string());
                    let next = queued
                        .lock()
                        .unwrap()
                        .get_mut(&key)
                        .and_then(|q| q.pop_front());
                    let canned = match next {
                        Some(c) => {
                            pages.lock().unwrap().insert(key, c.clone());
                            Some(c)
                        }
                        None => pages.lock().unwrap().get(&key).cloned(),
                    };
                    if req.method() == axum::http::Method::POST {
                        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
                            .await
                            .map(|b| b.to_vec())
                            .unwrap_or_default();
                        bodies
                            .lock()
                            .unwrap()
                            .push((format!("{host} {path}"), body));
                    }
                    match canned {
                        Some(c) => {
                            let mut r = Response::builder()
                                .status(StatusCode::from_u16(c.status).unwrap_or(StatusCode::OK));
                            for (n, v) in &c.headers {
                                r = r.header(n.as_str(), v.as_str());
                            }
                            r.body(Body::from(c.body.as_ref().clone())).unwrap()
                        }
                        None => Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .body(Body::from("not found"))
                            .unwrap(),
                    }
                }
            });
            let _ = axum::serve(listener, app).await;
        });
        HostileWeb {
            addr,
            pages,
            queued,
            log,
            posts,
            claims_unchanged,
            _runtime: runtime,
        }
    }

    /// Makes `host` answer every conditional request 304 (Not Modified), as a site that
    /// wants its claims confirmed without showing its pages would.
    pub(crate) fn answer_unchanged(&self, host: &str) {
        self.claims_unchanged.lock().unwrap().push(host.to_string());
    }

    pub(crate) fn set(&self, host: &str, path: &str, canned: Canned) {
        self.pages
            .lock()
            .unwrap()
            .insert((host.to_string(), path.to_string()), canned);
    }

    /// The next requests for `path` get `answers`, one each in order; the last one then stays.
    pub(crate) fn then(&self, host: &str, path: &str, answers: Vec<Canned>) {
        self.queued
            .lock()
            .unwrap()
            .insert((host.to_string(), path.to_string()), answers.into());
    }

    pub(crate) fn origin(&self, host: &str) -> String {
        format!("http://{host}:{}", self.addr.port())
    }

    pub(crate) fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The bodies of the POST requests so far, with `host path`.
    pub(crate) fn posts(&self) -> Vec<(String, Vec<u8>)> {
        self.posts.lock().unwrap().clone()
    }

    /// `--resolve` arguments sending these hosts here.
    pub(crate) fn resolve_args(&self, hosts: &[&str]) -> Vec<String> {
        hosts
            .iter()
            .flat_map(|h| ["--resolve".to_string(), format!("{h}={}", self.addr.ip())])
            .collect()
    }
}

//! A web of our own for crawler tests and benchmarks: one HTTP server on loopback serving
//! several virtual hosts (told apart by the `Host` header; the crawler reaches them with
//! `--resolve NAME=127.0.0.1`), with generated pages of known link structure, robots.txt
//! variants, traps, slow and failing pages, 429 with `Retry-After`, redirects and loops.
//!
//! Every request is logged on the server side with its arrival time, so tests can assert
//! what was fetched, how often, and how far apart.

use axum::body::Body;
use axum::http::{HeaderMap, Request, Response, StatusCode, header};
use chrono::{DateTime, Utc};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop_protocol::sitemap::{URLSET_HEAD, URLSET_TAIL, write_url};

mod feed;
mod render;
pub use feed::{FEED_ENTRIES, Feed, FeedNaming};
use render::{header_str, page, redirect, text};

/// What a host's robots.txt says (or does).
#[derive(Debug, Clone, PartialEq)]
pub enum Robots {
    /// 200, everything allowed but `/private/`.
    Allow,
    /// 200, `Disallow: /`.
    DisallowAll,
    /// 404: no rules.
    NotFound,
    /// 500: nothing may be fetched for now.
    ServerError,
    /// Never answers (the crawler's timeout decides).
    Timeout,
    /// 200, `/private/` disallowed and this `Crawl-delay` in seconds.
    CrawlDelay(f64),
    /// 200 with this body, `{origin}` replaced by the host's origin.
    Custom(String),
}

/// A host's `/sitemap.xml` (named in its robots.txt), and how true its `lastmod` values are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sitemap {
    /// Every page with the time it last changed.
    Honest,
    /// Every page stamped with the time of the request, as some CMSs do.
    Stamped,
    /// Honest, but three pages in turn claim to have changed just now, on every request.
    Lying,
}

/// One virtual host.
#[derive(Debug, Clone)]
pub struct HostSpec {
    /// Its name (`alpha.test`).
    pub name: String,
    /// Generated pages `/p/0.html` .. `/p/{n-1}.html`; `/` links to `/p/0.html`.
    pub pages: usize,
    /// Page `i` links to pages `fanout*i+1 ..= fanout*i+fanout`.
    pub fanout: usize,
    /// robots.txt.
    pub robots: Robots,
    /// Hosts (of this web) whose home page `/p/0.html` also links to.
    pub links_to: Vec<String>,
    /// Bytes of filler text per page.
    pub page_bytes: usize,
    /// Whether `/` also links to the special pages (traps, redirects, failures...).
    pub features: bool,
    /// A link farm: `/` links to `/fat/0.html` .. `/fat/{pages-1}.html`, each with `links`
    /// links to distinct pages spread over `hosts` (this host if empty).
    pub farm: Option<Farm>,
    /// A sitemap of `/` and the generated pages.
    pub sitemap: Option<Sitemap>,
    /// A feed of the newest generated pages, named by every page as `feed_named` says.
    pub feed: Option<Feed>,
    /// Where pages name the feed.
    pub feed_named: FeedNaming,
    /// Files served as they are: (path, text), e.g. an IndexNow key file.
    pub files: Vec<(String, String)>,
    /// The WebSub hub its feed names (in the document and its `Link` header).
    pub hub: Option<String>,
    /// How long each generated page takes to answer.
    pub latency: Duration,
}

/// Pages with many links each, to fill a frontier.
#[derive(Debug, Clone)]
pub struct Farm {
    /// Pages.
    pub pages: usize,
    /// Links per page.
    pub links: usize,
    /// Hosts the links point to.
    pub hosts: Vec<String>,
}

impl HostSpec {
    /// A host with `pages` generated pages, fan-out 3, robots.txt [`Robots::Allow`].
    pub fn new(name: &str, pages: usize) -> HostSpec {
        HostSpec {
            name: name.to_string(),
            pages,
            fanout: 3,
            robots: Robots::Allow,
            links_to: Vec::new(),
            page_bytes: 2000,
            features: false,
            farm: None,
            sitemap: None,
            feed: None,
            feed_named: FeedNaming::Head,
            files: Vec::new(),
            hub: None,
            latency: Duration::ZERO,
        }
    }

    /// Each generated page takes this long to answer.
    pub fn latency(mut self, latency: Duration) -> HostSpec {
        self.latency = latency;
        self
    }

    /// Publishes a sitemap.
    pub fn sitemap(mut self, sitemap: Sitemap) -> HostSpec {
        self.sitemap = Some(sitemap);
        self
    }

    /// Publishes a feed.
    pub fn feed(mut self, feed: Feed) -> HostSpec {
        self.feed = Some(feed);
        self
    }

    /// Sets robots.txt.
    pub fn robots(mut self, robots: Robots) -> HostSpec {
        self.robots = robots;
        self
    }

    /// Turns the special pages on.
    pub fn with_features(mut self) -> HostSpec {
        self.features = true;
        self
    }

    /// Paths of the generated pages reachable from `/`, including `/private/` copies unless
    /// robots.txt forbids them.
    pub fn generated_paths(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        out.insert("/".to_string());
        for i in 0..self.pages {
            out.insert(format!("/p/{i}.html"));
            if !matches!(self.robots, Robots::Allow | Robots::CrawlDelay(_)) {
                out.insert(format!("/private/{i}.html"));
            }
        }
        out
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Logged {
    /// Host name (without port).
    pub host: String,
    /// Path and query.
    pub target: String,
    /// When it arrived.
    pub arrived: Instant,
    /// Status sent; 0 while not answered (held at the gate, still sleeping, or the client
    /// went away first).
    pub status: u16,
    /// When the response was ready to send.
    pub answered: Option<Instant>,
    /// `If-None-Match` sent.
    pub if_none_match: Option<String>,
    /// `If-Modified-Since` sent.
    pub if_modified_since: Option<String>,
    /// `User-Agent` sent.
    pub user_agent: Option<String>,
}

/// A page's version number and when it was set.
type Version = (u32, DateTime<Utc>);

struct State {
    port: u16,
    hosts: HashMap<String, HostSpec>,
    log: Mutex<Vec<Logged>>,
    arrivals: AtomicU64,
    gate: AtomicU64,
    counters: Mutex<HashMap<String, u32>>,
    /// Per host and path: a version number that changes the page's content (refresh tests),
    /// and when it last changed.
    versions: Mutex<HashMap<(String, String), Version>>,
}

/// A running test web; stopped when dropped.
pub struct TestWeb {
    /// Where it listens.
    pub addr: SocketAddr,
    state: Arc<State>,
    _server: ServerThread,
}

/// A server's own thread and two-worker runtime, stopped (and its requests under way dropped)
/// when this is dropped.
pub(crate) struct ServerThread {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    /// Runs `serve` on a runtime of its own until the receiver it is given says stop.
    pub(crate) fn start<F, Fut>(serve: F) -> ServerThread
    where
        F: FnOnce(tokio::sync::oneshot::Receiver<()>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()>,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("runtime: {e}"));
            rt.block_on(serve(rx));
            // Requests held at a gate never end: do not wait for them.
            rt.shutdown_timeout(Duration::from_millis(10));
        });
        ServerThread {
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Last-Modified of every generated page (fixed, so conditional requests can match).
pub const LAST_MODIFIED: &str = "Sat, 21 Nov 2026 08:00:00 GMT";

impl TestWeb {
    /// Starts the server on a free loopback port with these hosts.
    pub fn start(hosts: Vec<HostSpec>) -> TestWeb {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("local_addr: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("nonblocking: {e}"));
        let state = Arc::new(State {
            port: addr.port(),
            hosts: hosts.into_iter().map(|h| (h.name.clone(), h)).collect(),
            log: Mutex::new(Vec::new()),
            arrivals: AtomicU64::new(0),
            gate: AtomicU64::new(u64::MAX),
            counters: Mutex::new(HashMap::new()),
            versions: Mutex::new(HashMap::new()),
        });
        let s = state.clone();
        let server = ServerThread::start(move |rx| async move {
            let listener = tokio::net::TcpListener::from_std(listener)
                .unwrap_or_else(|e| panic!("listener: {e}"));
            let app = axum::Router::new().fallback(move |req: Request<Body>| {
                let s = s.clone();
                async move { handle(s, req).await }
            });
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        TestWeb {
            addr,
            state,
            _server: server,
        }
    }

    /// `http://NAME:PORT` of a host.
    pub fn origin(&self, host: &str) -> String {
        format!("http://{host}:{}", self.addr.port())
    }

    /// The `--resolve` arguments that send every host here.
    pub fn resolve_args(&self) -> Vec<String> {
        let mut names: Vec<&String> = self.state.hosts.keys().collect();
        names.sort();
        names
            .into_iter()
            .flat_map(|n| ["--resolve".to_string(), format!("{n}=127.0.0.1")])
            .collect()
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Logged> {
        self.state.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Requests that arrived so far (answered or held).
    pub fn arrivals(&self) -> u64 {
        self.state.arrivals.load(Ordering::SeqCst)
    }

    /// Answers only the first `n` requests from now on; later ones are held forever.
    pub fn close_gate_after(&self, n: u64) {
        self.state.gate.store(n, Ordering::SeqCst);
    }

    /// Answers every request again (those held stay held).
    pub fn open_gate(&self) {
        self.state.gate.store(u64::MAX, Ordering::SeqCst);
    }

    /// Changes the content of a page (its links stay the same).
    pub fn change(&self, host: &str, path: &str) {
        bump(&self.state, host, path);
    }

    /// A handle that changes pages from another thread, like [`TestWeb::change`].
    pub fn changer(&self) -> impl Fn(&str, &str) + Send + 'static {
        let state = self.state.clone();
        move |host: &str, path: &str| bump(&state, host, path)
    }

    /// How many answered requests each `host path` got.
    pub fn answered_counts(&self) -> HashMap<(String, String), usize> {
        let mut out = HashMap::new();
        for r in self.log().into_iter().filter(|r| r.status != 0) {
            *out.entry((r.host, r.target)).or_insert(0) += 1;
        }
        out
    }
}

fn bump(s: &State, host: &str, path: &str) {
    if let Ok(mut v) = s.versions.lock() {
        let e = v
            .entry((host.to_string(), path.to_string()))
            .or_insert((0, Utc::now()));
        e.0 += 1;
        e.1 = Utc::now();
    }
}

/// `/sitemap.xml` of a host: `/` and every generated page, dated as `kind` says.
fn sitemap(s: &State, host: &str, spec: &HostSpec, kind: Sitemap) -> Response<Body> {
    let published = DateTime::parse_from_rfc2822(LAST_MODIFIED)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default();
    let now = Utc::now();
    let turn = count(s, format!("{host}/sitemap")) as usize;
    let versions = s.versions.lock().map(|v| v.clone()).unwrap_or_default();
    let mut paths = vec!["/".to_string()];
    paths.extend((0..spec.pages).map(|i| format!("/p/{i}.html")));
    let mut body = String::from(URLSET_HEAD);
    for (i, path) in paths.iter().enumerate() {
        let honest = versions
            .get(&(host.to_string(), path.clone()))
            .map_or(published, |v| v.1);
        let lying = (i + 3 * turn) % paths.len().max(1) < 3;
        let lastmod = match kind {
            Sitemap::Honest => honest,
            Sitemap::Stamped => now,
            Sitemap::Lying if lying => now,
            Sitemap::Lying => honest,
        };
        let loc = format!("http://{host}:{}{path}", s.port);
        write_url(&mut body, &loc, Some(lastmod), None, None);
    }
    body.push_str(URLSET_TAIL);
    text(StatusCode::OK, "application/xml", body)
}

async fn handle(s: Arc<State>, req: Request<Body>) -> Response<Body> {
    let arrived = Instant::now();
    let headers = req.headers().clone();
    let host = header_str(&headers, header::HOST)
        .or_else(|| req.uri().host().map(str::to_string))
        .unwrap_or_default();
    let host = host.split(':').next().unwrap_or("").to_ascii_lowercase();
    let path = req.uri().path().to_string();
    let target = match req.uri().query() {
        Some(q) => format!("{path}?{q}"),
        None => path.clone(),
    };
    let entry = Logged {
        host: host.clone(),
        target,
        arrived,
        status: 0,
        answered: None,
        if_none_match: header_str(&headers, header::IF_NONE_MATCH),
        if_modified_since: header_str(&headers, header::IF_MODIFIED_SINCE),
        user_agent: header_str(&headers, header::USER_AGENT),
    };
    let n = s.arrivals.fetch_add(1, Ordering::SeqCst);
    let held = n >= s.gate.load(Ordering::SeqCst);
    // Logged on arrival (a request never answered shows with status 0), completed below.
    let index = match s.log.lock() {
        Ok(mut log) => {
            log.push(entry);
            log.len() - 1
        }
        Err(_) => usize::MAX,
    };
    if held {
        std::future::pending::<()>().await;
    }
    let response = respond(&s, &host, &path, req.uri().query(), &headers).await;
    if let Ok(mut log) = s.log.lock()
        && let Some(e) = log.get_mut(index)
    {
        e.status = response.status().as_u16();
        e.answered = Some(Instant::now());
    }
    response
}

fn count(s: &State, key: String) -> u32 {
    let mut c = match s.counters.lock() {
        Ok(c) => c,
        Err(_) => return 0,
    };
    let v = c.entry(key).or_insert(0);
    *v += 1;
    *v
}

async fn respond(
    s: &State,
    host: &str,
    path: &str,
    query: Option<&str>,
    headers: &HeaderMap,
) -> Response<Body> {
    let Some(spec) = s.hosts.get(host) else {
        return text(
            StatusCode::NOT_FOUND,
            "text/plain",
            format!("no host {host}"),
        );
    };
    if path == "/robots.txt" {
        return match &spec.robots {
            Robots::Allow if spec.sitemap.is_some() => text(
                StatusCode::OK,
                "text/plain",
                format!(
                    "User-agent: *\nDisallow: /private/\nSitemap: http://{host}:{}/sitemap.xml\n",
                    s.port
                ),
            ),
            Robots::Allow => text(
                StatusCode::OK,
                "text/plain",
                "User-agent: *\nDisallow: /private/\n",
            ),
            Robots::DisallowAll => {
                text(StatusCode::OK, "text/plain", "User-agent: *\nDisallow: /\n")
            }
            Robots::NotFound => text(StatusCode::NOT_FOUND, "text/plain", "not found"),
            Robots::ServerError => text(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", "oops"),
            Robots::Timeout => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                text(StatusCode::OK, "text/plain", "")
            }
            Robots::CrawlDelay(d) => text(
                StatusCode::OK,
                "text/plain",
                format!("User-agent: *\nDisallow: /private/\nCrawl-delay: {d}\n"),
            ),
            Robots::Custom(body) => {
                let origin = format!("http://{host}:{}", s.port);
                text(
                    StatusCode::OK,
                    "text/plain",
                    body.replace("{origin}", &origin),
                )
            }
        };
    }
    if path == "/sitemap.xml"
        && let Some(kind) = spec.sitemap
    {
        return sitemap(s, host, spec, kind);
    }
    if let Some(kind) = spec.feed.filter(|k| k.path() == path) {
        return feed::feed_of(s, host, spec, kind);
    }
    if let Some((_, body)) = spec.files.iter().find(|(p, _)| p == path) {
        return text(StatusCode::OK, "text/plain; charset=utf-8", body.clone());
    }
    let version = s
        .versions
        .lock()
        .ok()
        .and_then(|v| v.get(&(host.to_string(), path.to_string())).map(|v| v.0))
        .unwrap_or(0);
    let etag = format!("\"{host}{path}v{version}\"");
    let generated = |title: String, links: Vec<String>| {
        let mut title = title;
        if version > 0 {
            let _ = write!(title, " (version {version})");
        }
        let mut r = text(
            StatusCode::OK,
            "text/html; charset=utf-8",
            page(
                &title,
                &links,
                spec.page_bytes,
                &spec
                    .feed
                    .map(|f| f.head_link(spec.feed_named))
                    .unwrap_or_default(),
            ),
        );
        if let Some(v) = spec.feed.and_then(|f| f.header_link(spec.feed_named)) {
            r.headers_mut().insert(header::LINK, v);
        }
        if let (Ok(e), Ok(lm)) = (etag.parse(), LAST_MODIFIED.parse()) {
            r.headers_mut().insert(header::ETAG, e);
            if version == 0 {
                r.headers_mut().insert(header::LAST_MODIFIED, lm);
            }
        }
        r
    };
    let not_modified = header_str(headers, header::IF_NONE_MATCH).is_some_and(|v| v == etag);
    let generated_path = path == "/"
        || (path.starts_with("/p/") || path.starts_with("/private/")) && path.ends_with(".html");
    if generated_path && not_modified {
        let mut r = text(StatusCode::NOT_MODIFIED, "text/html", Body::empty());
        if let Ok(e) = etag.parse() {
            r.headers_mut().insert(header::ETAG, e);
        }
        return r;
    }
    if let Some(farm) = &spec.farm {
        if path == "/" {
            let links: Vec<String> = (0..farm.pages).map(|i| format!("/fat/{i}.html")).collect();
            return generated(format!("{host} farm"), links);
        }
        if let Some(i) = path
            .strip_prefix("/fat/")
            .and_then(|p| p.strip_suffix(".html"))
        {
            let mut body = String::with_capacity(farm.links * 48);
            body.push_str("<!DOCTYPE html><html><body>\n");
            for j in 0..farm.links {
                let target = if farm.hosts.is_empty() {
                    host
                } else {
                    farm.hosts[j % farm.hosts.len()].as_str()
                };
                let _ = writeln!(
                    body,
                    "<a href=\"http://{target}:{}/u/{i}/{j}.html\">{j}</a>",
                    s.port
                );
            }
            body.push_str("</body></html>\n");
            return text(StatusCode::OK, "text/html", body);
        }
    }
    if path == "/" {
        let mut links = vec!["/p/0.html".to_string()];
        if spec.features {
            links.extend(FEATURE_LINKS.iter().map(|l| l.to_string()));
        }
        return generated(format!("{host} home"), links);
    }
    let number = |prefix: &str| -> Option<usize> {
        path.strip_prefix(prefix)?
            .strip_suffix(".html")?
            .parse()
            .ok()
    };
    if let Some(i) = number("/p/").filter(|i| *i < spec.pages) {
        if !spec.latency.is_zero() {
            tokio::time::sleep(spec.latency).await;
        }
        let mut links: Vec<String> = (1..=spec.fanout)
            .map(|k| spec.fanout * i + k)
            .filter(|c| *c < spec.pages)
            .map(|c| format!("/p/{c}.html"))
            .collect();
        links.push("/".to_string());
        links.push(format!("/private/{i}.html"));
        if i == 0 {
            links.extend(
                spec.links_to
                    .iter()
                    .map(|h| format!("http://{h}:{}/", s.port)),
            );
        }
        return generated(format!("{host} page {i}"), links);
    }
    if let Some(i) = number("/private/").filter(|i| *i < spec.pages) {
        return generated(format!("{host} private {i}"), Vec::new());
    }
    if spec.features
        && let Some(r) = feature(s, host, path, query, spec).await
    {
        return r;
    }
    text(StatusCode::NOT_FOUND, "text/html", "<p>not found</p>")
}

/// What `/` links to on a host with features.
pub const FEATURE_LINKS: &[&str] = &[
    "/cal?d=0",
    "/session?PHPSESSID=a1b2c3",
    "/loop/a",
    "/moved",
    "/slow.html",
    "/fail.html",
    "/busy.html",
    "/big.bin",
    "/gz.html",
    "/dup/a/page.html",
    "/dup/b/page.html",
    "/image.png",
    "/plain.txt",
    "/nofollow.html",
    "/header-nofollow.html",
    "/other-bot.html",
    "/deep/1.html",
    "/missing.html",
    "/a/a/a/trap.html",
];

/// Paths on a feature host that must never be requested.
pub const NEVER: &[&str] = &[
    "/never-image.html",
    "/never-text.html",
    "/never-meta.html",
    "/never-rel.html",
    "/never-header.html",
    "/a/a/a/trap.html",
    "/cal?d=5",
];

/// Size of `/big.bin` (over the 4 MiB default limit).
pub const BIG: usize = 6 << 20;

async fn feature(
    s: &State,
    host: &str,
    path: &str,
    query: Option<&str>,
    spec: &HostSpec,
) -> Option<Response<Body>> {
    let plain = |title: &str, links: &[&str]| {
        let links: Vec<String> = links.iter().map(|l| l.to_string()).collect();
        text(StatusCode::OK, "text/html", page(title, &links, 200, ""))
    };
    let r = match path {
        "/cal" => {
            // An endless calendar: each day links to the next.
            let d: u64 = query
                .and_then(|q| q.strip_prefix("d="))
                .and_then(|d| d.parse().ok())
                .unwrap_or(0);
            let next = format!("/cal?d={}", d + 1);
            plain(&format!("day {d}"), &[&next])
        }
        "/session" => {
            // Every visit mints a new session id: the same pages under endless names.
            let n = count(s, format!("{host}/session-ids"));
            let a = format!("/session?PHPSESSID=s{n}x&page=2");
            let b = format!("/session?page=2&sid={n}");
            plain("session", &[&a, &b])
        }
        "/loop/a" => redirect(StatusCode::FOUND, "/loop/b"),
        "/loop/b" => redirect(StatusCode::FOUND, "/loop/a"),
        "/moved" => redirect(StatusCode::MOVED_PERMANENTLY, "/landing.html"),
        "/landing.html" => plain("landing", &[]),
        "/slow.html" => {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            plain("slow", &[])
        }
        "/fail.html" => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/html",
            "<p>failure</p>",
        ),
        "/busy.html" => {
            if count(s, format!("{host}/busy")) == 1 {
                let mut r = text(
                    StatusCode::TOO_MANY_REQUESTS,
                    "text/html",
                    "<p>slow down</p>",
                );
                r.headers_mut().insert(
                    header::RETRY_AFTER,
                    axum::http::HeaderValue::from_static("2"),
                );
                r
            } else {
                plain("busy, now served", &[])
            }
        }
        "/big.bin" => text(StatusCode::OK, "application/octet-stream", vec![b'b'; BIG]),
        "/gz.html" => {
            let html = page("gzip", &["/from-gz.html".to_string()], spec.page_bytes, "");
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            let _ = gz.write_all(html.as_bytes());
            let mut r = text(StatusCode::OK, "text/html", gz.finish().unwrap_or_default());
            r.headers_mut().insert(
                header::CONTENT_ENCODING,
                axum::http::HeaderValue::from_static("gzip"),
            );
            r
        }
        "/from-gz.html" => plain("reached through a gzip page", &[]),
        "/dup/a/page.html" | "/dup/b/page.html" => plain("same content twice", &["child.html"]),
        "/dup/a/child.html" | "/dup/b/child.html" => plain("child of a duplicate", &[]),
        "/image.png" => text(
            StatusCode::OK,
            "image/png",
            "\u{89}PNG <a href=\"/never-image.html\">",
        ),
        "/plain.txt" => text(
            StatusCode::OK,
            "text/plain",
            "<a href=\"/never-text.html\">not HTML</a>",
        ),
        "/nofollow.html" => {
            let body = page(
                "nofollow",
                &["/never-meta.html".to_string()],
                100,
                "<meta name=\"robots\" content=\"nofollow\">",
            );
            let body = body.replace(
                "</body>",
                "<a rel=\"nofollow\" href=\"/never-rel.html\">x</a></body>",
            );
            text(StatusCode::OK, "text/html", body)
        }
        "/header-nofollow.html" => {
            // Two fields: one for another crawler, one for every crawler.
            let mut r = plain("nofollow in the header", &["/never-header.html"]);
            for value in ["otherbot: noindex", "nofollow"] {
                r.headers_mut()
                    .append("x-robots-tag", axum::http::HeaderValue::from_static(value));
            }
            r
        }
        "/other-bot.html" => {
            let mut r = plain("nofollow for another crawler", &["/for-us.html"]);
            r.headers_mut().insert(
                "x-robots-tag",
                axum::http::HeaderValue::from_static("otherbot: nofollow"),
            );
            r
        }
        "/for-us.html" => plain("followed: the header named another crawler", &[]),
        _ => {
            let n: u32 = path
                .strip_prefix("/deep/")?
                .strip_suffix(".html")?
                .parse()
                .ok()?;
            let next = format!("/deep/{}.html", n + 1);
            plain(&format!("deep {n}"), &[&next])
        }
    };
    Some(r)
}

//! A web of the web's shape for the crawler's benchmark: thousands of hosts, each on a loopback
//! address of its own (127.1.x.y) behind a name that a DNS server of its own answers, served by
//! one process. Links run within and across hosts with a power-law in-degree; some hosts are
//! slow, some fail (never answer, reset, refuse connections, have no name, answer 503 with
//! `Retry-After`, cut their pages short, or err on robots.txt).
//!
//! The server watches the crawler from the outside: every host's requests, connections and
//! name lookups, the shortest gap between a response and the next request against the delay
//! the crawler's default politeness promises (`max(min, factor × response time)`), requests
//! that overlap, requests for disallowed paths, and how many times each page was served.

use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use axum::serve::ListenerExt;
use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, SOA};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod figures;
pub use figures::{EndedLast, Figures, TwiceServed};

/// The domain every host's name ends in (`h17.shape.test`).
pub const DOMAIN: &str = "shape.test";

/// What the web looks like.
#[derive(Debug, Clone)]
pub struct ShapeSpec {
    /// Hosts.
    pub hosts: usize,
    /// Pages of each host (`/` and `/p/1.html` ...).
    pub pages: usize,
    /// Bytes of each page, roughly.
    pub page_bytes: usize,
    /// Links from each page to pages of other hosts, drawn with a power law.
    pub cross_links: usize,
    /// Share of hosts that answer slowly.
    pub slow_share: f64,
    /// Fastest and slowest answer of a slow host, milliseconds (each page its own).
    pub slow_ms: (u64, u64),
    /// Share of hosts that fail (in turn: no answer, reset, 5xx, robots.txt 5xx).
    pub failing_share: f64,
    /// TTL of the DNS answers, seconds.
    pub ttl: u32,
    /// The first this many hosts are always healthy: the crawl's seeds.
    pub seeds: usize,
    /// The delay a polite crawler keeps at least, and its multiple of the response time.
    pub politeness: (Duration, f64),
    /// Seed of the generator: the same spec gives the same web.
    pub seed: u64,
}

impl Default for ShapeSpec {
    fn default() -> Self {
        ShapeSpec {
            hosts: 10_000,
            pages: 100,
            page_bytes: 2_000,
            cross_links: 3,
            slow_share: 0.02,
            slow_ms: (100, 2_000),
            failing_share: 0.02,
            ttl: 300,
            seeds: 20,
            politeness: (Duration::from_secs(1), 5.0),
            seed: 1,
        }
    }
}

/// How a host behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Answers at once.
    Fast,
    /// Answers after its page's latency.
    Slow,
    /// Accepts connections and never answers.
    Silent,
    /// Resets every connection.
    Reset,
    /// robots.txt allows everything, every page is a 503.
    ServerError,
    /// robots.txt is a 500: nothing may be fetched.
    RobotsError,
    /// Nothing listens at its address: every connection is refused.
    Refused,
    /// Its name does not resolve (NXDOMAIN).
    NoName,
    /// robots.txt is served; every page is cut short (its connection closed mid-body).
    CutShort,
}

impl Kind {
    /// Whether the host's pages can be crawled at all.
    pub fn serves_pages(self) -> bool {
        matches!(self, Kind::Fast | Kind::Slow)
    }
}

/// What the server saw of one host.
#[derive(Default)]
struct Seen {
    requests: AtomicU32,
    connections: AtomicU32,
    lookups: AtomicU32,
    in_flight: AtomicU32,
    overlaps: AtomicU32,
    forbidden: AtomicU32,
    last_answered_ns: AtomicU64,
    first_arrived_ns: AtomicU64,
    required_ns: AtomicU64,
    min_gap_ns: AtomicI64,
    gap_required_ns: AtomicU64,
    floor_ns: AtomicU64,
    /// Past the delay after the previous answer: the longest wait, when it ended, how many
    /// passed a second.
    longest_wait_ns: AtomicU64,
    longest_wait_until_ns: AtomicU64,
    waits_over_second: AtomicU32,
}

struct Web {
    spec: ShapeSpec,
    kinds: Vec<Kind>,
    seen: Vec<Seen>,
    /// Times each page (and robots.txt, last of each host) was answered with a 200.
    served: Vec<AtomicU8>,
    /// When each page was first answered, nanoseconds after `start` (0: never): which of the
    /// pages served twice were answered just before a kill, and which long before.
    first_answered_ns: Vec<AtomicU64>,
    /// When the request that first answered each page arrived (0: never).
    first_asked_ns: Vec<AtomicU64>,
    start: Instant,
    port: u16,
    /// Requests that arrived at any host so far, and how many are answered before the rest
    /// are held (for a kill with nothing answered in flight).
    arrivals: AtomicU64,
    gate: AtomicU64,
}

/// A running web of this shape; stops when dropped.
pub struct WebShape {
    web: Arc<Web>,
    /// The DNS server's address (UDP).
    pub dns: SocketAddr,
    _server: crate::testweb::ServerThread,
}

fn mix(mut x: u64) -> u64 {
    // splitmix64: a fixed, well-spread hash, so the same spec gives the same web.
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn unit(x: u64) -> f64 {
    (x >> 11) as f64 / (1u64 << 53) as f64
}

/// The loopback address of host `i`.
pub fn host_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 1 + (i >> 16) as u8, (i >> 8) as u8, i as u8)
}

/// The name of host `i`.
pub fn host_name(i: usize) -> String {
    format!("h{i}.{DOMAIN}")
}

fn host_index(name: &str, hosts: usize) -> Option<usize> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let i: usize = name
        .strip_suffix(DOMAIN)?
        .strip_suffix('.')?
        .strip_prefix('h')?
        .parse()
        .ok()?;
    (i < hosts).then_some(i)
}

fn kinds(spec: &ShapeSpec) -> Vec<Kind> {
    const FAILING: [Kind; 7] = [
        Kind::Silent,
        Kind::Reset,
        Kind::ServerError,
        Kind::RobotsError,
        Kind::Refused,
        Kind::NoName,
        Kind::CutShort,
    ];
    let mut failing = 0;
    (0..spec.hosts)
        .map(|i| {
            let u = unit(mix(spec.seed ^ (i as u64) << 8));
            // Hosts whose root links to others (4i+1..4i+4) never fail, so that every healthy
            // host can be reached; the leaves (three in four) fail a third more often instead.
            let parent = 4 * i + 1 < spec.hosts;
            let failing_below = spec.failing_share * 4.0 / 3.0;
            if i < spec.seeds || (u < failing_below && parent) {
                Kind::Fast
            } else if u < failing_below {
                failing += 1;
                FAILING[(failing - 1) % FAILING.len()]
            } else if u < failing_below + spec.slow_share {
                Kind::Slow
            } else {
                Kind::Fast
            }
        })
        .collect()
}

impl Web {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn latency(&self, host: usize, page: usize) -> Duration {
        if self.kinds[host] != Kind::Slow {
            return Duration::ZERO;
        }
        let (lo, hi) = self.spec.slow_ms;
        let span = hi.saturating_sub(lo) + 1;
        Duration::from_millis(lo + mix(self.spec.seed ^ ((host as u64) << 20) ^ page as u64) % span)
    }

    fn required(&self, took: Duration) -> Duration {
        let (min, factor) = self.spec.politeness;
        min.max(took.mul_f64(factor))
    }

    /// A power-law draw in `0..n`: rank r has weight about 1/(r+1).
    fn zipf(&self, n: usize, key: u64) -> usize {
        let r = (n as f64).powf(unit(mix(key))) as usize;
        r.saturating_sub(1).min(n.saturating_sub(1))
    }

    fn page_path(j: usize) -> String {
        if j == 0 {
            "/".into()
        } else {
            format!("/p/{j}.html")
        }
    }

    fn page(&self, host: usize, j: usize) -> String {
        let spec = &self.spec;
        let mut links = Vec::new();
        for child in [2 * j + 1, 2 * j + 2] {
            if child < spec.pages {
                links.push(Self::page_path(child));
            }
        }
        links.push("/".into());
        if j == 0 {
            for h in 4 * host + 1..=4 * host + 4 {
                if h < spec.hosts {
                    links.push(format!("http://{}:{}/", host_name(h), self.port));
                }
            }
        }
        for k in 0..spec.cross_links {
            let key = spec.seed ^ ((host as u64) << 32) ^ ((j as u64) << 8) ^ k as u64;
            let h = self.zipf(spec.hosts, key);
            let p = self.zipf(spec.pages, key.rotate_left(17));
            links.push(format!(
                "http://{}:{}{}",
                host_name(h),
                self.port,
                Self::page_path(p)
            ));
        }
        if j % 10 == 3 {
            links.push(format!("/private/{j}.html"));
        }
        let mut body = format!(
            "<!doctype html><html><head><title>h{host} page {j}</title></head><body><ul>\n"
        );
        for l in &links {
            let _ = writeln!(body, "<li><a href=\"{l}\">{l}</a></li>");
        }
        body.push_str("</ul><p>");
        let words = ["crawl", "host", "page", "shape", "link", "polite", "queue"];
        let mut k = mix(spec.seed ^ host as u64 ^ ((j as u64) << 40));
        while body.len() < spec.page_bytes {
            body.push_str(words[(k % words.len() as u64) as usize]);
            body.push(' ');
            k = mix(k);
        }
        body.push_str("</p></body></html>\n");
        body
    }

    async fn handle(self: Arc<Self>, req: Request<Body>) -> Response<Body> {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(|h| h.rsplit_once(':').map_or(h, |(n, _)| n))
            .and_then(|n| host_index(n, self.spec.hosts));
        let Some(host) = host else {
            return text(StatusCode::MISDIRECTED_REQUEST, "no such host\n".into());
        };
        let seen = &self.seen[host];
        let n = self.arrivals.fetch_add(1, Ordering::AcqRel);
        if n >= self.gate.load(Ordering::Acquire) {
            while n >= self.gate.load(Ordering::Acquire) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // Its asker is gone (killed at the gate): neither counted nor answered.
            return text(StatusCode::SERVICE_UNAVAILABLE, "held\n".into());
        }
        let arrived = self.now_ns();
        let _ = seen.first_arrived_ns.compare_exchange(
            0,
            arrived.max(1),
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        seen.requests.fetch_add(1, Ordering::Relaxed);
        if seen.in_flight.fetch_add(1, Ordering::AcqRel) > 0 {
            seen.overlaps.fetch_add(1, Ordering::Relaxed);
        }
        // Ended when this future ends, answered or dropped: the server drops a request whose
        // connection closed (its asker killed), and a count left up would make every later
        // request to the host look overlapping.
        let _under_way = UnderWay(&seen.in_flight);
        let last = seen.last_answered_ns.load(Ordering::Acquire);
        if last > 0 {
            let gap = arrived as i64 - last as i64;
            let required = seen.required_ns.load(Ordering::Acquire);
            // Kept as the gap of the smallest gap/required ratio.
            let old = seen.min_gap_ns.load(Ordering::Acquire);
            let old_req = seen.gap_required_ns.load(Ordering::Acquire);
            let closer =
                old_req == 0 || (gap as f64) * (old_req as f64) < (old as f64) * (required as f64);
            if closer {
                seen.min_gap_ns.store(gap, Ordering::Release);
                seen.gap_required_ns.store(required, Ordering::Release);
            }
            let waited = (gap - required as i64).max(0) as u64;
            if waited > 1_000_000_000 {
                seen.waits_over_second.fetch_add(1, Ordering::Relaxed);
            }
            if waited > seen.longest_wait_ns.load(Ordering::Acquire) {
                seen.longest_wait_ns.store(waited, Ordering::Release);
                seen.longest_wait_until_ns.store(arrived, Ordering::Release);
            }
        }
        let path = req.uri().path().to_string();
        let kind = self.kinds[host];
        let robots = path == "/robots.txt";
        let page = if path == "/" {
            Some(0)
        } else {
            path.strip_prefix("/p/")
                .and_then(|p| p.strip_suffix(".html"))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&j| j > 0 && j < self.spec.pages)
        };
        if path.starts_with("/private/") || (kind == Kind::RobotsError && !robots) {
            seen.forbidden.fetch_add(1, Ordering::Relaxed);
        }
        tokio::time::sleep(self.latency(host, page.unwrap_or(self.spec.pages))).await;
        let response = match (kind, robots, page) {
            (Kind::RobotsError, true, _) => {
                text(StatusCode::INTERNAL_SERVER_ERROR, "down\n".into())
            }
            (_, true, _) => {
                self.served_once(host, self.spec.pages, arrived);
                text(
                    StatusCode::OK,
                    "User-agent: *\nDisallow: /private/\n".into(),
                )
            }
            (Kind::ServerError, _, _) => {
                let mut r = text(StatusCode::SERVICE_UNAVAILABLE, "busy\n".into());
                r.headers_mut()
                    .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
                r
            }
            (Kind::CutShort, _, Some(_)) => {
                // Part of a page, then the connection goes: the body never ends.
                let part: Result<bytes::Bytes, std::io::Error> = Ok(bytes::Bytes::from_static(
                    b"<html><body><p>the start of a page",
                ));
                let cut = Err(std::io::Error::other("cut short"));
                let mut r =
                    Response::new(Body::from_stream(futures_util::stream::iter([part, cut])));
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("text/html"),
                );
                r
            }
            (_, _, Some(j)) => {
                self.served_once(host, j, arrived);
                let mut r = text(StatusCode::OK, self.page(host, j));
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static("text/html; charset=utf-8"),
                );
                r
            }
            _ => text(StatusCode::NOT_FOUND, "not found\n".into()),
        };
        let answered = self.now_ns();
        let took = Duration::from_nanos(answered.saturating_sub(arrived));
        let required = self.required(took);
        seen.required_ns
            .store(required.as_nanos() as u64, Ordering::Release);
        seen.last_answered_ns
            .store(answered.max(1), Ordering::Release);
        seen.floor_ns
            .fetch_add((took + required).as_nanos() as u64, Ordering::Relaxed);
        response
    }

    fn served_once(&self, host: usize, j: usize, arrived: u64) {
        let at = host * (self.spec.pages + 1) + j;
        if let Some(n) = self.served.get(at) {
            let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_add(1))
            });
        }
        if let (Some(answered), Some(asked)) =
            (self.first_answered_ns.get(at), self.first_asked_ns.get(at))
        {
            let now = self.now_ns().max(1);
            if answered
                .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                asked.store(arrived.max(1), Ordering::Relaxed);
            }
        }
    }

    fn dns_answer(&self, packet: &[u8]) -> Option<Vec<u8>> {
        let query = Message::from_vec(packet).ok()?;
        let mut reply = Message::new(query.metadata.id, MessageType::Response, OpCode::Query);
        reply.metadata.recursion_desired = query.metadata.recursion_desired;
        reply.metadata.recursion_available = true;
        reply.metadata.authoritative = true;
        let mut known = false;
        for q in &query.queries {
            let name = q.name().to_ascii();
            if let Some(i) =
                host_index(&name, self.spec.hosts).filter(|&i| self.kinds[i] != Kind::NoName)
            {
                known = true;
                self.seen[i].lookups.fetch_add(1, Ordering::Relaxed);
                let owner = Name::from_ascii(&name).ok()?;
                if q.query_type() == RecordType::A {
                    reply.add_answer(Record::from_rdata(
                        owner,
                        self.spec.ttl,
                        RData::A(A(host_addr(i))),
                    ));
                } else {
                    // No data of that type: the zone's SOA lets the answer be cached
                    // (RFC 2308), as an authoritative server's would.
                    let zone = Name::from_ascii(DOMAIN).ok()?;
                    let soa = SOA::new(
                        zone.clone(),
                        zone.clone(),
                        1,
                        3600,
                        600,
                        86_400,
                        self.spec.ttl,
                    );
                    reply.add_authority(Record::from_rdata(zone, self.spec.ttl, RData::SOA(soa)));
                }
            }
            reply.add_query(q.clone());
        }
        if !known {
            reply.metadata.response_code = ResponseCode::NXDomain;
        }
        reply.to_vec().ok()
    }
}

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    r
}

/// Binds every host's address on one port number (tried again on another if any is taken).
fn bind_all(hosts: usize) -> (u16, Vec<std::net::TcpListener>) {
    for _ in 0..20 {
        let first = std::net::TcpListener::bind((host_addr(0), 0))
            .unwrap_or_else(|e| panic!("bind {}: {e}", host_addr(0)));
        let port = first
            .local_addr()
            .unwrap_or_else(|e| panic!("local_addr: {e}"))
            .port();
        let mut all = vec![first];
        for i in 1..hosts {
            match std::net::TcpListener::bind((host_addr(i), port)) {
                Ok(l) => all.push(l),
                Err(_) => break,
            }
        }
        if all.len() == hosts {
            return (port, all);
        }
    }
    panic!("no port free on all {hosts} loopback addresses")
}

impl WebShape {
    /// Starts the DNS server and every host.
    pub fn start(spec: ShapeSpec) -> WebShape {
        let (port, listeners) = bind_all(spec.hosts);
        let dns = std::net::UdpSocket::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("dns: {e}"));
        let dns_addr = dns.local_addr().unwrap_or_else(|e| panic!("dns: {e}"));
        let pages = spec.pages;
        let web = Arc::new(Web {
            kinds: kinds(&spec),
            seen: (0..spec.hosts).map(|_| Seen::default()).collect(),
            served: (0..spec.hosts * (pages + 1))
                .map(|_| AtomicU8::new(0))
                .collect(),
            first_answered_ns: (0..spec.hosts * (pages + 1))
                .map(|_| AtomicU64::new(0))
                .collect(),
            first_asked_ns: (0..spec.hosts * (pages + 1))
                .map(|_| AtomicU64::new(0))
                .collect(),
            spec,
            start: Instant::now(),
            port,
            arrivals: AtomicU64::new(0),
            gate: AtomicU64::new(u64::MAX),
        });
        let w = web.clone();
        let server = crate::testweb::ServerThread::start(move |rx| async move {
            for (i, l) in listeners.into_iter().enumerate() {
                let _ = l.set_nonblocking(true);
                let Ok(l) = tokio::net::TcpListener::from_std(l) else {
                    continue;
                };
                tokio::spawn(serve_host(w.clone(), i, l));
            }
            let _ = dns.set_nonblocking(true);
            if let Ok(sock) = tokio::net::UdpSocket::from_std(dns) {
                tokio::spawn(serve_dns(w.clone(), sock));
            }
            let _ = rx.await;
        });
        WebShape {
            web,
            dns: dns_addr,
            _server: server,
        }
    }

    /// Holds every request after the first `n` (counted from the start) unanswered until
    /// [`WebShape::open_gate`].
    pub fn close_gate_after(&self, n: u64) {
        self.web.gate.store(n, Ordering::Release);
    }

    /// Answers held requests and every later one.
    pub fn open_gate(&self) {
        self.web.gate.store(u64::MAX, Ordering::Release);
    }

    /// Requests that arrived so far (held ones included).
    pub fn arrivals(&self) -> u64 {
        self.web.arrivals.load(Ordering::Acquire)
    }

    /// The port every host listens on.
    pub fn port(&self) -> u16 {
        self.web.port
    }

    /// `http://NAME:PORT/` of host `i`.
    pub fn root(&self, i: usize) -> String {
        format!("http://{}:{}/", host_name(i), self.web.port)
    }

    /// How host `i` behaves.
    pub fn kind(&self, i: usize) -> Kind {
        self.web.kinds[i]
    }

    /// Pages the crawl can get: every page of every healthy host.
    pub fn crawlable(&self) -> u64 {
        let healthy = self.web.kinds.iter().filter(|k| k.serves_pages()).count();
        (healthy * self.web.spec.pages) as u64
    }

    /// The politeness floor of the web as specified, before any crawl: each healthy host's
    /// pages and robots.txt, each answer's latency and the delay it requires after it.
    pub fn nominal_floor(&self) -> Duration {
        let w = &self.web;
        (0..w.spec.hosts)
            .filter(|&i| w.kinds[i].serves_pages())
            .map(|i| {
                let steps: Vec<Duration> = (0..=w.spec.pages).map(|j| w.latency(i, j)).collect();
                let total: Duration = steps.iter().map(|&l| l + w.required(l)).sum();
                total - steps.last().map_or(Duration::ZERO, |&l| w.required(l))
            })
            .max()
            .unwrap_or_default()
    }
}

async fn serve_host(web: Arc<Web>, i: usize, listener: tokio::net::TcpListener) {
    match web.kinds[i] {
        // Nothing listens: connections are refused.
        Kind::Refused => drop(listener),
        Kind::Silent | Kind::Reset => loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            web.seen[i].connections.fetch_add(1, Ordering::Relaxed);
            web.seen[i].requests.fetch_add(1, Ordering::Relaxed);
            if web.kinds[i] == Kind::Reset {
                // A zero linger makes the close a reset.
                let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                drop(stream);
            } else {
                tokio::spawn(async move {
                    let mut stream = stream;
                    let mut buf = [0u8; 1024];
                    use tokio::io::AsyncReadExt;
                    while let Ok(n) = stream.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                });
            }
        },
        _ => {
            let w = web.clone();
            let app = axum::Router::new().fallback(move |req: Request<Body>| {
                let w = w.clone();
                async move { w.handle(req).await }
            });
            let counted = web.clone();
            let listener = listener.tap_io(move |_| {
                counted.seen[i].connections.fetch_add(1, Ordering::Relaxed);
            });
            let _ = axum::serve(listener, app).await;
        }
    }
}

async fn serve_dns(web: Arc<Web>, sock: tokio::net::UdpSocket) {
    let mut buf = vec![0u8; 4096];
    loop {
        let Ok((n, from)) = sock.recv_from(&mut buf).await else {
            continue;
        };
        if let Some(reply) = web.dns_answer(&buf[..n]) {
            let _ = sock.send_to(&reply, from).await;
        }
    }
}

/// A request under way at a host, counted down when it ends however it ends.
struct UnderWay<'a>(&'a AtomicU32);

impl Drop for UnderWay<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_their_hosts_and_nothing_else() {
        assert_eq!(host_index("h17.shape.test", 100), Some(17));
        assert_eq!(host_index("H17.SHAPE.TEST.", 100), Some(17));
        assert_eq!(host_index("h100.shape.test", 100), None);
        assert_eq!(host_index("h1.other.test", 100), None);
        assert_eq!(host_index("x1.shape.test", 100), None);
        assert_eq!(host_addr(0), Ipv4Addr::new(127, 1, 0, 0));
        assert_eq!(host_addr(9_999), Ipv4Addr::new(127, 1, 39, 15));
    }

    #[test]
    fn the_shape_has_its_shares_and_a_power_law() {
        let spec = ShapeSpec::default();
        let k = kinds(&spec);
        let failing = k.iter().filter(|k| !k.serves_pages()).count();
        let slow = k.iter().filter(|&&k| k == Kind::Slow).count();
        assert!((150..250).contains(&failing), "{failing} failing hosts");
        assert!((150..250).contains(&slow), "{slow} slow hosts");
        assert!(k[..spec.seeds].iter().all(|&k| k == Kind::Fast));
        // In-degree of hosts from cross links: the first host gets far more than the median.
        let web = Web {
            kinds: k,
            seen: Vec::new(),
            served: Vec::new(),
            first_answered_ns: Vec::new(),
            first_asked_ns: Vec::new(),
            spec: spec.clone(),
            start: Instant::now(),
            port: 1,
            arrivals: AtomicU64::new(0),
            gate: AtomicU64::new(u64::MAX),
        };
        let mut degree = vec![0u32; spec.hosts];
        for key in 0..200_000u64 {
            degree[web.zipf(spec.hosts, key)] += 1;
        }
        let mut sorted = degree.clone();
        sorted.sort_unstable();
        assert!(
            degree[0] > 50 * sorted[spec.hosts / 2].max(1),
            "{} vs {}",
            degree[0],
            sorted[spec.hosts / 2]
        );
    }
}

//! The connections kept between a host's requests, as bare sockets and TLS sessions pooled per
//! origin. HTTP/1.1's state (hyper's dispatch channel and read buffer, about 35 KiB a
//! connection) exists only while an exchange runs: at thousands of hosts a delay apart, the
//! pool of a general-purpose client held that state for every host between its requests, most
//! of the crawl's memory (docs/ARCHITECTURE.md, "Memory by the page").

use super::FetchError;
use bytes::Bytes;
use http_body_util::Empty;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use url::Url;
use webcoop_netguard::{GuardedResolver, ResolveError};

/// A socket, bare or inside TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }

    /// Whether a kept socket is still open and silent: a server that closed it (or sent
    /// anything unasked) has left nothing to reuse.
    fn still_quiet(&self) -> bool {
        let mut probe = [0u8; 1];
        matches!(self.tcp().try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A socket waiting for its origin's next request.
struct Kept {
    stream: Stream,
    remote: SocketAddr,
    since: Instant,
}

/// The sockets kept, by origin.
struct Pool {
    kept: HashMap<String, Vec<Kept>>,
    /// When expired sockets were last closed (at most once a second, over every origin).
    swept: Instant,
}

impl Pool {
    fn sweep(&mut self, now: Instant, idle: Duration) {
        if now.duration_since(self.swept) < Duration::from_secs(1) {
            return;
        }
        self.swept = now;
        self.kept.retain(|_, list| {
            list.retain(|k| now.duration_since(k.since) < idle);
            !list.is_empty()
        });
    }
}

type Done = JoinHandle<hyper::Result<http1::Parts<TokioIo<Stream>>>>;

/// The crawler's connections: opened through the guarded resolver, kept per origin for
/// `idle`, at most `per_origin` of them.
#[derive(Clone)]
pub(crate) struct Connections {
    pool: Arc<Mutex<Pool>>,
    guard: GuardedResolver,
    tls: tokio_rustls::TlsConnector,
    connect_timeout: Duration,
    per_origin: usize,
    idle: Duration,
}

/// An exchange under way: the response's head, its body to read, and the connection it
/// came on, which goes back to the pool only when the body was read to its end.
pub(crate) struct Exchange {
    /// The response (its body streams from the connection).
    pub(crate) response: http::Response<hyper::body::Incoming>,
    /// The server's address.
    pub(crate) remote: SocketAddr,
    origin: String,
    keep_alive: bool,
    sender: Option<http1::SendRequest<Empty<Bytes>>>,
    done: Task,
    pool: Arc<Mutex<Pool>>,
    idle: Duration,
    per_origin: usize,
}

impl Connections {
    /// Connections with TLS verified by the platform's roots.
    pub(crate) fn new(
        guard: GuardedResolver,
        connect_timeout: Duration,
        per_origin: usize,
        idle: Duration,
    ) -> Result<Connections, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone())?;
        Connections::verified_by(verifier, provider, guard, connect_timeout, per_origin, idle)
    }

    /// Connections trusting `root` besides the platform's roots, for tests.
    #[cfg(test)]
    pub(crate) fn trusting(
        root: rustls::pki_types::CertificateDer<'static>,
        guard: GuardedResolver,
    ) -> Result<Connections, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls_platform_verifier::Verifier::new_with_extra_roots([root], provider.clone())?;
        let second = Duration::from_secs(1);
        Connections::verified_by(verifier, provider, guard, second, 1, 10 * second)
    }

    fn verified_by(
        verifier: rustls_platform_verifier::Verifier,
        provider: Arc<rustls::crypto::CryptoProvider>,
        guard: GuardedResolver,
        connect_timeout: Duration,
        per_origin: usize,
        idle: Duration,
    ) -> Result<Connections, rustls::Error> {
        // HTTP/1.1 only: a polite crawler asks one page of a host at a time, and an HTTP/2
        // connection's state is what this pool exists not to keep.
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Connections {
            pool: Arc::new(Mutex::new(Pool {
                kept: HashMap::new(),
                swept: Instant::now(),
            })),
            guard,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            connect_timeout,
            per_origin: per_origin.max(1),
            idle,
        })
    }

    /// Sockets kept now, over every origin.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.lock().kept.values().map(Vec::len).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `request` to `url`'s origin, on a kept connection if one is still open; on a
    /// new one when the kept connection closed before the request went out. A request that
    /// went out is never sent again: the server may have read it, and a second one would
    /// come sooner than its delay allows.
    pub(crate) async fn send(
        &self,
        url: &Url,
        request: http::Request<Empty<Bytes>>,
    ) -> Result<Exchange, FetchError> {
        let origin = origin_key(url)?;
        let request = match self.take_kept(&origin) {
            Some(kept) => match self.exchange(origin.clone(), kept, request).await {
                Ok(exchange) => return Ok(exchange),
                Err(Failed::Unsent(request)) => request,
                Err(Failed::Sent(e)) => return Err(e),
            },
            None => request,
        };
        let fresh = self.connect(url).await?;
        match self.exchange(origin, fresh, request).await {
            Ok(exchange) => Ok(exchange),
            Err(Failed::Sent(e)) => Err(e),
            Err(Failed::Unsent(_)) => Err(FetchError::Connect(format!(
                "{url}: the connection closed before the request was sent"
            ))),
        }
    }

    fn take_kept(&self, origin: &str) -> Option<Kept> {
        let now = Instant::now();
        let mut pool = self.lock();
        pool.sweep(now, self.idle);
        let list = pool.kept.get_mut(origin)?;
        let mut found = None;
        while let Some(k) = list.pop() {
            if now.duration_since(k.since) < self.idle && k.stream.still_quiet() {
                found = Some(k);
                break;
            }
        }
        if list.is_empty() {
            pool.kept.remove(origin);
        }
        found
    }

    async fn connect(&self, url: &Url) -> Result<Kept, FetchError> {
        let host = url
            .host_str()
            .ok_or_else(|| FetchError::Other(format!("{url} has no host")))?;
        let port = url
            .port_or_known_default()
            .ok_or_else(|| FetchError::Other(format!("{url} has no port")))?;
        let addrs = self
            .guard
            .resolve_checked(host, port)
            .await
            .map_err(|e| match e {
                ResolveError::Refused(r) => FetchError::Refused(r.to_string()),
                lookup @ ResolveError::Lookup(_) => FetchError::Connect(lookup.to_string()),
            })?;
        let mut last = FetchError::Connect(format!("{host} has no address"));
        // A port the URL names is the one asked; otherwise an override's own port (as
        // `--resolve name=ip:port` gives it) stands, and an address without one (DNS, or an
        // override of an address alone) takes the scheme's.
        let named = url.port().is_some();
        let addrs = addrs.into_iter().map(|a| match (named, a.port()) {
            (false, p) if p != 0 => a,
            _ => SocketAddr::new(a.ip(), port),
        });
        for addr in addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(tcp)) => {
                    let _ = tcp.set_nodelay(true);
                    let stream = if url.scheme() == "https" {
                        Stream::Tls(Box::new(self.handshake(host, tcp).await?))
                    } else {
                        Stream::Plain(tcp)
                    };
                    return Ok(Kept {
                        stream,
                        remote: addr,
                        since: Instant::now(),
                    });
                }
                Ok(Err(e)) => last = FetchError::Connect(format!("{addr}: {e}")),
                Err(_) => last = FetchError::Timeout,
            }
        }
        Err(last)
    }

    async fn handshake(
        &self,
        host: &str,
        tcp: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, FetchError> {
        let name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']))
            .map_err(|e| FetchError::Connect(format!("{host}: not a TLS server name: {e}")))?
            .to_owned();
        match tokio::time::timeout(self.connect_timeout, self.tls.connect(name, tcp)).await {
            Ok(Ok(tls)) => Ok(tls),
            Ok(Err(e)) => Err(FetchError::Connect(format!("{host}: TLS: {e}"))),
            Err(_) => Err(FetchError::Timeout),
        }
    }

    async fn exchange(
        &self,
        origin: String,
        kept: Kept,
        request: http::Request<Empty<Bytes>>,
    ) -> Result<Exchange, Failed> {
        let remote = kept.remote;
        let (mut sender, connection) = match http1::Builder::new()
            .handshake::<_, Empty<Bytes>>(TokioIo::new(kept.stream))
            .await
        {
            Ok(pair) => pair,
            Err(_) => return Err(Failed::Unsent(request)),
        };
        let done = Task(Some(tokio::spawn(connection.without_shutdown())));
        let response = match sender.try_send_request(request).await {
            Ok(response) => response,
            Err(mut e) => {
                return Err(match e.take_message() {
                    Some(request) => Failed::Unsent(request),
                    None => Failed::Sent(FetchError::Other(chain(e.error()))),
                });
            }
        };
        let keep_alive = response.version() == http::Version::HTTP_11
            && !response
                .headers()
                .get_all(http::header::CONNECTION)
                .iter()
                .any(|v| v.to_str().is_ok_and(|v| has_token(v, "close")));
        Ok(Exchange {
            response,
            remote,
            origin,
            keep_alive,
            sender: Some(sender),
            done,
            pool: self.pool.clone(),
            idle: self.idle,
            per_origin: self.per_origin,
        })
    }
}

/// Why an exchange gave no response.
enum Failed {
    /// The connection closed before the request went out: it may go on another.
    Unsent(http::Request<Empty<Bytes>>),
    /// The request went out (or may have).
    Sent(FetchError),
}

/// A connection's task, stopped when dropped before it ended.
struct Task(Option<Done>);

impl Drop for Task {
    fn drop(&mut self) {
        if let Some(done) = self.0.take() {
            done.abort();
        }
    }
}

impl Exchange {
    /// Ends the exchange: the connection goes back to its origin's pool when the body was
    /// read to its end and the server keeps it open; otherwise it is closed.
    pub(crate) async fn finish(mut self, body_read_to_end: bool) {
        self.sender = None;
        if !(body_read_to_end && self.keep_alive) || self.idle.is_zero() {
            return;
        }
        let Some(done) = self.done.0.as_mut() else {
            return;
        };
        // The body was read to its end, so hyper's side is done at once; if not, the task is
        // stopped (with the socket) when `self` goes.
        let Ok(Ok(Ok(parts))) = tokio::time::timeout(Duration::from_secs(1), done).await else {
            return;
        };
        self.done.0 = None;
        if !parts.read_buf.is_empty() {
            return;
        }
        let kept = Kept {
            stream: parts.io.into_inner(),
            remote: self.remote,
            since: Instant::now(),
        };
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        pool.sweep(kept.since, self.idle);
        let list = pool
            .kept
            .entry(std::mem::take(&mut self.origin))
            .or_default();
        if list.len() < self.per_origin {
            list.push(kept);
        }
    }
}

/// The pool's key: scheme, host and port.
fn origin_key(url: &Url) -> Result<String, FetchError> {
    let host = url
        .host_str()
        .ok_or_else(|| FetchError::Other(format!("{url} has no host")))?;
    let port = url.port_or_known_default().unwrap_or(0);
    Ok(format!("{}://{host}:{port}", url.scheme()))
}

/// Whether a comma-separated header value holds `token` (case-insensitive).
fn has_token(value: &str, token: &str) -> bool {
    value
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// An error and its causes, in one line.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
#[path = "connections_tls_tests.rs"]
mod tls_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::{FetchLimits, FetchRequest, Net};
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A server answering each request on a connection with `answer(n)` (n counts requests
    /// over all connections), closing the connection after it when `close` says so; returns
    /// its address and its count of connections accepted.
    fn server(
        answer: impl Fn(usize) -> (Vec<u8>, bool) + Send + Sync + 'static,
    ) -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        let answer = Arc::new(answer);
        let requests = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                let (answer, requests) = (answer.clone(), requests.clone());
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                            match s.read(&mut buf) {
                                Ok(0) | Err(_) => return,
                                Ok(n) => seen.extend_from_slice(&buf[..n]),
                            }
                        }
                        seen.clear();
                        let (bytes, close) = answer(requests.fetch_add(1, Ordering::SeqCst));
                        if s.write_all(&bytes).is_err() || close {
                            return;
                        }
                    }
                });
            }
        });
        (addr, accepted)
    }

    fn ok(body: &str, extra: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{extra}\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    /// A GET of `/` at `addr`.
    fn root_of(addr: SocketAddr) -> FetchRequest {
        FetchRequest {
            url: Url::parse(&format!("http://{addr}/")).unwrap(),
            etag: None,
            last_modified: None,
            headers: Vec::new(),
        }
    }

    fn net(limits: &FetchLimits) -> Net {
        let open = GuardedResolver::new(
            webcoop_netguard::NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net"),
            Vec::new(),
        );
        crate::fetch::client("test/1", limits, open, 1, None, Duration::from_secs(15)).unwrap()
    }

    /// Fetches `/` three times from `addr`, 50 ms apart; the bodies and the sockets kept
    /// after each.
    fn three_fetches(addr: SocketAddr, limits: FetchLimits) -> Vec<(String, usize)> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let net = net(&limits);
        let request = root_of(addr);
        rt.block_on(async {
            let mut seen = Vec::new();
            for _ in 0..3 {
                let r = crate::fetch::fetch(&net, &request, &limits).await.unwrap();
                seen.push((
                    String::from_utf8_lossy(&r.body).into_owned(),
                    net.connections.kept(),
                ));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            seen
        })
    }

    #[test]
    fn a_connection_is_kept_between_requests_and_closed_when_the_server_says_so() {
        let (addr, accepted) = server(|n| (ok(&format!("page {n}"), ""), false));
        let seen = three_fetches(addr, FetchLimits::default());
        let bodies: Vec<&str> = seen.iter().map(|(b, _)| b.as_str()).collect();
        assert_eq!(bodies, ["page 0", "page 1", "page 2"]);
        assert!(seen.iter().all(|(_, kept)| *kept == 1), "{seen:?}");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // The twin: `Connection: close` is obeyed, and nothing is kept.
        let (addr, accepted) =
            server(|n| (ok(&format!("page {n}"), "Connection: close\r\n"), true));
        let seen = three_fetches(addr, FetchLimits::default());
        assert!(seen.iter().all(|(_, kept)| *kept == 0), "{seen:?}");
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_body_cut_at_the_limit_or_followed_by_unasked_bytes_leaves_nothing_to_reuse() {
        let limits = FetchLimits {
            max_body: 4,
            ..FetchLimits::default()
        };
        let (addr, accepted) = server(|_| (ok("0123456789", ""), false));
        let seen = three_fetches(addr, limits);
        assert!(
            seen.iter().all(|(b, kept)| b == "0123" && *kept == 0),
            "{seen:?}"
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
        // A response followed by bytes nobody asked for (a second, unrequested response).
        let (addr, accepted) = server(|_| {
            let mut twice = ok("one", "");
            twice.extend_from_slice(&ok("smuggled", ""));
            (twice, false)
        });
        let seen = three_fetches(addr, FetchLimits::default());
        assert!(seen.iter().all(|(b, _)| b == "one"), "{seen:?}");
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_kept_connection_the_server_closed_is_replaced_without_an_error() {
        // Closes after every answer without saying so: each kept socket is found closed.
        let (addr, accepted) = server(|n| (ok(&format!("page {n}"), ""), true));
        let seen = three_fetches(addr, FetchLimits::default());
        let bodies: Vec<&str> = seen.iter().map(|(b, _)| b.as_str()).collect();
        assert_eq!(bodies, ["page 0", "page 1", "page 2"]);
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_request_that_went_out_is_never_sent_again() {
        // Answers the first request, then reads the second on the same connection and
        // closes it unanswered: sending that request again would be a second request inside
        // the host's delay.
        let requests = Arc::new(AtomicUsize::new(0));
        let seen = requests.clone();
        let (addr, accepted) = server(move |n| {
            seen.fetch_add(1, Ordering::SeqCst);
            if n == 0 {
                (ok("first", ""), false)
            } else {
                (Vec::new(), true)
            }
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let limits = FetchLimits::default();
        let net = net(&limits);
        let request = root_of(addr);
        let (first, second) = rt.block_on(async {
            let first = crate::fetch::fetch(&net, &request, &limits).await;
            let second = crate::fetch::fetch(&net, &request, &limits).await;
            (first, second)
        });
        assert_eq!(&first.unwrap().body[..], b"first");
        assert!(second.is_err(), "{second:?}");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(requests.load(Ordering::SeqCst), 2);
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_name_s_address_is_asked_on_the_url_s_port_or_the_override_s() {
        // `--resolve site.test=127.0.0.1` names an address without a port (0): the URL's
        // port is the one asked.
        let (addr, accepted) = server(|n| (ok(&format!("page {n}"), ""), false));
        let guard = GuardedResolver::new(
            webcoop_netguard::NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net"),
            vec![("site.test".into(), SocketAddr::new(addr.ip(), 0))],
        );
        let limits = FetchLimits::default();
        let net = crate::fetch::client("test/1", &limits, guard, 1, None, Duration::from_secs(5))
            .unwrap();
        let request = FetchRequest {
            url: Url::parse(&format!("http://site.test:{}/", addr.port())).unwrap(),
            etag: None,
            last_modified: None,
            headers: Vec::new(),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got = rt
            .block_on(crate::fetch::fetch(&net, &request, &limits))
            .unwrap();
        assert_eq!((&got.body[..], got.remote), (&b"page 0"[..], Some(addr)));
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // `--resolve site.test=127.0.0.1:PORT` and a URL naming no port: the override's port
        // is asked, not the scheme's 80.
        let guard = GuardedResolver::new(
            webcoop_netguard::NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net"),
            vec![("site.test".into(), addr)],
        );
        let net = crate::fetch::client("test/1", &limits, guard, 1, None, Duration::from_secs(5))
            .unwrap();
        let request = FetchRequest {
            url: Url::parse("http://site.test/").unwrap(),
            ..request
        };
        let got = rt
            .block_on(crate::fetch::fetch(&net, &request, &limits))
            .unwrap();
        assert_eq!((&got.body[..], got.remote), (&b"page 1"[..], Some(addr)));
    }

    #[test]
    fn a_validator_carrying_a_header_or_an_answer_of_too_many_headers_is_refused_without_a_panic() {
        // An entity tag a site sent earlier, now carrying a line break and a header of its own:
        // the request is refused before anything is sent.
        let (addr, accepted) = server(|n| (ok(&format!("page {n}"), ""), false));
        let limits = FetchLimits::default();
        let net = net(&limits);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let injected = FetchRequest {
            etag: Some("\"a\"\r\nX-Injected: 1".into()),
            ..root_of(addr)
        };
        match rt.block_on(crate::fetch::fetch(&net, &injected, &limits)) {
            Err(FetchError::Other(why)) => assert!(why.contains("header"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
        // The twin: a plain entity tag goes out, and the page comes back.
        let honest = FetchRequest {
            etag: Some("\"a\"".into()),
            ..root_of(addr)
        };
        let got = rt
            .block_on(crate::fetch::fetch(&net, &honest, &limits))
            .unwrap();
        assert_eq!(&got.body[..], b"page 0");
        assert!(got.request_head.contains("If-None-Match: \"a\"\r\n"));
        // An answer of 500 headers is an error, not a panic, and its socket is not kept.
        let (flood, _) = server(|_| {
            let many: String = (0..500).map(|i| format!("X-{i}: v\r\n")).collect();
            (ok("x", &many), false)
        });
        let got = rt.block_on(crate::fetch::fetch(&net, &root_of(flood), &limits));
        assert!(matches!(got, Err(FetchError::Other(_))), "{got:?}");
        assert_eq!(net.connections.kept(), 1, "only the honest server's");
    }
}

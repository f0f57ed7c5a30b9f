//! Fetching one URL: conditional GET with both validators, no automatic redirects (the
//! frontier sees and records every 3xx), a body-size cap, a total time limit and a minimum
//! transfer speed. The body is kept as it came (content-coded), for the archive, and decoded
//! separately for parsing.

pub(crate) mod analysis_room;
pub(crate) mod connections;
pub(crate) mod lane;
pub(crate) mod outbox;
pub(crate) mod outcome;
pub(crate) mod tasks;

use crate::signing::Signer;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use webcoop_netguard::{GuardedResolver, ResolveError};
use webcoop_protocol::bot_auth::sign::SignatureHeaders;

/// The default `User-Agent`.
pub(crate) const DEFAULT_USER_AGENT: &str = concat!(
    "webcoop-crawl/",
    env!("CARGO_PKG_VERSION"),
    " (+https://github.com/webcoop/webcoop)"
);

/// Limits of one fetch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FetchLimits {
    /// Largest body kept (the rest is cut off and the record marked truncated).
    pub(crate) max_body: usize,
    /// Time allowed for the whole exchange.
    pub(crate) timeout: Duration,
    /// Time allowed to connect.
    pub(crate) connect_timeout: Duration,
    /// Slowest acceptable transfer, in bytes per second, after the first `grace`.
    pub(crate) min_speed: u64,
    /// Time before the minimum speed applies.
    pub(crate) grace: Duration,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            max_body: 4 << 20,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            min_speed: 1024,
            grace: Duration::from_secs(5),
        }
    }
}

/// What to fetch.
#[derive(Debug, Clone)]
pub(crate) struct FetchRequest {
    /// The URL.
    pub(crate) url: Url,
    /// `If-None-Match`: the entity tag of the copy held.
    pub(crate) etag: Option<String>,
    /// `If-Modified-Since`: the `Last-Modified` of the copy held.
    pub(crate) last_modified: Option<String>,
    /// Further request headers; an `Accept-Encoding` here replaces the default one.
    pub(crate) headers: Vec<(&'static str, String)>,
}

/// What came back.
#[derive(Debug, Clone)]
pub(crate) struct FetchResponse {
    /// The URL asked for.
    pub(crate) url: Url,
    /// The status code.
    pub(crate) status: u16,
    /// The HTTP version, as in a status line (`HTTP/1.1`).
    pub(crate) version: &'static str,
    /// The reason phrase.
    pub(crate) reason: String,
    /// Response headers in order, as received.
    pub(crate) headers: Vec<(String, String)>,
    /// The body as received (content-coded, transfer coding removed), at most the limit.
    pub(crate) body: Bytes,
    /// Whether the body was cut at the limit.
    pub(crate) truncated: bool,
    /// When the request was sent.
    pub(crate) fetched_at: DateTime<Utc>,
    /// Time to the complete response.
    pub(crate) elapsed: Duration,
    /// The server's address.
    pub(crate) remote: Option<SocketAddr>,
    /// The request line and headers sent.
    pub(crate) request_head: String,
}

impl FetchResponse {
    /// The first header named `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        crate::analyze::header(&self.headers, name)
    }

    /// The HTTP response head as it goes into a WARC record: status line and headers, without
    /// `Transfer-Encoding` (the body is stored de-chunked).
    pub(crate) fn response_head(&self) -> String {
        let mut head = format!("{} {} {}\r\n", self.version, self.status, self.reason);
        for (n, v) in &self.headers {
            if n.eq_ignore_ascii_case("transfer-encoding") {
                continue;
            }
            head.push_str(n);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        head
    }
}

/// Why a fetch produced no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FetchError {
    /// No connection or no answer in time.
    #[error("timed out")]
    Timeout,
    /// Slower than the minimum speed.
    #[error("slower than {0} bytes/s")]
    TooSlow(u64),
    /// The connection failed.
    #[error("connection failed: {0}")]
    Connect(String),
    /// The destination is inside a network the operator did not allow (`--allow-net`): no
    /// connection was made.
    #[error("refused: {0}")]
    Refused(String),
    /// The response's `Content-Usage` header refuses a purpose of the crawl: not kept.
    #[error("not kept: its Content-Usage header refuses {0}")]
    UsageRefused(&'static str),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// The crawler's HTTP clients with the guard every destination passes: a URL's address before
/// the request, every resolved address inside the resolver. GETs go over the crawler's own
/// connections; reqwest streams snapshots and sends forms.
#[derive(Clone)]
pub(crate) struct Net {
    client: reqwest::Client,
    connections: connections::Connections,
    user_agent: Arc<str>,
    guard: GuardedResolver,
    signer: Option<Arc<Signer>>,
}

impl Net {
    /// A GET of `url`, if its destination is allowed, signed when the crawler signs.
    pub(crate) fn get(&self, url: Url) -> Result<reqwest::RequestBuilder, FetchError> {
        Ok(self.signed_get(url)?.0)
    }

    /// [`Net::get`], with the signature headers it carries (for the record of the request).
    pub(crate) fn signed_get(
        &self,
        url: Url,
    ) -> Result<(reqwest::RequestBuilder, Option<SignatureHeaders>), FetchError> {
        let signature = self.allowed_get(&url)?;
        Ok((sign(self.client.get(url), signature.as_ref()), signature))
    }

    /// Checks a GET of `url` against the allowed networks; its signature headers when the
    /// crawler signs.
    fn allowed_get(&self, url: &Url) -> Result<Option<SignatureHeaders>, FetchError> {
        self.check(url)?;
        Ok(self.signer.as_ref().and_then(|s| s.headers_for(url)))
    }

    /// A form POST of `body` to `url`, if its destination is allowed; signed when the crawler
    /// signs, over its method, target and `Content-Digest` (which it then carries), so the
    /// signature cannot be replayed on another request.
    pub(crate) fn post_form(
        &self,
        url: Url,
        body: String,
    ) -> Result<reqwest::RequestBuilder, FetchError> {
        self.check(&url)?;
        let digest = webcoop_protocol::bot_auth::digest::content_digest(body.as_bytes());
        let signature = self
            .signer
            .as_ref()
            .and_then(|s| s.headers_for_request("POST", &url, Some(&digest)));
        let mut builder = self
            .client
            .post(url)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body);
        if signature.is_some() {
            builder = builder.header("content-digest", digest);
        }
        Ok(sign(builder, signature.as_ref()))
    }

    /// Notes a site's `Accept-Signature`; whether the request should now go again, signed as
    /// the site asked.
    pub(crate) fn asked_to_sign(&self, url: &Url, accept_signature: &str) -> bool {
        self.signer
            .as_ref()
            .is_some_and(|s| s.asked_by(url, accept_signature))
    }

    /// Requests signed so far.
    pub(crate) fn signed(&self) -> u64 {
        self.signer
            .as_ref()
            .map_or(0, |s| s.signed.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn check(&self, url: &Url) -> Result<(), FetchError> {
        self.guard
            .check_url(url)
            .map_err(|r| FetchError::Refused(r.to_string()))
    }

    /// The guard, with its count of refusals.
    pub(crate) fn guard(&self) -> &GuardedResolver {
        &self.guard
    }
}

fn sign(
    mut builder: reqwest::RequestBuilder,
    signature: Option<&SignatureHeaders>,
) -> reqwest::RequestBuilder {
    for (name, value) in signature.iter().flat_map(|h| h.pairs()) {
        builder = builder.header(name, value);
    }
    builder
}

/// Builds the crawler's HTTP client: no redirects, no automatic decompression (bodies are
/// archived as received), host overrides for tests and private setups, and every address
/// checked against the networks the operator allows (the overrides too).
pub(crate) fn client(
    user_agent: &str,
    limits: &FetchLimits,
    guard: GuardedResolver,
    per_host: usize,
    signer: Option<Arc<Signer>>,
    idle: Duration,
) -> Result<Net, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .user_agent(user_agent)
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        .connect_timeout(limits.connect_timeout)
        .pool_max_idle_per_host(per_host.max(1))
        .pool_idle_timeout(idle)
        .no_proxy()
        .dns_resolver(Arc::new(guard.clone()))
        .build()
        .map_err(|e| connections::chain(&e))?;
    let connections =
        connections::Connections::new(guard.clone(), limits.connect_timeout, per_host, idle)
            .map_err(|e| format!("TLS: {e}"))?;
    Ok(Net {
        client,
        connections,
        user_agent: Arc::from(user_agent),
        guard,
        signer,
    })
}

/// What a failed request means: a refusal by the guard (found in the error's chain), a
/// timeout, a failed connection, or anything else.
pub(crate) fn classify(e: &reqwest::Error) -> FetchError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        match err.downcast_ref::<ResolveError>() {
            Some(ResolveError::Refused(r)) => return FetchError::Refused(r.to_string()),
            // Named, as the chain's top says only that sending failed.
            Some(lookup @ ResolveError::Lookup(_)) => {
                return FetchError::Connect(lookup.to_string());
            }
            None => {}
        }
        source = err.source();
    }
    if e.is_timeout() {
        FetchError::Timeout
    } else if e.is_connect() {
        FetchError::Connect(e.to_string())
    } else {
        FetchError::Other(e.to_string())
    }
}

/// Fetches `request`; once more, signed, when the site refused it asking for a signature
/// (`Accept-Signature` on a 401, 403 or 429) and the crawler signs only where asked.
pub(crate) async fn fetch(
    client: &Net,
    request: &FetchRequest,
    limits: &FetchLimits,
) -> Result<FetchResponse, FetchError> {
    let first = fetch_once(client, request, limits).await?;
    let refused = matches!(first.status, 401 | 403 | 429);
    if refused
        && let Some(asked) = first.header("accept-signature")
        && client.asked_to_sign(&request.url, asked)
    {
        return fetch_once(client, request, limits).await;
    }
    Ok(first)
}

// One function: a request's life (headers, send, status, streamed body under the size and
// speed limits, the record of what was sent) is one sequence over one set of timers.
async fn fetch_once(
    client: &Net,
    request: &FetchRequest,
    limits: &FetchLimits,
) -> Result<FetchResponse, FetchError> {
    let fetched_at = crate::clock::now();
    let start = Instant::now();
    let signature = client.allowed_get(&request.url)?;
    let headers = request_headers(client, request, signature.as_ref());
    let target = &request.url[url::Position::BeforePath..url::Position::AfterQuery];
    let mut request_head = format!("GET {target} HTTP/1.1\r\n");
    for (n, v) in &headers {
        request_head.push_str(&format!("{n}: {v}\r\n"));
    }
    request_head.push_str("\r\n");
    let mut builder = http::Request::get(target);
    for (n, v) in &headers {
        builder = builder.header(n.as_str(), v.as_str());
    }
    let outgoing = builder
        .body(http_body_util::Empty::new())
        .map_err(|e| FetchError::Other(format!("{}: {e}", request.url)))?;
    let exchange = async {
        let mut exchange = client.connections.send(&request.url, outgoing).await?;
        let (read, truncated) = read_body(&mut exchange.response, limits, start).await;
        let complete = read.is_ok() && !truncated;
        let body = read?;
        let response = &exchange.response;
        let status = response.status();
        let version = match response.version() {
            http::Version::HTTP_10 => "HTTP/1.0",
            http::Version::HTTP_09 => "HTTP/0.9",
            _ => "HTTP/1.1",
        };
        let head = (
            status.as_u16(),
            version,
            status.canonical_reason().unwrap_or("").to_string(),
            header_pairs(response.headers()),
            exchange.remote,
        );
        exchange.finish(complete).await;
        Ok::<_, FetchError>((head, body, truncated))
    };
    let ((status, version, reason, headers, remote), body, truncated) =
        tokio::time::timeout(limits.timeout, exchange)
            .await
            .map_err(|_| FetchError::Timeout)??;
    Ok(FetchResponse {
        url: request.url.clone(),
        status,
        version,
        reason,
        headers,
        body: Bytes::from(body),
        truncated,
        fetched_at,
        elapsed: start.elapsed(),
        remote: Some(remote),
        request_head,
    })
}

/// The request's headers, in the order they are sent and recorded.
fn request_headers(
    client: &Net,
    request: &FetchRequest,
    signature: Option<&SignatureHeaders>,
) -> Vec<(String, String)> {
    let url = &request.url;
    let mut headers = vec![
        (
            "Host".to_string(),
            url[url::Position::BeforeHost..url::Position::AfterPort].to_string(),
        ),
        ("User-Agent".to_string(), client.user_agent.to_string()),
        (
            "Accept".to_string(),
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8".to_string(),
        ),
    ];
    let accept_encoding = request
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
        .map_or("gzip, br, zstd", |(_, v)| v.as_str());
    headers.push(("Accept-Encoding".to_string(), accept_encoding.to_string()));
    for (n, v) in signature.iter().flat_map(|h| h.pairs()) {
        headers.push((n.to_string(), v.to_string()));
    }
    for (n, v) in &request.headers {
        if !n.eq_ignore_ascii_case("accept-encoding") {
            headers.push((n.to_string(), v.clone()));
        }
    }
    if let Some(etag) = &request.etag {
        headers.push(("If-None-Match".to_string(), etag.clone()));
    }
    if let Some(lm) = &request.last_modified {
        headers.push(("If-Modified-Since".to_string(), lm.clone()));
    }
    headers
}

/// Reads a body up to the size limit, under the minimum speed; whether it was cut at the limit.
async fn read_body(
    response: &mut http::Response<hyper::body::Incoming>,
    limits: &FetchLimits,
    start: Instant,
) -> (Result<Vec<u8>, FetchError>, bool) {
    use http_body_util::BodyExt;
    let mut body = Vec::new();
    loop {
        match response.body_mut().frame().await {
            Some(Ok(frame)) => {
                let Ok(chunk) = frame.into_data() else {
                    continue;
                };
                let room = limits.max_body - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    return (Ok(body), true);
                }
                body.extend_from_slice(&chunk);
                let elapsed = start.elapsed();
                if elapsed > limits.grace
                    && (body.len() as f64 / elapsed.as_secs_f64()) < limits.min_speed as f64
                {
                    return (Err(FetchError::TooSlow(limits.min_speed)), false);
                }
            }
            Some(Err(e)) => return (Err(FetchError::Other(connections::chain(&e))), false),
            None => return (Ok(body), false),
        }
    }
}

/// The address a response came from, for the WARC record.
pub(crate) fn ip_of(r: &FetchResponse) -> Option<IpAddr> {
    r.remote.map(|a| a.ip())
}

/// A response's headers as (name, value) pairs, values decoded leniently.
pub(crate) fn header_pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A server that answers every connection with `head` and then `body` in `chunks`,
    /// `pause` apart.
    fn trickle(head: &'static str, body: Vec<u8>, chunks: usize, pause: Duration) -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = s.write_all(head.as_bytes());
                for part in body.chunks(body.len().div_ceil(chunks).max(1)) {
                    std::thread::sleep(pause);
                    if s.write_all(part).is_err() {
                        break;
                    }
                }
            }
        });
        addr
    }

    fn get(addr: SocketAddr, limits: FetchLimits) -> Result<FetchResponse, FetchError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let open = GuardedResolver::new(
            webcoop_netguard::NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net"),
            Vec::new(),
        );
        let client = client("test/1", &limits, open, 1, None, Duration::from_secs(15)).unwrap();
        let request = FetchRequest {
            url: Url::parse(&format!("http://{addr}/")).unwrap(),
            etag: None,
            last_modified: None,
            headers: Vec::new(),
        };
        rt.block_on(fetch(&client, &request, &limits))
    }

    #[test]
    fn a_destination_inside_a_network_is_refused_by_name_or_address() {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";
        let addr = trickle(head, b"ok".to_vec(), 1, Duration::ZERO);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let strict = GuardedResolver::new(
            webcoop_netguard::NetPolicy::new(Vec::new(), "--allow-net"),
            vec![("inside.test".into(), addr)],
        );
        let limits = FetchLimits::default();
        let net = client("test/1", &limits, strict, 1, None, Duration::from_secs(15)).unwrap();
        for url in [
            format!("http://inside.test:{}/", addr.port()),
            format!("http://{addr}/"),
            format!("http://2130706433:{}/", addr.port()),
            format!("http://[::ffff:127.0.0.1]:{}/", addr.port()),
        ] {
            let request = FetchRequest {
                url: Url::parse(&url).unwrap(),
                etag: None,
                last_modified: None,
                headers: Vec::new(),
            };
            match rt.block_on(fetch(&net, &request, &limits)) {
                Err(FetchError::Refused(why)) => {
                    assert!(
                        why.contains("loopback") && why.contains("--allow-net"),
                        "{why}"
                    )
                }
                other => panic!("{url}: {other:?}"),
            }
        }
        assert_eq!(net.guard().refusals().count(), 4);
    }

    #[test]
    fn a_trickling_server_is_dropped_for_the_minimum_speed() {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2000\r\n\r\n";
        let addr = trickle(head, vec![b'x'; 2000], 20, Duration::from_millis(100));
        let limits = FetchLimits {
            min_speed: 5000,
            grace: Duration::from_millis(300),
            ..FetchLimits::default()
        };
        assert_eq!(get(addr, limits).unwrap_err(), FetchError::TooSlow(5000));
        let patient = FetchLimits {
            min_speed: 100,
            grace: Duration::from_millis(300),
            ..FetchLimits::default()
        };
        assert_eq!(get(addr, patient).unwrap().body.len(), 2000);
    }

    #[test]
    fn bodies_are_cut_at_the_limit_and_the_time_limit_holds() {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n";
        let addr = trickle(head, vec![b'y'; 100_000], 4, Duration::from_millis(10));
        let small = FetchLimits {
            max_body: 1000,
            ..FetchLimits::default()
        };
        let r = get(addr, small).unwrap();
        assert_eq!((r.body.len(), r.truncated), (1000, true));
        assert!(r.response_head().starts_with("HTTP/1.1 200 OK\r\n"));
        let slow = trickle(head, vec![b'y'; 100_000], 4, Duration::from_millis(400));
        let hurried = FetchLimits {
            timeout: Duration::from_millis(500),
            ..FetchLimits::default()
        };
        assert_eq!(get(slow, hurried).unwrap_err(), FetchError::Timeout);
    }
}

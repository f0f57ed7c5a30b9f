//! The WebSub callback server the crawler runs in push mode: it confirms the subscriptions it
//! asked for (verification of intent), refuses those it did not, checks the signature of every
//! delivery, and hands deliveries to the crawl loop. One callback per site: `BASE/{host id}`.
//! Its answers to verifications carry `Accept-Encoding` (RFC 7694), so a hub that knows it
//! sends deliveries compressed; the signature is checked on the bytes as received, before
//! anything is decompressed.
//!
//! Nobody but the hub can steer it: each callback path carries a token derived from the
//! subscription's secret (`BASE/{host id}/{token}`), so a stranger cannot even name it; a
//! verification of intent is confirmed only for a request the crawler sent within the last
//! [`VERIFY_WINDOW`], for the same topic and mode; `hub.mode=denied` is heard only while a
//! request waits; and a delivery's body is read (up to [`MAX_DELIVERY`]) only after its path,
//! its subscription and the presence of a signature have been checked.

pub use crate::fetch::outcome::CallbackEvent;
use crate::ids::HostId;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use url::Url;
use webcoop_protocol::changes_feed;
use webcoop_protocol::websub::{
    self, BodyCodingError, CALLBACK_ACCEPT_ENCODING, CallbackQuery, Mode,
};

/// Largest delivery accepted.
pub(crate) const MAX_DELIVERY: usize = 16 << 20;

/// How long after sending a request its verification of intent is accepted.
pub(crate) const VERIFY_WINDOW: std::time::Duration = std::time::Duration::from_secs(600);

/// The unguessable part of a site's callback path: derived from the subscription's secret, so
/// it survives a restart as the secret does, and reveals nothing of it.
pub fn token_for(secret: &str) -> String {
    let digest = webcoop_protocol::validator::Sha256Digest::of(
        format!("webcoop-callback\0{secret}").as_bytes(),
    );
    data_encoding::BASE64URL_NOPAD.encode(&digest.0[..16])
}

/// What the callback expects of a site's hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The topic subscribed to.
    pub topic: String,
    /// The HMAC key of deliveries.
    pub secret: String,
    /// A request sent and not yet verified.
    pub pending: Option<Mode>,
    /// When that request was sent.
    pub asked: Option<std::time::Instant>,
    /// Whether deliveries are wanted (subscribed, not unsubscribed).
    pub active: bool,
}

#[derive(Clone)]
struct Shared {
    expected: Arc<Mutex<HashMap<HostId, Expected>>>,
    report: Report,
}

/// Where the server reports what it heard: the loop's channel, or a test's.
pub(crate) type Report = Arc<dyn Fn(CallbackEvent) + Send + Sync>;

impl Shared {
    fn send(&self, e: CallbackEvent) {
        (self.report)(e);
    }
}

/// The running callback server.
pub struct CallbackServer {
    /// Where it listens.
    pub local: SocketAddr,
    /// The callback base URL as the hubs see it.
    pub(crate) base: Url,
    expected: Arc<Mutex<HashMap<HostId, Expected>>>,
}

impl CallbackServer {
    /// Starts listening on `listen`; `public` is the base URL hubs are given (default: the
    /// address listened on). What it hears goes to `report`.
    pub async fn start(
        listen: SocketAddr,
        public: Option<Url>,
        report: Report,
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
            report,
        };
        let expected = shared.expected.clone();
        let app = axum::Router::new()
            .route("/{*path}", axum::routing::get(verify).post(deliver))
            .layer(axum::extract::DefaultBodyLimit::disable())
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

    /// The callback URL of a site subscribed with `secret`.
    pub fn callback_for(&self, host: HostId, secret: &str) -> String {
        format!(
            "{}/{host}/{}",
            self.base.as_str().trim_end_matches('/'),
            token_for(secret)
        )
    }

    /// Records what is expected of a site's hub (before a request is sent to it).
    pub fn expect(&self, host: HostId, e: Expected) {
        if let Ok(mut m) = self.expected.lock() {
            m.insert(host, e);
        }
    }

    /// Whether a request to a site's hub still waits for its verification.
    pub(crate) fn pending(&self, host: HostId) -> bool {
        self.expected
            .lock()
            .map(|m| m.get(&host).is_some_and(|e| e.pending.is_some()))
            .unwrap_or(false)
    }
}

/// The site a callback path names, with the token it carries.
fn host_of(path: &str) -> Option<(HostId, &str)> {
    let mut segments = path.rsplit('/');
    let token = segments.next()?;
    let host = HostId(segments.next()?.parse().ok()?);
    Some((host, token))
}

/// The answer to a verification of intent; a confirmation tells the hub which codings
/// deliveries may use.
async fn verify(
    State(s): State<Shared>,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let (status, text) = answer_verification(&s, &path, query.as_deref());
    let mut r = (status, text).into_response();
    if status == StatusCode::OK {
        r.headers_mut().insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static(CALLBACK_ACCEPT_ENCODING),
        );
        // A webcoop hub then sends the changes as CBOR: the same feed at about half the bytes
        // of compressed Atom; any other hub ignores this and sends Atom.
        r.headers_mut().insert(
            header::ACCEPT,
            HeaderValue::from_static(websub::CALLBACK_ACCEPT),
        );
    }
    r
}

fn answer_verification(s: &Shared, path: &str, query: Option<&str>) -> (StatusCode, String) {
    let Some((host, token)) = host_of(path) else {
        return (StatusCode::NOT_FOUND, "unknown callback".into());
    };
    let query = match CallbackQuery::parse(query.unwrap_or("")) {
        Ok(q) => q,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()),
    };
    let mut expected = match s.expected.lock() {
        Ok(m) => m,
        Err(_) => return (StatusCode::INTERNAL_SERVER_ERROR, String::new()),
    };
    let Some(e) = expected
        .get_mut(&host)
        .filter(|e| !e.secret.is_empty() && token_for(&e.secret) == token)
    else {
        return (
            StatusCode::NOT_FOUND,
            "no subscription for this callback".into(),
        );
    };
    let recent = e.asked.is_some_and(|t| t.elapsed() <= VERIFY_WINDOW);
    match query {
        CallbackQuery::Denied(d) if d.topic.as_str() == e.topic && e.pending.is_some() => {
            e.pending = None;
            e.active = false;
            drop(expected);
            s.send(CallbackEvent::Denied {
                host,
                reason: d.reason,
            });
            (StatusCode::OK, String::new())
        }
        // Only what we asked for, lately: a verification nobody asked for may come from a
        // request someone else sent in our name (to swap the secret, or to unsubscribe us).
        CallbackQuery::Verify(v)
            if v.topic.as_str() == e.topic && e.pending == Some(v.mode) && recent =>
        {
            e.pending = None;
            e.asked = None;
            e.active = v.mode == Mode::Subscribe;
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
    body: axum::body::Body,
) -> Response {
    let Some((host, token)) = host_of(&path) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let secret = match s.expected.lock() {
        Ok(m) => m
            .get(&host)
            .filter(|e| e.active && !e.secret.is_empty() && token_for(&e.secret) == token)
            .map(|e| e.secret.clone()),
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    // Not (or no longer) subscribed, or not our callback at all: 410 tells a hub to stop.
    let Some(secret) = secret else {
        return StatusCode::GONE.into_response();
    };
    let signature = headers
        .get("x-hub-signature")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let Some(signature) = signature else {
        s.send(CallbackEvent::BadSignature {
            host,
            why: "no X-Hub-Signature".into(),
        });
        // 2xx all the same: a forged message learns nothing (WebSub §7, "locally ignore").
        return StatusCode::ACCEPTED.into_response();
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_DELIVERY as u64) {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    let body = match axum::body::to_bytes(body, MAX_DELIVERY).await {
        Ok(b) => b,
        Err(_) => return StatusCode::PAYLOAD_TOO_LARGE.into_response(),
    };
    if let Err(e) = websub::verify(secret.as_bytes(), &body, &signature) {
        s.send(CallbackEvent::BadSignature {
            host,
            why: e.to_string(),
        });
        return StatusCode::ACCEPTED.into_response();
    }
    let coding = headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("(not text)"));
    let cbor = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case(changes_feed::CBOR_MEDIA_TYPE));
    match websub::decode_delivery(coding, &body, MAX_DELIVERY as u64) {
        Ok(feed) => {
            s.send(CallbackEvent::Delivery {
                host,
                body: feed.into_owned(),
                cbor,
            });
            StatusCode::ACCEPTED.into_response()
        }
        Err(e @ BodyCodingError::Unsupported(_)) => {
            // RFC 7694 §3: 415 naming what we do accept, so the hub can send it again.
            let mut r = (StatusCode::UNSUPPORTED_MEDIA_TYPE, format!("{e}\n")).into_response();
            r.headers_mut().insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_static(CALLBACK_ACCEPT_ENCODING),
            );
            r
        }
        Err(e) => {
            s.send(CallbackEvent::Undecodable {
                host,
                why: e.to_string(),
            });
            (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use webcoop_protocol::websub::{BodyCoding, SignatureAlgorithm, sign};

    const TOPIC: &str = "http://site.test/.well-known/webcoop/changes";
    const SECRET: &str = "a secret of sixteen+";

    async fn server() -> (CallbackServer, std::sync::mpsc::Receiver<CallbackEvent>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let tx = Mutex::new(tx);
        let report: Report = Arc::new(move |e| {
            let _ = tx.lock().map(|tx| tx.send(e));
        });
        let listen = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = CallbackServer::start(listen, None, report).await.unwrap();
        server.expect(
            HostId(7),
            Expected {
                topic: TOPIC.into(),
                secret: SECRET.into(),
                pending: Some(Mode::Subscribe),
                asked: Some(std::time::Instant::now()),
                active: false,
            },
        );
        (server, rx)
    }

    /// One request on its own connection: the status, the raw head, the body.
    async fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "{head}\r\nHost: cb.test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(request.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8_lossy(&out).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head[9..12].parse().unwrap();
        (status, head.to_ascii_lowercase(), body.to_string())
    }

    async fn post(addr: SocketAddr, headers: &[(&str, String)], body: &[u8]) -> (u16, String) {
        let mut head = format!("POST /websub/7/{} HTTP/1.1", token_for(SECRET));
        for (k, v) in headers {
            head.push_str(&format!("\r\n{k}: {v}"));
        }
        let (status, head, _) = exchange(addr, &head, body).await;
        (status, head)
    }

    fn event(rx: &std::sync::mpsc::Receiver<CallbackEvent>) -> CallbackEvent {
        match rx.recv_timeout(std::time::Duration::from_secs(5)) {
            Ok(e) => e,
            other => panic!("no callback event: {other:?}"),
        }
    }

    #[tokio::test]
    async fn compressed_deliveries_are_asked_for_checked_as_sent_and_decoded() {
        let (server, rx) = server().await;
        let query = format!(
            "hub.mode=subscribe&hub.topic={}&hub.challenge=ch4ll3nge&hub.lease_seconds=60",
            url::form_urlencoded::byte_serialize(TOPIC.as_bytes()).collect::<String>()
        );
        let (status, head, body) = exchange(
            server.local,
            &format!("GET /websub/7/{}?{query} HTTP/1.1", token_for(SECRET)),
            b"",
        )
        .await;
        assert_eq!((status, body.as_str()), (200, "ch4ll3nge"));
        assert!(head.contains("accept-encoding: gzip, zstd"), "{head}");
        assert!(matches!(
            event(&rx),
            CallbackEvent::Verified {
                host: HostId(7),
                ..
            }
        ));

        let feed = b"<feed xmlns=\"http://www.w3.org/2005/Atom\"><id>x</id></feed>".to_vec();
        let sig = |bytes: &[u8]| sign(SignatureAlgorithm::Sha256, SECRET.as_bytes(), bytes);
        for coding in [BodyCoding::Gzip, BodyCoding::Zstd] {
            let sent = coding.encode(&feed);
            let headers = [
                ("Content-Encoding", coding.token().to_string()),
                ("X-Hub-Signature", sig(&sent)),
            ];
            assert_eq!(post(server.local, &headers, &sent).await.0, 202);
            match event(&rx) {
                CallbackEvent::Delivery {
                    host: HostId(7),
                    body,
                    cbor: false,
                } => assert_eq!(body, feed),
                other => panic!("{coding:?}: {other:?}"),
            }
        }
        // Signed over the decompressed bytes: not what was sent, so ignored.
        let sent = BodyCoding::Gzip.encode(&feed);
        let headers = [
            ("Content-Encoding", "gzip".to_string()),
            ("X-Hub-Signature", sig(&feed)),
        ];
        assert_eq!(post(server.local, &headers, &sent).await.0, 202);
        assert!(matches!(
            event(&rx),
            CallbackEvent::BadSignature {
                host: HostId(7),
                ..
            }
        ));
        // A coding we do not know: 415 saying what we accept.
        let headers = [
            ("Content-Encoding", "br".to_string()),
            ("X-Hub-Signature", sig(b"xx")),
        ];
        let (status, head) = post(server.local, &headers, b"xx").await;
        assert_eq!(status, 415);
        assert!(head.contains("accept-encoding: gzip, zstd"), "{head}");
        // Signed but corrupt: refused, so the hub tries again.
        let broken = &sent[..sent.len() - 4];
        let headers = [
            ("Content-Encoding", "gzip".to_string()),
            ("X-Hub-Signature", sig(broken)),
        ];
        assert_eq!(post(server.local, &headers, broken).await.0, 400);
        assert!(matches!(
            event(&rx),
            CallbackEvent::Undecodable {
                host: HostId(7),
                ..
            }
        ));
    }
}

//! A loopback TCP proxy that counts what crosses it: bytes in each direction and HTTP/1.x
//! requests, so the bench measures cost on the wire rather than trusting what the crawler
//! says it sent.
//!
//! Requests are counted by following the client's byte stream with `httparse`: each complete
//! request head is one request, and its body (`Content-Length` or chunked) is skipped, so
//! pipelined and keep-alive requests count one by one. A request counts once the server
//! answers it; one the server closes the connection on is counted apart, as unanswered.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a proxy has counted so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WireCount {
    /// Bytes from the client to the server (requests).
    pub up: u64,
    /// Bytes from the server to the client (responses).
    pub down: u64,
    /// HTTP requests answered: a request counts once the server sends bytes after it, so one
    /// sent on a connection the server was closing (and sent again by the client's pool on a
    /// new one) is not counted twice.
    pub requests: u64,
    /// Of those, POSTs: on a WebSub callback, the hub's content deliveries.
    pub posts: u64,
    /// Requests the server closed the connection on without a byte of answer.
    pub unanswered: u64,
    /// TCP connections accepted.
    pub connections: u64,
    /// Client streams that stopped being HTTP (counted as bytes only from there on).
    pub unparsed: u64,
}

impl WireCount {
    /// The counts between `earlier` and this.
    pub fn since(&self, earlier: &WireCount) -> WireCount {
        WireCount {
            up: self.up - earlier.up,
            down: self.down - earlier.down,
            requests: self.requests - earlier.requests,
            posts: self.posts - earlier.posts,
            unanswered: self.unanswered - earlier.unanswered,
            connections: self.connections - earlier.connections,
            unparsed: self.unparsed - earlier.unparsed,
        }
    }

    /// The counts of both wires together.
    pub fn plus(&self, other: &WireCount) -> WireCount {
        WireCount {
            up: self.up + other.up,
            down: self.down + other.down,
            requests: self.requests + other.requests,
            posts: self.posts + other.posts,
            unanswered: self.unanswered + other.unanswered,
            connections: self.connections + other.connections,
            unparsed: self.unparsed + other.unparsed,
        }
    }

    /// Bytes both ways.
    pub fn bytes(&self) -> u64 {
        self.up + self.down
    }
}

#[derive(Default)]
struct Counters {
    up: AtomicU64,
    down: AtomicU64,
    requests: AtomicU64,
    posts: AtomicU64,
    unanswered: AtomicU64,
    connections: AtomicU64,
    unparsed: AtomicU64,
    /// Connections whose relay has ended: every byte either side sent is counted.
    closed: AtomicU64,
}

/// A running proxy; it stops with the runtime it was started on.
pub struct CountingProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    /// Where it forwards to.
    pub upstream: SocketAddr,
    counters: Arc<Counters>,
}

impl CountingProxy {
    /// Listens on a free loopback port and forwards every connection to `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<CountingProxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                c.connections.fetch_add(1, Ordering::Relaxed);
                let c = c.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        relay(client, server, c.clone()).await;
                    }
                    c.closed.fetch_add(1, Ordering::Release);
                });
            }
        });
        Ok(CountingProxy {
            addr,
            upstream,
            counters,
        })
    }

    /// The counts so far.
    pub fn count(&self) -> WireCount {
        let c = &self.counters;
        WireCount {
            up: c.up.load(Ordering::Relaxed),
            down: c.down.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            posts: c.posts.load(Ordering::Relaxed),
            unanswered: c.unanswered.load(Ordering::Relaxed),
            connections: c.connections.load(Ordering::Relaxed),
            unparsed: c.unparsed.load(Ordering::Relaxed),
        }
    }

    /// The counts once every connection accepted so far has ended (or `patience` has passed):
    /// after the client has exited, its last bytes may still be on their way through the relay.
    pub async fn count_when_closed(&self, patience: std::time::Duration) -> WireCount {
        let deadline = tokio::time::Instant::now() + patience;
        while self.counters.closed.load(Ordering::Acquire)
            < self.counters.connections.load(Ordering::Acquire)
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        self.count()
    }
}

async fn relay(client: TcpStream, server: TcpStream, c: Arc<Counters>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    // Requests (and POSTs among them) seen on this connection and not answered yet: counted
    // before they are forwarded, so no answer can come before them.
    let pending = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let (up_counters, up_pending) = (c.clone(), pending.clone());
    let up = async move {
        let mut buf = vec![0u8; 64 << 10];
        let mut requests = RequestCounter::default();
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            up_counters.up.fetch_add(n as u64, Ordering::Relaxed);
            let Fed { seen, posts, lost } = requests.feed(&buf[..n]);
            up_pending.0.fetch_add(seen, Ordering::AcqRel);
            up_pending.1.fetch_add(posts, Ordering::AcqRel);
            if lost {
                up_counters.unparsed.fetch_add(1, Ordering::Relaxed);
            }
            if sw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = sw.shutdown().await;
    };
    let (down_counters, down_pending) = (c.clone(), pending.clone());
    let down = async move {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match sr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let c = &down_counters;
            c.down.fetch_add(n as u64, Ordering::Relaxed);
            let answered = down_pending.0.swap(0, Ordering::AcqRel);
            c.requests.fetch_add(answered, Ordering::Relaxed);
            let posts = down_pending.1.swap(0, Ordering::AcqRel);
            c.posts.fetch_add(posts, Ordering::Relaxed);
            if cw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = cw.shutdown().await;
    };
    tokio::join!(up, down);
    c.unanswered
        .fetch_add(pending.0.swap(0, Ordering::AcqRel), Ordering::Relaxed);
}

/// Where the client's stream is: in a request head, in a body, or past understanding.
#[derive(Debug, Default)]
enum Stage {
    #[default]
    Head,
    /// This many body bytes still to come.
    Body(u64),
    /// A chunked body: reading chunk-size lines and chunks.
    Chunked(ChunkStage),
    /// Not HTTP/1.x any more (an upgrade, or garbage): bytes only.
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ChunkStage {
    Size,
    Data(u64),
    DataEnd,
    Trailer,
}

/// Follows one client stream and counts the requests in it.
#[derive(Debug, Default)]
pub struct RequestCounter {
    stage: Stage,
    pending: Vec<u8>,
}

/// What one piece of a client stream held.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Fed {
    /// Requests that began in it.
    pub seen: u64,
    /// Of those, POSTs.
    pub posts: u64,
    /// The stream was given up on here (not HTTP/1.x from this point).
    pub lost: bool,
}

/// The longest request head followed; anything longer is not a crawler's request.
const MAX_HEAD: usize = 64 << 10;

impl RequestCounter {
    /// Takes the next bytes; says what requests began in them.
    pub fn feed(&mut self, bytes: &[u8]) -> Fed {
        let mut fed = Fed::default();
        if matches!(self.stage, Stage::Lost) {
            return fed;
        }
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            let rest = &self.pending[at..];
            if rest.is_empty() {
                break;
            }
            match self.stage {
                Stage::Head => {
                    let mut headers = [httparse::EMPTY_HEADER; 96];
                    let mut req = httparse::Request::new(&mut headers);
                    match req.parse(rest) {
                        Ok(httparse::Status::Complete(len)) => {
                            fed.seen += 1;
                            fed.posts += u64::from(req.method == Some("POST"));
                            at += len;
                            self.stage = body_of(req.headers);
                            if matches!(self.stage, Stage::Lost) {
                                self.pending.clear();
                                return Fed { lost: true, ..fed };
                            }
                        }
                        Ok(httparse::Status::Partial) if rest.len() <= MAX_HEAD => break,
                        _ => {
                            self.stage = Stage::Lost;
                            self.pending.clear();
                            return Fed { lost: true, ..fed };
                        }
                    }
                }
                Stage::Body(left) => {
                    let take = (rest.len() as u64).min(left);
                    at += take as usize;
                    self.stage = if take == left {
                        Stage::Head
                    } else {
                        Stage::Body(left - take)
                    };
                }
                Stage::Chunked(ChunkStage::Data(left)) => {
                    let take = (rest.len() as u64).min(left);
                    at += take as usize;
                    self.stage = Stage::Chunked(if take == left {
                        ChunkStage::DataEnd
                    } else {
                        ChunkStage::Data(left - take)
                    });
                }
                Stage::Chunked(step) => {
                    // Size lines, the CRLF after data, and trailer lines are all lines.
                    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        if rest.len() > MAX_HEAD {
                            self.stage = Stage::Lost;
                            self.pending.clear();
                            return Fed { lost: true, ..fed };
                        }
                        break;
                    };
                    let line = &rest[..end];
                    at += end + 2;
                    self.stage = match step {
                        ChunkStage::Size => {
                            let hex = line.split(|b| *b == b';').next().unwrap_or(b"");
                            let size = std::str::from_utf8(hex)
                                .ok()
                                .and_then(|h| u64::from_str_radix(h.trim(), 16).ok());
                            match size {
                                Some(0) => Stage::Chunked(ChunkStage::Trailer),
                                Some(n) => Stage::Chunked(ChunkStage::Data(n)),
                                None => {
                                    self.stage = Stage::Lost;
                                    self.pending.clear();
                                    return Fed { lost: true, ..fed };
                                }
                            }
                        }
                        ChunkStage::DataEnd => Stage::Chunked(ChunkStage::Size),
                        ChunkStage::Trailer if line.is_empty() => Stage::Head,
                        ChunkStage::Trailer => Stage::Chunked(ChunkStage::Trailer),
                        ChunkStage::Data(_) => unreachable!("handled above"),
                    };
                }
                Stage::Lost => break,
            }
        }
        self.pending.drain(..at);
        fed
    }
}

/// What follows a request head, by its framing headers.
fn body_of(headers: &[httparse::Header<'_>]) -> Stage {
    let value = |name: &str| {
        headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    };
    if value("upgrade").is_some() {
        return Stage::Lost;
    }
    if value("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        return Stage::Chunked(ChunkStage::Size);
    }
    match value("content-length").map(|v| v.trim().parse::<u64>()) {
        None | Some(Ok(0)) => Stage::Head,
        Some(Ok(n)) => Stage::Body(n),
        Some(Err(_)) => Stage::Lost,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count_in_pieces(stream: &[u8], piece: usize) -> (u64, u64, bool) {
        let mut c = RequestCounter::default();
        let (mut total, mut posts, mut lost) = (0, 0, false);
        for chunk in stream.chunks(piece) {
            let fed = c.feed(chunk);
            total += fed.seen;
            posts += fed.posts;
            lost |= fed.lost;
        }
        (total, posts, lost)
    }

    #[test]
    fn pipelined_requests_with_bodies_count_one_by_one_however_split() {
        let stream = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n\
POST /hub HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nGET / x=1&y\
PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nGET \r\n0\r\nX-T: 1\r\n\r\n\
HEAD /robots.rdf HTTP/1.1\r\nHost: a\r\n\r\n";
        for piece in [1, 2, 3, 7, 64, stream.len()] {
            assert_eq!(
                count_in_pieces(stream, piece),
                (4, 1, false),
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn a_stream_that_is_not_http_is_given_up_once() {
        assert_eq!(
            count_in_pieces(b"\x16\x03\x01 not http at all", 5),
            (0, 0, true)
        );
        let upgrade = b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        assert_eq!(count_in_pieces(upgrade, 10), (1, 0, true));
    }
}

//! The bench's counting proxy in front of a real HTTP server: what it counts is exactly what
//! crossed the wire, exchange by exchange.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webcoop::bench::proxy::CountingProxy;
use webcoop_testkit::testweb::{HostSpec, TestWeb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_counts_equal_the_sum_of_the_exchanges() {
    let web = TestWeb::start(vec![HostSpec::new("site.test", 10)]);
    let proxy = CountingProxy::start(web.addr).await.unwrap();
    let (mut sent, mut received) = (0u64, 0u64);
    for path in ["/", "/p/1.html", "/robots.txt", "/missing.html"] {
        let mut s = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n");
        s.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        s.read_to_end(&mut response).await.unwrap();
        assert!(response.starts_with(b"HTTP/1.1 "), "{path}");
        sent += request.len() as u64;
        received += response.len() as u64;
    }
    // The relay finishes its count as the connection closes.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let c = proxy.count();
    assert_eq!((c.up, c.down), (sent, received));
    assert_eq!((c.requests, c.connections, c.unparsed), (4, 4, 0));
}

/// Reads one HTTP/1.1 response with a Content-Length body off a kept-alive connection.
async fn read_response(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (Vec<u8>, usize) {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or_else(|| panic!("no content-length in {head}"));
            while buf.len() < end + 4 + length {
                let mut chunk = [0u8; 8192];
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0, "connection closed mid-body");
                buf.extend_from_slice(&chunk[..n]);
            }
            let whole = end + 4 + length;
            let response: Vec<u8> = buf.drain(..whole).collect();
            return (response, length);
        }
        let mut chunk = [0u8; 8192];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before the response");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_requests_are_counted_one_by_one() {
    let web = TestWeb::start(vec![HostSpec::new("site.test", 10)]);
    let proxy = CountingProxy::start(web.addr).await.unwrap();
    // One socket on purpose: a pooling client may open a second connection while the first
    // is still on its way back to the pool.
    let mut s = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    let (mut sent, mut received, mut bodies) = (0u64, 0u64, 0u64);
    for i in 0..10 {
        let request = format!("GET /p/{i}.html HTTP/1.1\r\nHost: site.test\r\n\r\n");
        s.write_all(request.as_bytes()).await.unwrap();
        let (response, body) = read_response(&mut s, &mut buf).await;
        assert!(response.starts_with(b"HTTP/1.1 200"), "page {i}");
        sent += request.len() as u64;
        received += response.len() as u64;
        bodies += body as u64;
    }
    let form = "hub.mode=subscribe&hub.topic=x";
    let request = format!(
        "POST /hub HTTP/1.1\r\nHost: site.test\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let (response, _) = read_response(&mut s, &mut buf).await;
    sent += request.len() as u64;
    received += response.len() as u64;
    drop(s);
    // The relay finishes its count as the connection closes.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let c = proxy.count();
    assert_eq!(c.requests, 11, "{c:?}");
    assert_eq!(c.connections, 1, "one kept-alive connection: {c:?}");
    assert_eq!((c.up, c.down), (sent, received), "{c:?}");
    assert!(c.down > bodies, "headers come on top of the bodies: {c:?}");
    let served = web.log().len() as u64;
    assert_eq!(served, c.requests, "the server saw what the proxy counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_site_serves_files_gzipped_and_conditionally() {
    let dir = tempfile::tempdir().unwrap();
    let page = "<html><body>".to_string() + &"crawler freshness ".repeat(500) + "</body></html>";
    std::fs::write(dir.path().join("page.html"), &page).unwrap();
    let addr = webcoop::bench::site_server::start(dir.path(), None)
        .await
        .unwrap();
    let head = |extra: &'static str| async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request =
            format!("GET /page.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n");
        s.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        s.read_to_end(&mut response).await.unwrap();
        String::from_utf8_lossy(&response).into_owned()
    };
    let plain = head("").await;
    assert!(plain.starts_with("HTTP/1.1 200"), "{plain}");
    assert!(
        plain.contains(&page),
        "served as is without Accept-Encoding"
    );
    let gz = head("Accept-Encoding: gzip, br, zstd\r\n").await;
    assert!(
        gz.to_ascii_lowercase().contains("content-encoding: gzip"),
        "{gz}"
    );
    assert!(gz.len() < page.len() / 4, "compressed: {} bytes", gz.len());
    let modified = plain
        .lines()
        .find_map(|l| l.strip_prefix("last-modified: "))
        .expect("Last-Modified")
        .to_string();
    let cond = head(Box::leak(
        format!("If-Modified-Since: {modified}\r\n").into_boxed_str(),
    ))
    .await;
    assert!(cond.starts_with("HTTP/1.1 304"), "{cond}");
    let none = webcoop::servers::http_get(addr, "/.well-known/webcoop/changes", &[]).unwrap();
    assert_eq!(none.status, 404, "no agent beside it");
}

/// A server that reads one request and then answers it, or closes without a byte (as a
/// server does to a kept-alive connection it has timed out, when the client's request
/// crosses the close).
async fn one_shot_server(answer: bool) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut chunk = [0u8; 1024];
            let n = s.read(&mut chunk).await.unwrap();
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        if answer {
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .await;
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_server_closes_on_unanswered_is_not_counted_as_one() {
    for answer in [false, true] {
        let proxy = CountingProxy::start(one_shot_server(answer).await)
            .await
            .unwrap();
        let mut s = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: site.test\r\n\r\n")
            .await
            .unwrap();
        let mut response = Vec::new();
        let _ = s.read_to_end(&mut response).await;
        drop(s);
        let c = proxy
            .count_when_closed(std::time::Duration::from_secs(5))
            .await;
        // A client's pool sends such a request again on a new connection: counting the
        // first as well would put the wire one request ahead of what the client made.
        let expected = if answer { (1, 0) } else { (0, 1) };
        assert_eq!(
            (c.requests, c.unanswered),
            expected,
            "answer {answer}: {c:?}"
        );
        assert_eq!(c.up, 35, "{c:?}");
    }
}

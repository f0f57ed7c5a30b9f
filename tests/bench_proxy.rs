//! The bench's counting proxy in front of a real HTTP server: what it counts is exactly what
//! crossed the wire, exchange by exchange.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webcoop::bench::proxy::CountingProxy;
use webcoop::testweb::{HostSpec, TestWeb};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_requests_are_counted_one_by_one() {
    let web = TestWeb::start(vec![HostSpec::new("site.test", 10)]);
    let proxy = CountingProxy::start(web.addr).await.unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .resolve(
            "site.test",
            std::net::SocketAddr::from(([127, 0, 0, 1], proxy.addr.port())),
        )
        .build()
        .unwrap();
    let mut bodies = 0u64;
    for i in 0..10 {
        let url = format!("http://site.test:{}/p/{i}.html", proxy.addr.port());
        let body = client
            .get(&url)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        bodies += body.len() as u64;
    }
    let form = client
        .post(format!("http://site.test:{}/hub", proxy.addr.port()))
        .body("hub.mode=subscribe&hub.topic=x")
        .send()
        .await
        .unwrap();
    let _ = form.bytes().await;
    let c = proxy.count();
    assert_eq!(c.requests, 11, "{c:?}");
    assert_eq!(c.connections, 1, "one kept-alive connection: {c:?}");
    assert!(c.down > bodies, "headers come on top of the bodies: {c:?}");
    let served = web.log().len() as u64;
    assert_eq!(served, c.requests, "the server saw what the proxy counted");
}

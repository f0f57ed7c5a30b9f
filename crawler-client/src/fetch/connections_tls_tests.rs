//! The kept connections over TLS, against a real handshake: a certificate the platform does
//! not vouch for is refused, one it does is used, and its session kept between requests.

use super::*;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A self-signed certificate for `localhost` and 127.0.0.1, made by the openssl command.
fn certificate(dir: &Path) -> (rustls::pki_types::CertificateDer<'static>, Vec<u8>, Vec<u8>) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        // Its own anchor, as a site's certificate: not a certificate authority.
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl, to make a test certificate");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let cert_pem = std::fs::read(&cert).unwrap();
    let key_pem = std::fs::read(&key).unwrap();
    use rustls::pki_types::pem::PemObject;
    let der = rustls::pki_types::CertificateDer::from_pem_slice(&cert_pem).unwrap();
    (der, cert_pem, key_pem)
}

/// An HTTPS server answering every request on a connection with a numbered page; its
/// address and its count of handshakes completed.
fn https_server(cert_pem: Vec<u8>, key_pem: Vec<u8>) -> (SocketAddr, Arc<AtomicUsize>) {
    use rustls::pki_types::pem::PemObject;
    let chain = vec![rustls::pki_types::CertificateDer::from_pem_slice(&cert_pem).unwrap()];
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(&key_pem).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let config = Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sessions = Arc::new(AtomicUsize::new(0));
    let counted = sessions.clone();
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let (config, counted) = (config.clone(), counted.clone());
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut seen = Vec::new();
                let mut buf = [0u8; 4096];
                for n in 0.. {
                    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(k) => seen.extend_from_slice(&buf[..k]),
                        }
                    }
                    if n == 0 {
                        counted.fetch_add(1, Ordering::SeqCst);
                    }
                    seen.clear();
                    let body = format!("secure page {n}");
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if tls
                        .write_all(answer.as_bytes())
                        .and_then(|()| tls.flush())
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (addr, sessions)
}

/// GETs `url` twice over `connections`: each body, or the first error.
fn twice(connections: &Connections, url: &Url) -> Result<Vec<String>, FetchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut bodies = Vec::new();
        for _ in 0..2 {
            let request = http::Request::get(url.path())
                .header(
                    "Host",
                    &url[url::Position::BeforeHost..url::Position::AfterPort],
                )
                .body(Empty::new())
                .unwrap();
            let mut exchange = connections.send(url, request).await?;
            use http_body_util::BodyExt;
            let body = exchange
                .response
                .body_mut()
                .collect()
                .await
                .unwrap()
                .to_bytes();
            bodies.push(String::from_utf8_lossy(&body).into_owned());
            exchange.finish(true).await;
        }
        Ok(bodies)
    })
}

/// The loopback allowed, `name` resolving to `addr`.
fn naming(name: &str, addr: SocketAddr) -> GuardedResolver {
    GuardedResolver::new(
        webcoop_netguard::NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net"),
        vec![(name.into(), addr)],
    )
}

#[test]
fn a_certificate_the_platform_does_not_vouch_for_is_refused_and_one_it_does_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (root, cert_pem, key_pem) = certificate(dir.path());
    let (addr, sessions) = https_server(cert_pem, key_pem);
    let url = Url::parse(&format!("https://localhost:{}/page", addr.port())).unwrap();
    let guard = naming("localhost", addr);
    // The platform's roots alone: a self-signed certificate is refused, by name.
    let platform = Connections::new(
        guard.clone(),
        Duration::from_secs(1),
        1,
        Duration::from_secs(10),
    )
    .unwrap();
    match twice(&platform, &url) {
        Err(FetchError::Connect(why)) => assert!(why.contains("TLS"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(platform.kept(), 0);
    assert_eq!(sessions.load(Ordering::SeqCst), 0);
    // The twin: trusted, both pages come over one session, which is kept.
    let trusting = Connections::trusting(root.clone(), guard).unwrap();
    assert_eq!(
        twice(&trusting, &url).unwrap(),
        ["secure page 0", "secure page 1"]
    );
    assert_eq!(sessions.load(Ordering::SeqCst), 1);
    assert_eq!(trusting.kept(), 1);
    // Asked by a name the certificate does not carry, the same server is refused.
    let other = Url::parse(&format!("https://elsewhere.test:{}/page", addr.port())).unwrap();
    let trusting = Connections::trusting(root, naming("elsewhere.test", addr)).unwrap();
    match twice(&trusting, &other) {
        Err(FetchError::Connect(why)) => assert!(why.contains("TLS"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(sessions.load(Ordering::SeqCst), 1);
}

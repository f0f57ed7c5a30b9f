//! The agent beside a real web server: Debian's nginx, configured with the shipped example
//! server block, serves what the agent publishes, and reference clients read it from there:
//! feedparser and rdflib (robots.rdf, changes feed), ultimate-sitemap-parser (sitemaps).

use serde_json::Value;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use webcoop::servers::{Nginx, example_nginx_conf, http_get};
use webcoop_agent::Agent;
use webcoop_agent::{AgentOptions, Config};
use webcoop_protocol::changes_feed::{self, ChangeKind, FeedLimits};
use webcoop_protocol::clock::SystemClock;
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_testkit::{reference_python, run_reference, tool};

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// A GET over HTTP/1.1 (nginx compresses only for 1.1 clients by default): the lowercased
/// head and the body, de-chunked.
fn http11_get(addr: std::net::SocketAddr, path: &str, extra: &str) -> (String, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let mut rest = &raw[split + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return (head, rest.to_vec());
    }
    let mut body = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = String::from_utf8_lossy(&rest[..eol]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[eol + 2..];
        if size == 0 {
            return (head, body);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

fn agent_for(docroot: &Path, state: &Path, base: &str) -> Agent {
    let cli = AgentOptions {
        docroot: Some(docroot.to_path_buf()),
        base_url: Some(base.to_string()),
        state: Some(state.to_path_buf()),
        debounce_ms: Some(50),
        ..AgentOptions::default()
    };
    Agent::open(Config::from_options(cli).unwrap(), Arc::new(SystemClock)).unwrap()
}

#[test]
fn nginx_serves_what_the_agent_publishes_and_reference_clients_read_it() {
    let Some(nginx_bin) = tool("nginx") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    write(&www, "index.html", "<h1>home</h1>");
    write(&www, "docs/guide.html", "<p>guide</p>");
    write(&www, "with space.html", "<p>space</p>");
    write(&www, ".htpasswd", "admin:secret");
    let www = www.canonicalize().unwrap();
    let nginx = Nginx::start(&nginx_bin, &example_nginx_conf(), &www);
    let base = nginx.url();

    let mut agent = agent_for(&www, &tmp.path().join("state"), &base);
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();

    let rdf = http_get(nginx.addr, "/robots.rdf", &[]).unwrap();
    assert_eq!(rdf.status, 200);
    assert_eq!(rdf.header("content-type"), Some("application/rdf+xml"));
    assert_eq!(rdf.header("cache-control"), Some("no-cache"));
    let listing = robots_rdf::parse(&rdf.body, &RdfLimits::default()).unwrap();
    let urls: BTreeSet<String> = listing.items.iter().map(|i| i.url.to_string()).collect();
    let expected: BTreeSet<String> = ["docs/guide.html", "index.html", "with%20space.html"]
        .iter()
        .map(|p| format!("{base}{p}"))
        .collect();
    assert_eq!(urls, expected);
    // Every listed URL is served by nginx with exactly the listed size.
    for item in &listing.items {
        let r = http_get(nginx.addr, item.url.path(), &[]).unwrap();
        assert_eq!(r.status, 200, "{}", item.url);
        assert_eq!(Some(r.body.len() as u64), item.size, "{}", item.url);
    }
    // The listings travel gzipped to clients that accept it.
    for path in [
        "/robots.rdf",
        "/sitemap.xml",
        "/.well-known/webcoop/changes.atom",
    ] {
        let plain = http_get(nginx.addr, path, &[]).unwrap();
        let (head, gz) = http11_get(nginx.addr, path, "Accept-Encoding: gzip\r\n");
        assert!(head.contains("content-encoding: gzip"), "{path}: {head}");
        let body = webcoop_protocol::compression::gunzip_bounded(&gz, 1 << 20).unwrap();
        assert_eq!(body, plain.body, "{path}");
    }
    // What the agent never lists, the example configuration never serves.
    assert_eq!(http_get(nginx.addr, "/.htpasswd", &[]).unwrap().status, 403);

    let sitemap = http_get(nginx.addr, "/sitemap.xml", &[]).unwrap();
    assert_eq!(sitemap.status, 200);
    assert_eq!(sitemap.header("content-type"), Some("text/xml"));
    let feed = http_get(nginx.addr, "/.well-known/webcoop/changes.atom", &[]).unwrap();
    assert_eq!(feed.status, 200);
    assert_eq!(feed.header("content-type"), Some("application/atom+xml"));

    // Changes while watching reach nginx's clients within about a second.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || agent.watch(&stop))
    };
    std::thread::sleep(Duration::from_millis(300));
    write(&www, "news.html", "<p>news</p>");
    std::fs::remove_file(www.join("docs/guide.html")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let feed = loop {
        let r = http_get(nginx.addr, "/.well-known/webcoop/changes.atom", &[]).unwrap();
        let feed = changes_feed::parse(&r.body, &FeedLimits::default()).unwrap();
        if feed.entries.len() >= 2 {
            break feed;
        }
        assert!(
            Instant::now() < deadline,
            "changes not served by nginx in time"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap().unwrap();
    let mut kinds: Vec<(ChangeKind, String)> = feed
        .entries
        .iter()
        .map(|e| (e.kind, e.url.path().to_string()))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            (ChangeKind::Created, "/news.html".into()),
            (ChangeKind::Deleted, "/docs/guide.html".into())
        ]
    );

    // The reference clients read the documents as nginx serves them.
    let Some(python) = reference_python() else {
        return;
    };
    let fetched = tmp.path().join("fetched");
    std::fs::create_dir(&fetched).unwrap();
    for (path, name) in [
        ("/robots.rdf", "robots.rdf"),
        ("/.well-known/webcoop/changes.atom", "changes.atom"),
    ] {
        std::fs::write(
            fetched.join(name),
            http_get(nginx.addr, path, &[]).unwrap().body,
        )
        .unwrap();
    }
    let rdf: Value = serde_json::from_str(&run_reference(
        &python,
        "feed_check.py",
        &[fetched.join("robots.rdf").as_os_str()],
    ))
    .unwrap();
    assert_eq!(rdf["bozo"], false, "{}", rdf["bozo_exception"]);
    assert_eq!(rdf["version"], "rss10");
    let links: BTreeSet<String> = rdf["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["link"].as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = ["index.html", "news.html", "with%20space.html"]
        .iter()
        .map(|p| format!("{base}{p}"))
        .collect();
    assert_eq!(links, expected);
    let triples: Value = serde_json::from_str(&run_reference(
        &python,
        "rdf_check.py",
        &[fetched.join("robots.rdf").as_os_str()],
    ))
    .unwrap();
    assert_eq!(triples["items"].as_object().unwrap().len(), 3);
    let atom: Value = serde_json::from_str(&run_reference(
        &python,
        "feed_check.py",
        &[fetched.join("changes.atom").as_os_str()],
    ))
    .unwrap();
    assert_eq!(atom["bozo"], false, "{}", atom["bozo_exception"]);
    let terms: BTreeSet<String> = atom["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["terms"][0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        terms,
        BTreeSet::from(["created".to_string(), "deleted".to_string()])
    );
    let usp: Value = serde_json::from_str(&run_reference(
        &python,
        "sitemap_check.py",
        &[
            OsStr::new("--url"),
            OsStr::new(&format!("{base}sitemap.xml")),
        ],
    ))
    .unwrap();
    assert_eq!(usp["invalid"], serde_json::json!([]));
    assert_eq!(usp["pages"].as_array().unwrap().len(), 3);
}

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_proxies_the_agents_service_with_the_shipped_configuration() {
    let Some(nginx_bin) = tool("nginx") else {
        return;
    };
    let page = |v: u32| {
        format!(
            "<html><body>{}<p>release {v}</p></body></html>",
            "<p>stable text of the page</p>".repeat(200)
        )
    };
    let site = common::Site::start(&[("manual.html", &page(1))], common::Options::default()).await;
    let nginx = Nginx::start_proxying(
        &nginx_bin,
        &example_nginx_conf(),
        &site.docroot,
        Some(site.addr),
    );
    site.write("manual.html", &page(2));
    site.wait_head(1).await;

    let r = http_get(nginx.addr, "/.well-known/webcoop/changes?since=0", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.header("link").is_some_and(|l| l.contains("rel=\"hub\"")));
    let feed = changes_feed::parse(&r.body, &FeedLimits::default()).unwrap();
    assert_eq!(
        feed.entries
            .iter()
            .map(|e| e.url.path())
            .collect::<Vec<_>>(),
        ["/manual.html"]
    );
    // The static feed is still served by nginx itself.
    assert_eq!(
        http_get(nginx.addr, "/.well-known/webcoop/changes.atom", &[])
            .unwrap()
            .status,
        200
    );

    let v1 = webcoop_protocol::validator::Sha256Digest::of(page(1).as_bytes());
    let r = http_get(
        nginx.addr,
        "/.well-known/webcoop/delta/manual.html",
        &[
            ("Accept-Encoding", "dcz"),
            ("Available-Dictionary", &v1.to_structured_field()),
        ],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("dcz"));
    let expected = webcoop_protocol::validator::Sha256Digest::of(page(2).as_bytes()).etag();
    let decoded = webcoop_protocol::delta::dcz::decode_verified(
        page(1).as_bytes(),
        &r.body,
        &expected,
        1 << 20,
    )
    .unwrap();
    assert_eq!(decoded, page(2).into_bytes());
    assert!(
        r.body.len() < 200,
        "{} bytes for a one-word change",
        r.body.len()
    );

    let rdf = http_get(nginx.addr, "/robots.rdf", &[]).unwrap();
    assert!(
        rdf.header("link")
            .is_some_and(|l| l.contains("rel=\"hub\""))
    );
    assert_eq!(
        http_get(nginx.addr, "/.well-known/webcoop/healthz", &[])
            .unwrap()
            .status,
        200
    );
}

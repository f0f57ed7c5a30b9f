//! The crawler against sites that lie, steer and attack: hostile robots.txt values, another
//! origin's endpoints named in a listing, forged pushes and hijacking verifications, and a
//! sitemap index of gzip bombs. Each crawl is the real binary; the sites are loopback servers
//! whose every byte the test writes.

use super::support::{Canned, HostileWeb, crawl_bin};
use chrono::{TimeZone, Utc};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::robots_rdf::{Channel, RdfItem, RobotsRdf, UpdatePeriod};
use webcoop_testkit::testweb::{HostSpec, Robots, TestWeb};

fn crawl(out: &Path, args: &[String]) -> Output {
    Command::new(crawl_bin())
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(out)
        .args(["--progress", "quiet"])
        .args(args)
        .output()
        .unwrap()
}

/// A crawl's arguments: `words`, then `hosts` resolved to the hostile web.
fn with_hosts(web: &HostileWeb, words: &[&str], hosts: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = words.iter().map(|s| s.to_string()).collect();
    args.extend(web.resolve_args(hosts));
    args
}

/// The arguments of a push-mode crawl of `site` for `secs` seconds, its callback on `callback`.
fn push_crawl(
    web: &HostileWeb,
    site: &str,
    secs: u32,
    callback: &str,
    hosts: &[&str],
) -> Vec<String> {
    with_hosts(
        web,
        &[
            "--seeds",
            &format!("{site}/"),
            "--coop",
            "push",
            "--keep-fresh",
            "--run-for",
            &secs.to_string(),
            "--callback-listen",
            callback,
            "--delay-min",
            "0.05",
            "--delay-factor",
            "0",
        ],
        hosts,
    )
}

pub(crate) fn status_json(out: &Path) -> serde_json::Value {
    let o = Command::new(crawl_bin())
        .args(["status", "--json", "--out"])
        .arg(out)
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_default()
}

#[test]
fn hostile_crawl_delays_and_a_10_mb_robots_txt_never_end_a_crawl() {
    let mut big = String::from("User-agent: *\nDisallow: /private/\nCrawl-delay: 1e30\n");
    while big.len() < 10 << 20 {
        big.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    let hosts = [
        ("inf.test", "User-agent: *\nCrawl-delay: inf\n".to_string()),
        ("nan.test", "User-agent: *\nCrawl-delay: NaN\n".to_string()),
        (
            "negative.test",
            "User-agent: *\nCrawl-delay: -1\n".to_string(),
        ),
        (
            "huge.test",
            "User-agent: *\nCrawl-delay: 1e30\n".to_string(),
        ),
        ("big.test", big),
    ];
    let web = TestWeb::start(
        hosts
            .iter()
            .map(|(h, txt)| HostSpec::new(h, 3).robots(Robots::Custom(txt.clone())))
            .collect(),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let mut args: Vec<String> = vec!["--seeds".into()];
    args.extend(hosts.iter().map(|(h, _)| format!("{}/", web.origin(h))));
    args.extend(
        ["--delay-min", "0", "--delay-factor", "0", "--coop", "off"]
            .iter()
            .map(|s| s.to_string()),
    );
    args.extend(web.resolve_args());
    // Twice: the second run replays what the first saved, and must not trip on it either.
    for run in 0..2 {
        let o = crawl(&out, &args);
        assert!(
            o.status.success(),
            "run {run} exited with {}:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let status = status_json(&out);
    let skipped = status["skipped_hosts"].to_string();
    for h in ["inf.test", "huge.test"] {
        assert!(skipped.contains(h), "{h} should be skipped: {skipped}");
    }
    // No delay at all (NaN, -1) is the minimum delay: those sites are crawled.
    let fetched: Vec<String> = web.log().iter().map(|r| r.host.clone()).collect();
    for h in ["nan.test", "negative.test"] {
        assert!(
            fetched.iter().filter(|f| *f == h).count() > 1,
            "{h} was not crawled"
        );
    }
    // Only the first 500 KiB of the big robots.txt counted: its Crawl-delay is in them.
    assert!(skipped.contains("big.test"), "{skipped}");
}

fn listing(site: &str, items: Vec<(String, Option<String>)>, changes: &str, hub: &str) -> String {
    let at = Utc.timestamp_opt(1_790_000_000, 0).unwrap();
    let doc = RobotsRdf {
        channel: Channel {
            about: Url::parse(&format!("{site}/robots.rdf")).unwrap(),
            title: "hostile".into(),
            link: Url::parse(&format!("{site}/")).unwrap(),
            description: "a listing that names another site's endpoints".into(),
            date: Some(at),
            update_period: UpdatePeriod::Daily,
            update_frequency: 1,
            update_base: None,
            changes: Some(Url::parse(changes).unwrap()),
            hub: Some(Url::parse(hub).unwrap()),
            snapshot: None,
            seq: Some(1),
            content_usage: None,
        },
        items: items
            .into_iter()
            .map(|(url, delta)| RdfItem {
                url: Url::parse(&url).unwrap(),
                title: url.clone(),
                modified: at,
                size: Some(10),
                content_type: Some("text/html".into()),
                etag: None,
                delta: delta.map(|d| Url::parse(&d).unwrap()),
                extensions: Default::default(),
            })
            .collect(),
    };
    webcoop_protocol::robots_rdf::write(&doc)
}

#[test]
fn a_site_s_cooperation_speaks_only_for_its_own_origin() {
    let web = HostileWeb::start();
    let (site, victim) = (web.origin("site.test"), web.origin("victim.test"));
    web.set(
        "site.test",
        "/robots.txt",
        Canned::ok("text/plain", "User-agent: *\nAllow: /\n"),
    );
    web.set(
        "site.test",
        "/robots.rdf",
        Canned::ok(
            "application/rdf+xml",
            listing(
                &site,
                vec![
                    (
                        format!("{site}/"),
                        Some(format!("{victim}/.well-known/webcoop/delta/")),
                    ),
                    (format!("{victim}/x.html"), None),
                ],
                &format!("{victim}/.well-known/webcoop/changes"),
                &format!("{victim}/.well-known/webcoop/hub"),
            ),
        ),
    );
    web.set("site.test", "/", Canned::ok("text/html", "<p>home</p>"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let args = push_crawl(&web, &site, 4, "127.0.0.1:0", &["site.test", "victim.test"]);
    let o = crawl(&out, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = web.log();
    assert!(
        log.iter().any(|l| l.starts_with("site.test /robots.rdf")),
        "the listing was read: {log:?}"
    );
    let steered: Vec<&String> = log
        .iter()
        .filter(|l| l.starts_with("victim.test"))
        .collect();
    assert!(
        steered.is_empty(),
        "the site steered the crawler to: {steered:?}"
    );
    let coop = status_json(&out)["cooperation"].to_string();
    let foreign: u64 = status_json(&out)["cooperation"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["origin"] == site.as_str()))
        .and_then(|s| s["stats"]["foreign"].as_u64())
        .unwrap_or(0);
    assert!(foreign >= 3, "foreign URLs counted: {coop}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callback_refuses_forged_pushes_and_hijacking_verifications() {
    use webcoop_crawler::HostId;
    use webcoop_crawler::push::{CallbackEvent, CallbackServer, Expected, token_for};
    use webcoop_protocol::websub::{Mode, SignatureAlgorithm, sign};
    let (tx, rx) = std::sync::mpsc::channel::<CallbackEvent>();
    let tx = std::sync::Mutex::new(tx);
    let report = std::sync::Arc::new(move |e| {
        let _ = tx.lock().map(|tx| tx.send(e));
    });
    let server = CallbackServer::start(([127, 0, 0, 1], 0).into(), None, report)
        .await
        .unwrap();
    let topic = "http://site.test/.well-known/webcoop/changes";
    let secret = "a secret of thirty-two bytes, roughly";
    let expect = |pending: Option<Mode>, asked_ago: Option<u64>, active: bool| Expected {
        topic: topic.into(),
        secret: secret.into(),
        pending,
        asked: asked_ago.and_then(|s| Instant::now().checked_sub(Duration::from_secs(s))),
        active,
    };
    let client = super::support::client();
    let base = format!("http://{}/websub", server.local);
    let good = server.callback_for(HostId(7), secret);
    assert_eq!(good, format!("{base}/7/{}", token_for(secret)));
    let verify = |url: String, mode: &str| {
        let client = client.clone();
        let mode = mode.to_string();
        async move {
            let q = form_urlencoded::Serializer::new(String::new())
                .append_pair("hub.mode", &mode)
                .append_pair("hub.topic", topic)
                .append_pair("hub.challenge", "ch4ll3nge")
                .append_pair("hub.lease_seconds", "86400")
                .finish();
            let r = client.get(format!("{url}?{q}")).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    // Subscribed and active, nothing asked: someone else's request in our name is refused,
    // whether it would swap the secret (subscribe) or end the subscription (unsubscribe).
    server.expect(HostId(7), expect(None, None, true));
    assert_eq!(verify(good.clone(), "subscribe").await.0, 404);
    assert_eq!(verify(good.clone(), "unsubscribe").await.0, 404);
    assert_eq!(verify(good.clone(), "denied").await.0, 404);
    // Asked, but long ago: stale.
    server.expect(HostId(7), expect(Some(Mode::Subscribe), Some(700), false));
    assert_eq!(verify(good.clone(), "subscribe").await.0, 404);
    // Asked just now, but the path lacks the token, or names another: refused.
    server.expect(HostId(7), expect(Some(Mode::Subscribe), Some(0), false));
    assert_eq!(verify(format!("{base}/7"), "subscribe").await.0, 404);
    assert_eq!(
        verify(format!("{base}/7/AAAAAAAAAAAAAAAAAAAAAA"), "subscribe")
            .await
            .0,
        404
    );
    assert_eq!(
        verify(good.clone(), "unsubscribe").await.0,
        404,
        "mode must match"
    );
    // What we asked for: confirmed.
    assert_eq!(
        verify(good.clone(), "subscribe").await,
        (200, "ch4ll3nge".to_string())
    );
    while rx.try_recv().is_ok() {}
    // Forged deliveries: a path without the token is refused without a byte read; no
    // signature, or a wrong one, is accepted and ignored; a body over the limit is refused.
    let feed = b"<feed xmlns=\"http://www.w3.org/2005/Atom\"><id>x</id></feed>".to_vec();
    let r = client
        .post(format!("{base}/7"))
        .body(feed.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = client
        .post(format!("{base}/7/AAAAAAAAAAAAAAAAAAAAAA"))
        .body(feed.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 410);
    let r = client.post(&good).body(feed.clone()).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let forged = sign(SignatureAlgorithm::Sha256, b"not the secret", &feed);
    let r = client
        .post(&good)
        .header("x-hub-signature", forged)
        .body(feed.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let r = client
        .post(&good)
        .header("x-hub-signature", "sha256=00")
        .body(vec![b'x'; 17 << 20])
        .send()
        .await;
    assert!(r.is_err() || r.is_ok_and(|r| r.status().as_u16() == 413));
    let signed = sign(SignatureAlgorithm::Sha256, secret.as_bytes(), &feed);
    let r = client
        .post(&good)
        .header("x-hub-signature", signed)
        .body(feed.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    // Of all these, the crawl loop heard of exactly one delivery, the signed one.
    let mut deliveries = 0;
    let mut bad = 0;
    while let Ok(o) = rx.recv_timeout(Duration::from_millis(300)) {
        match o {
            CallbackEvent::Delivery { .. } => deliveries += 1,
            CallbackEvent::BadSignature { .. } => bad += 1,
            _ => {}
        }
    }
    assert_eq!((deliveries, bad), (1, 2));
}

/// A gzip body that inflates to `members` times 10 MiB of zeros (gzip members may follow
/// one another, RFC 1952, and HTTP clients decode them all).
fn bomb(members: usize) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 10 << 20]).unwrap();
    gz.finish().unwrap().repeat(members)
}

#[test]
fn a_sitemap_index_of_gzip_bombs_keeps_the_crawler_bounded() {
    let web = HostileWeb::start();
    let site = web.origin("bomb.test");
    web.set(
        "bomb.test",
        "/robots.txt",
        Canned::ok(
            "text/plain",
            format!("User-agent: *\nSitemap: {site}/index.xml\n"),
        ),
    );
    let mut index = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    // Each one a 600 MB bomb in its content coding, a few hundred KB on the wire.
    let payload = std::sync::Arc::new(bomb(60));
    for i in 0..1000 {
        index.push_str(&format!("<sitemap><loc>{site}/s{i}.xml</loc></sitemap>\n"));
        web.set(
            "bomb.test",
            &format!("/s{i}.xml"),
            Canned {
                status: 200,
                headers: vec![
                    ("content-type".into(), "application/xml".into()),
                    ("content-encoding".into(), "gzip".into()),
                ],
                body: payload.clone(),
            },
        );
    }
    index.push_str("</sitemapindex>\n");
    web.set(
        "bomb.test",
        "/index.xml",
        Canned::ok("application/xml", index),
    );
    web.set("bomb.test", "/", Canned::ok("text/html", "<p>home</p>"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let mut child = Command::new(crawl_bin())
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(&out)
        .args(["--progress", "quiet", "--coop", "meta"])
        .args([
            "--seeds",
            &format!("{site}/"),
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
        ])
        .args(web.resolve_args(&["bomb.test"]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak_kb = 0u64;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if let Some(kb) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse::<u64>().ok())
            })
        {
            peak_kb = peak_kb.max(kb);
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the crawl did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "the crawl exited with {status}");
    let fetched = web
        .log()
        .iter()
        .filter(|l| l.starts_with("bomb.test /s"))
        .count();
    // Ten bad files, and the rest of the walk is dropped.
    assert!((1..=20).contains(&fetched), "{fetched} bombs were fetched");
    // One bomb at a time, each stopped at a sitemap's 50 MB: nowhere near 600 MB.
    assert!(
        peak_kb < 250 << 10,
        "peak memory {} MiB after {fetched} bombs",
        peak_kb >> 10
    );
}

/// A site with a changes endpoint and a hub of its own, all answered by the test: the hub
/// records the subscription request (callback and secret) and never verifies on its own.
fn pushing_site(web: &HostileWeb) -> String {
    let site = web.origin("push.test");
    let changes = format!("{site}/.well-known/webcoop/changes");
    let hub = format!("{site}/.well-known/webcoop/hub");
    web.set(
        "push.test",
        "/robots.txt",
        Canned::ok("text/plain", "User-agent: *\nAllow: /\n"),
    );
    web.set(
        "push.test",
        "/robots.rdf",
        Canned::ok(
            "application/rdf+xml",
            listing(&site, vec![(format!("{site}/"), None)], &changes, &hub),
        ),
    );
    let feed = webcoop_protocol::changes_feed::ChangesFeed {
        id: changes.clone(),
        title: "changes".into(),
        updated: Utc.timestamp_opt(1_790_000_000, 0).unwrap(),
        self_link: Url::parse(&changes).unwrap(),
        hub: Some(Url::parse(&hub).unwrap()),
        next: None,
        head_seq: Some(1),
        resync: None,
        content_usage: None,
        entries: Vec::new(),
    };
    web.set(
        "push.test",
        "/.well-known/webcoop/changes",
        Canned::ok(
            "application/atom+xml",
            webcoop_protocol::changes_feed::write(&feed),
        ),
    );
    web.set(
        "push.test",
        "/.well-known/webcoop/hub",
        Canned {
            status: 202,
            headers: Vec::new(),
            body: std::sync::Arc::new(Vec::new()),
        },
    );
    web.set("push.test", "/", Canned::ok("text/html", "<p>home</p>"));
    site
}

#[test]
fn a_running_crawler_s_callback_cannot_be_hijacked_or_fed_forged_pushes() {
    let web = HostileWeb::start();
    let site = pushing_site(&web);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let port = super::support::free_port();
    let args = push_crawl(&web, &site, 8, &format!("127.0.0.1:{port}"), &["push.test"]);
    let mut crawler = webcoop::servers::Killed(
        Command::new(crawl_bin())
            .arg("crawl")
            .args(["--allow-net", "127.0.0.0/8"])
            .arg("--out")
            .arg(&out)
            .args(["--progress", "quiet"])
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The crawler subscribes: its request names the callback (with its token) and the secret.
    let started = Instant::now();
    let form = loop {
        if let Some((_, body)) = web
            .posts()
            .into_iter()
            .find(|(at, _)| at == "push.test /.well-known/webcoop/hub")
        {
            break webcoop_protocol::websub::SubscriptionRequest::from_form(&body).unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "no subscription request"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let callback = form.callback.to_string();
    let secret = form.secret.clone().unwrap();
    assert!(callback.starts_with(&format!("http://127.0.0.1:{port}/websub/")));
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let path_of = |url: &str| url.splitn(4, '/').nth(3).map(|p| format!("/{p}")).unwrap();
    let get = |url: &str, mode: &str| {
        // The largest lease a number can say: the crawler clamps it, never overflows.
        let q = form_urlencoded::Serializer::new(String::new())
            .append_pair("hub.mode", mode)
            .append_pair("hub.topic", form.topic.as_str())
            .append_pair("hub.challenge", "ch4ll3nge")
            .append_pair("hub.lease_seconds", &u64::MAX.to_string())
            .finish();
        let r = webcoop::servers::http_get(addr, &format!("{}?{q}", path_of(url)), &[]).unwrap();
        (r.status, String::from_utf8_lossy(&r.body).into_owned())
    };
    // A stranger guessing the path, or asking in the crawler's name to unsubscribe it.
    let (without_token, _) = callback.rsplit_once('/').unwrap();
    assert_eq!(get(without_token, "subscribe").0, 404);
    assert_eq!(
        get(
            &format!("{without_token}/AAAAAAAAAAAAAAAAAAAAAA"),
            "subscribe"
        )
        .0,
        404
    );
    assert_eq!(get(&callback, "unsubscribe").0, 404);
    // The hub the crawler asked: confirmed. After that, no "denied" is heard.
    assert_eq!(get(&callback, "subscribe"), (200, "ch4ll3nge".to_string()));
    assert_eq!(get(&callback, "denied").0, 404);
    assert_eq!(get(&callback, "subscribe").0, 404, "only once, as asked");
    // Deliveries: forged ones are ignored, the signed one is taken.
    let feed = std::fs::read(
        webcoop_testkit::workspace_root().join("fuzz/seeds/changes_feed/agent-example.atom"),
    )
    .unwrap();
    let forged = webcoop_protocol::websub::sign(
        webcoop_protocol::websub::SignatureAlgorithm::Sha256,
        b"a guess",
        &feed,
    );
    let signed = webcoop_protocol::websub::sign(
        webcoop_protocol::websub::SignatureAlgorithm::Sha256,
        secret.as_bytes(),
        &feed,
    );
    let path = path_of(&callback);
    assert_eq!(super::support::http_post(addr, &path, &[], &feed), 202);
    assert_eq!(
        super::support::http_post(addr, &path, &[("X-Hub-Signature", &forged)], &feed),
        202
    );
    assert_eq!(
        super::support::http_post(
            addr,
            &format!("{path}x"),
            &[("X-Hub-Signature", &signed)],
            &feed
        ),
        410
    );
    assert_eq!(
        super::support::http_post(addr, &path, &[("X-Hub-Signature", &signed)], &feed),
        202
    );
    let status = crawler.0.wait().unwrap();
    assert!(status.success());
    let stats = status_json(&out)["cooperation"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["origin"] == site.as_str()))
        .map(|s| s["stats"].clone())
        .unwrap_or_default();
    assert_eq!(stats["pushes"], 1, "{stats}");
    assert_eq!(stats["bad_signatures"], 2, "{stats}");
}

/// Where a hostile site's snapshot is served.
const SNAPSHOT_PATH: &str = "/.well-known/webcoop/snapshot/snapshot-000000000001.warc.zst";

/// Serves `pages` (path, body) on site.test with a robots.txt that allows all, a home page,
/// and an honest robots.rdf: each page listed with its SHA-256 and size, and a snapshot at
/// [`SNAPSHOT_PATH`] (which the caller serves, honest or not).
fn site_with_listing(web: &HostileWeb, pages: &[(String, String)]) {
    use webcoop_protocol::validator::Sha256Digest;
    let site = web.origin("site.test");
    web.set(
        "site.test",
        "/robots.txt",
        Canned::ok("text/plain", "User-agent: *\nAllow: /\n"),
    );
    web.set("site.test", "/", Canned::ok("text/html", "<p>home</p>"));
    for (path, body) in pages {
        web.set("site.test", path, Canned::ok("text/html", body.clone()));
    }
    let mut doc = webcoop_protocol::robots_rdf::parse(
        listing(
            &site,
            pages
                .iter()
                .map(|(p, _)| (format!("{site}{p}"), None))
                .collect(),
            &format!("{site}/.well-known/webcoop/changes"),
            &format!("{site}/.well-known/webcoop/hub"),
        )
        .as_bytes(),
        &Default::default(),
    )
    .unwrap();
    for (item, (_, body)) in doc.items.iter_mut().zip(pages) {
        item.etag = Some(Sha256Digest::of(body.as_bytes()).etag());
        item.size = Some(body.len() as u64);
    }
    doc.channel.snapshot = Some(Url::parse(&format!("{site}{SNAPSHOT_PATH}")).unwrap());
    web.set(
        "site.test",
        "/robots.rdf",
        Canned::ok(
            "application/rdf+xml",
            webcoop_protocol::robots_rdf::write(&doc),
        ),
    );
}

/// A crawl of site.test without politeness delays, `hosts` resolved to the hostile web.
fn snapshot_crawl_args(web: &HostileWeb, hosts: &[&str]) -> Vec<String> {
    let seed = format!("{}/", web.origin("site.test"));
    let words = ["--seeds", &seed, "--delay-min", "0", "--delay-factor", "0"];
    with_hosts(web, &words, hosts)
}

/// A snapshot whose records are written as the standard says, for a hostile site's use.
fn snapshot_file(site: &str, records: &[(&str, &[u8])], tail: &[u8]) -> Vec<u8> {
    use webcoop_protocol::snapshot::{Entry, SnapshotInfo};
    use webcoop_protocol::validator::Sha256Digest;
    let at = Utc.timestamp_opt(1_790_000_000, 0).unwrap();
    let mut w = webcoop_protocol::warc::ZstdWarcWriter::new(Vec::new(), None, 3).unwrap();
    let info = SnapshotInfo {
        site: format!("{site}/"),
        sequence: 1,
        content_usage: None,
    };
    w.append(
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", "<urn:uuid:0>"),
        ],
        info.block("hostile").as_bytes(),
    )
    .unwrap();
    for (url, body) in records {
        let e = Entry {
            url: url.to_string(),
            content_type: "text/html".into(),
            sha256: Sha256Digest::of(body),
            body: body.to_vec(),
        };
        let fields = e.fields("<urn:uuid:1>", at);
        let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
        w.append(&fields, body).unwrap();
    }
    let mut bytes = w.finish().unwrap();
    bytes.extend_from_slice(tail);
    bytes
}

#[test]
fn a_snapshot_that_lies_or_breaks_off_costs_only_the_pages_it_lied_about() {
    use webcoop_protocol::validator::Sha256Digest;
    let web = HostileWeb::start();
    let (site, victim) = (web.origin("site.test"), web.origin("victim.test"));
    let pages = [
        ("/a.html", "<p>a, true</p>"),
        ("/b.html", "<p>b, true</p>"),
        ("/c.html", "<p>c, true</p>"),
    ];
    // The listing is honest; the snapshot is not: b's record carries other content (with a
    // digest that matches it, so only the listing can tell), another origin's page rides
    // along, and the file breaks off in a frame that claims to be a 4 GiB record.
    let served: Vec<(String, String)> = pages
        .iter()
        .map(|(p, b)| (p.to_string(), b.to_string()))
        .collect();
    site_with_listing(&web, &served);
    let mut huge = vec![0x28, 0xb5, 0x2f, 0xfd, 0x84, 0x00];
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    let file = snapshot_file(
        &site,
        &[
            (&format!("{site}/a.html"), b"<p>a, true</p>"),
            (&format!("{site}/b.html"), b"<p>b, forged</p>"),
            (&format!("{victim}/x.html"), b"<p>not this site's</p>"),
        ],
        &huge,
    );
    web.set(
        "site.test",
        SNAPSHOT_PATH,
        Canned::ok("application/zstd", file),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let o = crawl(
        &out,
        &snapshot_crawl_args(&web, &["site.test", "victim.test"]),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("snapshot not used"), "{stderr}");
    let log = web.log();
    assert!(
        log.iter()
            .any(|l| l.contains("/snapshot/snapshot-000000000001")),
        "the snapshot was fetched: {log:?}"
    );
    assert!(
        !log.iter().any(|l| l.starts_with("victim.test")),
        "the snapshot steered the crawler: {log:?}"
    );
    // Every listed page is held with its true content: a from the snapshot (and fetched once
    // to check it), b and c fetched because the snapshot lied about b and broke off before c.
    let copies = Command::new(crawl_bin())
        .args(["copies", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let copies = String::from_utf8_lossy(&copies.stdout);
    for (path, body) in pages {
        let line = format!("{} {site}{path}", Sha256Digest::of(body.as_bytes()).etag());
        assert!(copies.contains(&line), "{line} not in:\n{copies}");
    }
    assert!(
        !copies.contains("forged") && !copies.contains("victim"),
        "{copies}"
    );
    let requested = |p: &str| {
        log.iter()
            .filter(|l| l.starts_with(&format!("site.test {p}")))
            .count()
    };
    assert_eq!(requested("/b.html"), 1, "{log:?}");
    assert_eq!(requested("/c.html"), 1, "{log:?}");
    let stats = status_json(&out)["cooperation"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["origin"] == site.as_str()).cloned())
        .unwrap_or_default();
    assert_eq!(stats["stats"]["from_snapshot"], 1, "{stats}");
    assert_eq!(stats["stats"]["refuted"], 1, "{stats}");
}

/// The time of day of a crawl.log line in ms, and its elapsed field in ms
/// (`2026-11-27T01:48:46.367Z 200 9956275 URL 0 0 - 371ms note`).
fn log_times(line: &str) -> (i64, i64) {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let at = chrono::DateTime::parse_from_rfc3339(fields[0])
        .unwrap_or_else(|e| panic!("{e}: {line:?}"))
        .timestamp_millis();
    let elapsed = fields[7]
        .strip_suffix("ms")
        .and_then(|e| e.parse().ok())
        .unwrap_or_else(|| panic!("no elapsed time in {line:?}"));
    (at, elapsed)
}

#[test]
fn a_snapshot_s_request_weighs_on_politeness_as_its_download_not_its_reading() {
    let web = HostileWeb::start();
    let site = web.origin("site.test");
    // A site whose snapshot downloads in a moment (the pages repeat: it is small) and takes
    // much longer to read (ten megabytes to check, analyse and archive): the reading costs
    // the server nothing, so the delay before the next request must not grow with it.
    let pages: Vec<(String, String)> = (0..100)
        .map(|i| {
            let words = "the quick brown fox jumps over the lazy dog ".repeat(2_400);
            (
                format!("/p{i}.html"),
                format!("<p>page {i}</p><p>{words}</p>"),
            )
        })
        .collect();
    site_with_listing(&web, &pages);
    let records: Vec<(String, &[u8])> = pages
        .iter()
        .map(|(p, body)| (format!("{site}{p}"), body.as_bytes()))
        .collect();
    let records: Vec<(&str, &[u8])> = records.iter().map(|(u, b)| (u.as_str(), *b)).collect();
    let file = snapshot_file(&site, &records, b"");
    web.set(
        "site.test",
        SNAPSHOT_PATH,
        Canned::ok("application/zstd", file),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let o = crawl(&out, &snapshot_crawl_args(&web, &["site.test"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
    let listed = log
        .lines()
        .find(|l| l.ends_with(" robots.rdf"))
        .map(log_times)
        .expect("robots.rdf in the log");
    let snapshot = log
        .lines()
        .find(|l| {
            l.ends_with(" snapshot") && !l.contains(webcoop_crawler::crawl_log::FROM_SNAPSHOT)
        })
        .map(log_times)
        .expect("the snapshot's request in the log");
    let read: Vec<i64> = log
        .lines()
        .filter(|l| l.contains(webcoop_crawler::crawl_log::FROM_SNAPSHOT))
        .map(|l| log_times(l).0)
        .collect();
    assert_eq!(read.len(), pages.len(), "{log}");
    // The download began after robots.rdf was read and ended before the first page was read
    // from the file; the log's times are to the millisecond, hence the 2 ms.
    let first = read.iter().min().copied().unwrap_or(0);
    let last = read.iter().max().copied().unwrap_or(0);
    assert!(
        snapshot.1 <= first - listed.0 + 2,
        "the snapshot's request took {} ms by the log, yet its first page was read {} ms after \
         robots.rdf and its last {} ms after:\n{log}",
        snapshot.1,
        first - listed.0,
        last - listed.0
    );
}

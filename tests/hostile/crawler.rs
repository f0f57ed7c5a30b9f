//! The crawler against sites that lie, steer and attack: hostile robots.txt values, another
//! origin's endpoints named in a listing, forged pushes and hijacking verifications, and a
//! sitemap index of gzip bombs. Each crawl is the real binary; the sites are loopback servers
//! whose every byte the test writes.

use super::listing_site::{asked_of, crawl, foreign_of, listing, status_json, with_hosts};
use super::support::{Canned, HostileWeb, crawl_bin};
use chrono::{TimeZone, Utc};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_testkit::testweb::{HostSpec, Robots, TestWeb};

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
    let steered = asked_of(&log, "victim.test");
    assert!(
        steered.is_empty(),
        "the site steered the crawler to: {steered:?}"
    );
    let coop = status_json(&out)["cooperation"].to_string();
    let foreign = foreign_of(&out, &site);
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
    eprintln!("peak memory {} MiB after {fetched} bombs", peak_kb >> 10);
    // Ten bad files, and the rest of the walk is dropped.
    assert!((1..=20).contains(&fetched), "{fetched} bombs were fetched");
    // Each bomb's size is counted before anything is kept, so it costs CPU and no memory:
    // the crawler stays near its own size (about 40 MiB), where a decoding buffer growing to
    // a sitemap's 50 MB peaked at 157-253 MiB (two bombs in flight under load).
    assert!(
        peak_kb < 100 << 10,
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

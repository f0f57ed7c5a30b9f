//! WebSub conformance of the agent's hub, written from the W3C Recommendation (23 January 2018):
//! §5.1 subscriber requests, §5.3 verification of intent, §5.4/7 leases, §7 content
//! distribution, §8 authenticated distribution; and what a production hub must add: a callback
//! that hangs delays nobody, one that is down gets everything once it is back, subscriptions
//! survive a restart, SSRF and rate limits.

use crate::common;

use crate::common::subscriber::{Deliver, Subscriber, Verify};
use crate::common::{Options, Site};
use std::time::{Duration, Instant};
use webcoop_protocol::changes_feed::{self, ChangeKind, ChangesFeed, FeedLimits};
use webcoop_protocol::delta::dcz;
use webcoop_protocol::validator::Sha256Digest;
use webcoop_protocol::websub;

const SECS: fn(u64) -> Duration = Duration::from_secs;

async fn subscribe(site: &Site, sub: &Subscriber, name: &str, extra: &[(&str, &str)]) {
    let callback = sub.callback(name);
    let topic = site.topic();
    let mut pairs = vec![
        ("hub.mode", "subscribe"),
        ("hub.callback", callback.as_str()),
        ("hub.topic", topic.as_str()),
    ];
    pairs.extend_from_slice(extra);
    let (status, text) = site.hub_request(&pairs).await;
    assert_eq!(status, 202, "{text}");
    sub.wait(name, SECS(10), "verification of intent", |c| {
        !c.verifications.is_empty()
    })
    .await;
    // The hub activates the subscription right after a successful verification.
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Waits for a gauge (the dispatcher updates them every second).
async fn wait_metric(site: &Site, name: &str, value: f64, what: &str) {
    let deadline = Instant::now() + SECS(10);
    while site.metric(name).await != value {
        assert!(
            Instant::now() < deadline,
            "{what}: {name} never became {value}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn feed_of(body: &[u8]) -> ChangesFeed {
    changes_feed::parse(body, &FeedLimits::default()).unwrap()
}

fn seqs(sub: &Subscriber, name: &str) -> Vec<u64> {
    sub.with(name, |c| {
        c.deliveries
            .iter()
            .flat_map(|d| feed_of(&d.body).entries.into_iter().map(|e| e.seq))
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verification_of_intent_then_content_distribution() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    subscribe(&site, &sub, "a", &[]).await;
    let v = sub.with("a", |c| c.verifications[0].clone());
    assert_eq!(v["hub.mode"], "subscribe");
    assert_eq!(v["hub.topic"], site.topic());
    assert_eq!(v["hub.lease_seconds"], "864000", "10 days by default");
    assert_eq!(v["token"], "t-a", "the callback's own query is preserved");
    assert!(v["hub.challenge"].len() >= 32);

    site.write("news.html", "<p>news</p>");
    sub.wait("a", SECS(10), "a delivery", |c| !c.deliveries.is_empty())
        .await;
    let d = sub.with("a", |c| c.deliveries[0].clone());
    assert_eq!(d.headers["content-type"], "application/atom+xml");
    let link = d.headers["link"].to_str().unwrap();
    assert!(
        link.contains(&format!("<{}>; rel=\"self\"", site.topic())) && link.contains("rel=\"hub\""),
        "{link}"
    );
    assert!(
        d.headers.get("x-hub-signature").is_none(),
        "no secret, no signature"
    );
    let feed = feed_of(&d.body);
    assert_eq!(feed.self_link.as_str(), site.topic());
    let e = &feed.entries[0];
    assert_eq!(
        (e.kind, e.url.as_str()),
        (ChangeKind::Created, "https://site.example/news.html")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_refused_challenge_means_no_subscription() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    sub.set("wrong", Verify::WrongEcho, Deliver::Ok);
    sub.set("refuses", Verify::NotFound, Deliver::Ok);
    subscribe(&site, &sub, "wrong", &[]).await;
    subscribe(&site, &sub, "refuses", &[]).await;
    site.write("news.html", "x");
    site.wait_head(1).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(sub.with("wrong", |c| c.attempts), 0);
    assert_eq!(sub.with("refuses", |c| c.attempts), 0);
    assert_eq!(site.metric("webcoop_subscriptions").await, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_are_refused_with_the_reason() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    let topic = site.topic();
    let cb = sub.callback("x");
    /// Form pairs, the expected status, and a phrase the reason must contain.
    type Case<'a> = (Vec<(&'a str, &'a str)>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            vec![("hub.mode", "subscribe"), ("hub.callback", &cb)],
            400,
            "hub.topic",
        ),
        (
            vec![
                ("hub.mode", "subscribe"),
                ("hub.callback", &cb),
                ("hub.topic", "https://other.example/feed"),
            ],
            400,
            "not a topic of this hub",
        ),
        (
            vec![
                ("hub.mode", "publish"),
                ("hub.callback", &cb),
                ("hub.topic", &topic),
            ],
            400,
            "hub.mode",
        ),
        (
            vec![
                ("hub.mode", "subscribe"),
                ("hub.callback", "http://10.255.255.1/cb"),
                ("hub.topic", &topic),
            ],
            403,
            "--allow-callback-net",
        ),
        (
            vec![
                ("hub.mode", "subscribe"),
                ("hub.callback", "http://169.254.169.254/latest/meta-data"),
                ("hub.topic", &topic),
            ],
            403,
            "link-local (169.254.0.0/16)",
        ),
    ];
    for (pairs, status, needle) in cases {
        let (got, text) = site.hub_request(&pairs).await;
        assert_eq!(got, status, "{pairs:?}: {text}");
        assert!(text.contains(needle), "{pairs:?}: {text}");
    }
    let long_secret = "s".repeat(200);
    let (got, text) = site
        .hub_request(&[
            ("hub.mode", "subscribe"),
            ("hub.callback", &cb),
            ("hub.topic", &topic),
            ("hub.secret", &long_secret),
        ])
        .await;
    assert_eq!(got, 400);
    assert!(text.contains("hub.secret"), "{text}");
    // A client asking too often is slowed down.
    let mut statuses = Vec::new();
    for _ in 0..15 {
        statuses.push(site.hub_request(&[("hub.mode", "subscribe")]).await.0);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_are_signed_with_the_secret() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    subscribe(
        &site,
        &sub,
        "s",
        &[("hub.secret", "correct horse battery staple")],
    )
    .await;
    site.write("a.html", "a");
    sub.wait("s", SECS(10), "a delivery", |c| !c.deliveries.is_empty())
        .await;
    let d = sub.with("s", |c| c.deliveries[0].clone());
    let signature = d.headers["x-hub-signature"].to_str().unwrap();
    assert!(signature.starts_with("sha256="), "{signature}");
    assert_eq!(
        websub::verify(b"correct horse battery staple", &d.body, signature),
        Ok(websub::SignatureAlgorithm::Sha256)
    );
    assert!(websub::verify(b"wrong secret", &d.body, signature).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_that_accepts_gzip_or_zstd_gets_compressed_signed_deliveries() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    sub.accept("gz", "gzip, zstd");
    sub.accept("zs", "gzip;q=0.5, zstd");
    let secret = [("hub.secret", "correct horse battery staple")];
    for name in ["gz", "zs", "plain"] {
        subscribe(&site, &sub, name, &secret).await;
    }
    let page = "<p>the crawler's copy of the page</p>\n".repeat(100);
    for i in 0..20 {
        site.write(&format!("p{i}.html"), &page);
    }
    site.wait_head(20).await;
    let mut plain_seqs = Vec::new();
    for (name, coding) in [("gz", Some("gzip")), ("zs", Some("zstd")), ("plain", None)] {
        sub.wait(name, SECS(10), "all 20 changes", |c| {
            c.deliveries
                .iter()
                .map(|d| {
                    let decoded = websub::decode_delivery(
                        d.headers
                            .get("content-encoding")
                            .map(|v| v.to_str().unwrap()),
                        &d.body,
                        1 << 20,
                    )
                    .unwrap();
                    feed_of(&decoded).entries.len()
                })
                .sum::<usize>()
                == 20
        })
        .await;
        let deliveries = sub.with(name, |c| c.deliveries.clone());
        let mut got = Vec::new();
        for d in deliveries {
            let sent = d
                .headers
                .get("content-encoding")
                .map(|v| v.to_str().unwrap());
            assert_eq!(sent, coding, "{name}");
            // The signature covers the bytes as sent: checkable before decompressing.
            let signature = d.headers["x-hub-signature"].to_str().unwrap();
            assert!(websub::verify(secret[0].1.as_bytes(), &d.body, signature).is_ok());
            let body = websub::decode_delivery(sent, &d.body, 1 << 20).unwrap();
            if coding.is_some() {
                assert!(
                    d.body.len() * 3 < body.len(),
                    "{name}: {} of {}",
                    d.body.len(),
                    body.len()
                );
            }
            got.extend(feed_of(&body).entries.into_iter().map(|e| e.seq));
        }
        got.sort();
        if name == "plain" {
            plain_seqs = got;
        } else {
            assert_eq!(got, (1..=20).collect::<Vec<_>>(), "{name}");
        }
    }
    assert_eq!(plain_seqs, (1..=20).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_415_to_a_compressed_delivery_brings_it_again_plain() {
    let mut site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    sub.accept("r", "gzip");
    sub.set("r", Verify::Echo, Deliver::RefuseCompressed);
    subscribe(&site, &sub, "r", &[]).await;
    site.write("a.html", "a");
    sub.wait("r", SECS(10), "a plain delivery", |c| {
        !c.deliveries.is_empty()
    })
    .await;
    assert_eq!(sub.with("r", |c| c.attempts), 2, "one refused, one plain");
    assert!(sub.with("r", |c| {
        c.deliveries[0].headers.get("content-encoding").is_none()
    }));
    // The hub remembers, across a restart too: no more refused attempts.
    site.restart().await;
    site.write("b.html", "b");
    sub.wait("r", SECS(10), "a second delivery", |c| {
        c.deliveries.len() == 2
    })
    .await;
    assert_eq!(sub.with("r", |c| c.attempts), 3);
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribing_is_verified_and_stops_deliveries() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    subscribe(&site, &sub, "u", &[]).await;
    site.write("a.html", "a");
    sub.wait("u", SECS(10), "a delivery", |c| c.deliveries.len() == 1)
        .await;
    let (cb, topic) = (sub.callback("u"), site.topic());
    let (status, _) = site
        .hub_request(&[
            ("hub.mode", "unsubscribe"),
            ("hub.callback", &cb),
            ("hub.topic", &topic),
        ])
        .await;
    assert_eq!(status, 202);
    sub.wait("u", SECS(10), "verification of the unsubscription", |c| {
        c.verifications.len() == 2
    })
    .await;
    let v = sub.with("u", |c| c.verifications[1].clone());
    assert_eq!(v["hub.mode"], "unsubscribe");
    assert!(!v.contains_key("hub.lease_seconds"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    site.write("b.html", "b");
    site.wait_head(2).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(sub.with("u", |c| c.deliveries.len()), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_ends_the_subscription() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    subscribe(&site, &sub, "l", &[("hub.lease_seconds", "600")]).await;
    assert_eq!(
        sub.with("l", |c| c.verifications[0]["hub.lease_seconds"].clone()),
        "600"
    );
    // Asking for a perpetual lease gets the hub's cap.
    subscribe(
        &site,
        &sub,
        "forever",
        &[("hub.lease_seconds", "999999999999")],
    )
    .await;
    assert_eq!(
        sub.with("forever", |c| c.verifications[0]["hub.lease_seconds"]
            .clone()),
        (30 * 86_400).to_string()
    );
    wait_metric(&site, "webcoop_subscriptions", 2.0, "both subscriptions").await;
    site.clock.advance(SECS(601));
    wait_metric(
        &site,
        "webcoop_subscriptions",
        1.0,
        "the short lease's expiry",
    )
    .await;
    site.write("a.html", "a");
    sub.wait("forever", SECS(10), "a delivery", |c| {
        !c.deliveries.is_empty()
    })
    .await;
    assert_eq!(
        sub.with("l", |c| c.attempts),
        0,
        "no delivery after the lease"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_410_ends_the_subscription() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    sub.set("g", Verify::Echo, Deliver::Gone);
    subscribe(&site, &sub, "g", &[]).await;
    site.write("a.html", "a");
    sub.wait("g", SECS(10), "a delivery attempt", |c| c.attempts == 1)
        .await;
    wait_metric(
        &site,
        "webcoop_subscriptions",
        0.0,
        "the end of the subscription after 410",
    )
    .await;
    site.write("b.html", "b");
    site.wait_head(2).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(sub.with("g", |c| c.attempts), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_callback_delays_nobody() {
    let site = Site::start(
        &[("index.html", "home")],
        Options {
            delivery_timeout: SECS(2),
            ..Options::default()
        },
    )
    .await;
    let sub = Subscriber::start().await;
    sub.set("slow", Verify::Echo, Deliver::Hang);
    subscribe(&site, &sub, "slow", &[]).await;
    subscribe(&site, &sub, "fast", &[]).await;
    site.write("a.html", "a");
    site.wait_head(1).await;
    let changed = Instant::now();
    sub.wait("fast", SECS(10), "a delivery", |c| !c.deliveries.is_empty())
        .await;
    let latency = sub.with("fast", |c| c.deliveries[0].at) - changed;
    assert!(
        latency < SECS(2),
        "the fast subscriber waited {latency:?} for the slow one"
    );
    // The hanging one times out and is retried.
    sub.wait("slow", SECS(15), "a retry after the time-out", |c| {
        c.attempts >= 2
    })
    .await;
    // Later changes still reach the fast one at once.
    site.write("b.html", "b");
    sub.wait("fast", SECS(5), "the second delivery", |c| {
        c.deliveries.len() >= 2
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_is_down_gets_everything_in_order_once_back() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    subscribe(&site, &sub, "flaky", &[]).await;
    sub.set("flaky", Verify::Echo, Deliver::Unavailable);
    for i in 0..6 {
        site.write(&format!("p{i}.html"), "x");
        site.wait_head(i + 1).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    sub.wait("flaky", SECS(10), "failed attempts", |c| c.attempts >= 2)
        .await;
    sub.set("flaky", Verify::Echo, Deliver::Ok);
    sub.wait("flaky", SECS(20), "the backlog", |c| {
        c.deliveries
            .iter()
            .map(|d| feed_of(&d.body).entries.len())
            .sum::<usize>()
            >= 6
    })
    .await;
    let got = seqs(&sub, "flaky");
    let mut dedup = got.clone();
    dedup.dedup();
    assert_eq!(
        dedup,
        (1..=6).collect::<Vec<_>>(),
        "in order, nothing missing: {got:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_survive_a_restart() {
    let mut site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    subscribe(&site, &sub, "p", &[]).await;
    site.restart().await;
    site.write("after-restart.html", "x");
    sub.wait("p", SECS(10), "a delivery after the restart", |c| {
        !c.deliveries.is_empty()
    })
    .await;
    assert_eq!(
        sub.with("p", |c| c.verifications.len()),
        1,
        "no new verification was needed"
    );
    site.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_long_an_absence_gets_a_resync_marker_instead_of_the_backlog() {
    let options = Options {
        retain_changes: Some(10),
        feed_entries: Some(5),
        ..Options::default()
    };
    let site = Site::start(&[("index.html", "home")], options).await;
    let sub = Subscriber::start().await;
    subscribe(&site, &sub, "away", &[]).await;
    sub.set("away", Verify::Echo, Deliver::Unavailable);
    for i in 0..30 {
        site.write(&format!("p{i}.html"), "x");
    }
    site.wait_head(30).await;
    sub.wait("away", SECS(10), "a failed attempt", |c| c.attempts >= 1)
        .await;
    sub.set("away", Verify::Echo, Deliver::Ok);
    sub.wait("away", SECS(20), "a delivery", |c| !c.deliveries.is_empty())
        .await;
    let first = sub.with("away", |c| feed_of(&c.deliveries[0].body));
    let resync = first.resync.expect("a resync marker");
    assert_eq!(
        (resync.since, resync.listing.as_str()),
        (0, "https://site.example/robots.rdf")
    );
    assert!(first.entries.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_deltas_travel_inside_the_delivery() {
    let page = |v: u32| {
        format!(
            "<html><body>{}<p>version {v}</p></body></html>",
            "<p>unchanged paragraph of text</p>".repeat(100)
        )
    };
    let site = Site::start(&[("doc.html", &page(1))], Options::default()).await;
    let sub = Subscriber::start().await;
    subscribe(&site, &sub, "d", &[]).await;
    site.write("doc.html", &page(2));
    sub.wait("d", SECS(10), "a delivery", |c| !c.deliveries.is_empty())
        .await;
    let feed = sub.with("d", |c| feed_of(&c.deliveries[0].body));
    let entry = &feed.entries[0];
    let inline = entry.delta.as_ref().expect("an inline delta");
    assert_eq!(inline.base, Sha256Digest::of(page(1).as_bytes()).etag());
    let decoded = dcz::decode_verified(
        page(1).as_bytes(),
        &inline.data,
        entry.etag.as_ref().unwrap(),
        1 << 20,
    )
    .unwrap();
    assert_eq!(decoded, page(2).into_bytes());
}

/// The changes a delivery carries, read as its `Content-Type` and `Content-Encoding` say.
fn delivered(d: &common::subscriber::Delivery) -> ChangesFeed {
    let coding = d
        .headers
        .get("content-encoding")
        .map(|v| v.to_str().unwrap());
    let body = websub::decode_delivery(coding, &d.body, 1 << 20).unwrap();
    match d.headers.get("content-type").map(|v| v.to_str().unwrap()) {
        Some(changes_feed::CBOR_MEDIA_TYPE) => {
            changes_feed::parse_cbor(&body, &FeedLimits::default()).unwrap()
        }
        _ => feed_of(&body),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_asks_for_cbor_gets_the_same_changes_in_fewer_bytes() {
    let page = |i: u32, v: u32| {
        format!(
            "<html><body>{}<p>page {i} version {v}</p></body></html>",
            "<p>unchanged paragraph of text</p>".repeat(100)
        )
    };
    let files: Vec<(String, String)> = (0..20)
        .map(|i| (format!("p{i}.html"), page(i, 1)))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let site = Site::start(&refs, Options::default()).await;
    let sub = Subscriber::start().await;
    let secret = [("hub.secret", "correct horse battery staple")];
    for name in ["atom", "cbor"] {
        sub.accept(name, "gzip, zstd");
    }
    // The crawler's answer, word for word; any other subscriber keeps getting Atom.
    sub.accept_type("cbor", websub::CALLBACK_ACCEPT);
    for name in ["atom", "cbor"] {
        subscribe(&site, &sub, name, &secret).await;
    }
    for i in 0..20 {
        site.write(&format!("p{i}.html"), &page(i, 2));
    }
    site.write("new.html", "<p>created</p>");
    site.wait_head(21).await;
    let all = |c: &common::subscriber::Callback| {
        c.deliveries
            .iter()
            .map(|d| delivered(d).entries.len())
            .sum::<usize>()
            == 21
    };
    sub.wait("atom", SECS(10), "21 changes", all).await;
    sub.wait("cbor", SECS(10), "21 changes", all).await;
    let (atom, cbor) = (
        sub.with("atom", |c| c.deliveries.clone()),
        sub.with("cbor", |c| c.deliveries.clone()),
    );
    for d in &cbor {
        assert_eq!(d.headers["content-type"], changes_feed::CBOR_MEDIA_TYPE);
        assert_eq!(
            d.headers["content-encoding"], "zstd",
            "zstd wins the tie for CBOR"
        );
        let signature = d.headers["x-hub-signature"].to_str().unwrap();
        assert!(websub::verify(secret[0].1.as_bytes(), &d.body, signature).is_ok());
    }
    for d in &atom {
        assert_eq!(d.headers["content-type"], "application/atom+xml");
        assert_eq!(d.headers["content-encoding"], "gzip");
    }
    let entries = |ds: &[common::subscriber::Delivery]| {
        let mut es: Vec<_> = ds.iter().flat_map(|d| delivered(d).entries).collect();
        es.sort_by_key(|e| e.seq);
        es
    };
    let (a, c) = (entries(&atom), entries(&cbor));
    assert_eq!(a.len(), 21);
    for (a, c) in a.iter().zip(&c) {
        assert_eq!(
            (
                &a.seq,
                &a.kind,
                &a.url,
                &a.time,
                &a.etag,
                &a.previous_etag,
                &a.size
            ),
            (
                &c.seq,
                &c.kind,
                &c.url,
                &c.time,
                &c.etag,
                &c.previous_etag,
                &c.size
            )
        );
        assert_eq!(a.content_type, c.content_type);
        assert_eq!(a.delta, c.delta, "{}", a.url);
        let close = match (a.changed_fraction, c.changed_fraction) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-6,
            (x, y) => x == y,
        };
        assert!(close, "{:?} {:?}", a.changed_fraction, c.changed_fraction);
    }
    assert!(
        a.iter().filter(|e| e.delta.is_some()).count() >= 20,
        "inline deltas"
    );
    let bytes =
        |ds: &[common::subscriber::Delivery]| ds.iter().map(|d| d.body.len()).sum::<usize>();
    assert!(
        bytes(&cbor) * 10 < bytes(&atom) * 7,
        "CBOR {} B against Atom {} B",
        bytes(&cbor),
        bytes(&atom)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_refuses_the_cbor_it_asked_for_gets_atom_again() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let sub = Subscriber::start().await;
    sub.accept_type("r", changes_feed::CBOR_MEDIA_TYPE);
    sub.set("r", Verify::Echo, Deliver::RefuseCbor);
    subscribe(&site, &sub, "r", &[]).await;
    site.write("a.html", "a");
    sub.wait("r", SECS(10), "a delivery", |c| !c.deliveries.is_empty())
        .await;
    assert_eq!(sub.with("r", |c| c.attempts), 2, "one refused, one in Atom");
    let d = sub.with("r", |c| c.deliveries[0].clone());
    assert_eq!(d.headers["content-type"], "application/atom+xml");
    assert_eq!(delivered(&d).entries.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resourcesync_change_notifications_are_pushed_on_their_own_topic() {
    let options = Options {
        retain_changes: Some(10),
        feed_entries: Some(5),
        ..Options::default()
    };
    let site = Site::start(&[("index.html", "home")], options).await;
    let topic = "https://site.example/.well-known/webcoop/resourcesync-notifications".to_string();
    // The topic names its hub and itself, as WebSub discovery reads it.
    let r = site
        .client
        .get(site.url("resourcesync-notifications"))
        .send()
        .await
        .unwrap();
    let link = r.headers()["link"].to_str().unwrap().to_string();
    assert!(
        link.contains("rel=\"hub\"") && link.contains(&format!("<{topic}>; rel=\"self\"")),
        "{link}"
    );
    let sub = Subscriber::start().await;
    let callback = sub.callback("rs");
    let (status, text) = site
        .hub_request(&[
            ("hub.mode", "subscribe"),
            ("hub.callback", callback.as_str()),
            ("hub.topic", topic.as_str()),
        ])
        .await;
    assert_eq!(status, 202, "{text}");
    sub.wait("rs", SECS(10), "verification of intent", |c| {
        !c.verifications.is_empty()
    })
    .await;
    assert_eq!(
        sub.with("rs", |c| c.verifications[0]["hub.topic"].clone()),
        topic
    );
    tokio::time::sleep(Duration::from_millis(200)).await;

    site.write("news.html", "<p>news</p>");
    sub.wait("rs", SECS(10), "a notification", |c| {
        !c.deliveries.is_empty()
    })
    .await;
    let d = sub.with("rs", |c| c.deliveries[0].clone());
    assert_eq!(d.headers["content-type"], "application/xml");
    let link = d.headers["link"].to_str().unwrap();
    assert!(link.contains(&format!("<{topic}>; rel=\"self\"")), "{link}");
    let body = String::from_utf8(d.body.to_vec()).unwrap();
    assert!(
        body.contains("<rs:md capability=\"changelist-notification\"/>"),
        "{body}"
    );
    assert!(
        body.contains("<loc>https://site.example/news.html</loc>"),
        "{body}"
    );
    let sha = Sha256Digest::of(b"<p>news</p>").to_hex();
    assert!(body.contains("change=\"created\""), "{body}");
    assert!(body.contains(&format!("hash=\"sha-256:{sha}\"")), "{body}");

    // Away for longer than the history: a Framework Notification sends it to the Resource List.
    sub.set("rs", Verify::Echo, Deliver::Unavailable);
    for i in 0..30 {
        site.write(&format!("p{i}.html"), "x");
    }
    site.wait_head(31).await;
    sub.wait("rs", SECS(10), "a failed attempt", |c| c.attempts >= 2)
        .await;
    sub.set("rs", Verify::Echo, Deliver::Ok);
    sub.wait("rs", SECS(20), "a second notification", |c| {
        c.deliveries.len() >= 2
    })
    .await;
    let body = sub.with("rs", |c| {
        String::from_utf8(c.deliveries[1].body.to_vec()).unwrap()
    });
    assert!(
        body.contains("capability=\"framework-notification\""),
        "{body}"
    );
    assert!(
        body.contains(
            "<loc>https://site.example/.well-known/webcoop/resourcesync/resourcelist.xml</loc>"
        ),
        "{body}"
    );
    // A topic the hub does not have is refused, naming both it has.
    let (status, text) = site
        .hub_request(&[
            ("hub.mode", "subscribe"),
            ("hub.callback", callback.as_str()),
            (
                "hub.topic",
                "https://site.example/.well-known/webcoop/other",
            ),
        ])
        .await;
    assert_eq!(status, 400);
    assert!(text.contains("resourcesync-notifications"), "{text}");
}

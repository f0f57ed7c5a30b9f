//! The agent's HTTP service with a real client over loopback: changes paging, 410 and
//! conditional GETs; delta chains decoded by the protocol crate, stock `zstd --patch-from`
//! and GNU patch; traversal attempts; one encoding for many requests.

use crate::common::{self, Options, Site};
use std::collections::BTreeSet;
use std::process::Command;
use webcoop::servers::http_get;
use webcoop_protocol::changes_feed::{self, ChangeKind, FeedLimits};
use webcoop_protocol::compression::zstd_decompress_bounded;
use webcoop_protocol::delta::{dcz, unified};
use webcoop_protocol::validator::{EntityTag, Sha256Digest};
use webcoop_testkit::{run_ok, tool};

fn page(version: u32) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html><head><title>Manual</title></head><body>\n");
    for i in 0..200 {
        s.push_str(&format!("<p>Paragraph {i} of the manual explains one more detail of the product in a long sentence.</p>\n"));
    }
    s.push_str(&format!(
        "<footer>Release 1.{version}</footer></body></html>\n"
    ));
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_are_paged_oldest_first_with_conditional_get_and_bad_parameters_named() {
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    for i in 0..25 {
        site.write(&format!("p{i:02}.html"), "x");
        // One change per batch, so sequence numbers follow file names.
        site.wait_head(i + 1).await;
    }
    let mut seen = Vec::new();
    let mut url = site.url("changes?since=0&limit=10");
    let mut pages = 0;
    loop {
        let r = site.client.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/atom+xml");
        let link = r.headers()["link"].to_str().unwrap().to_string();
        assert!(
            link.contains("rel=\"hub\"") && link.contains("rel=\"self\""),
            "{link}"
        );
        let feed = changes_feed::parse(&r.bytes().await.unwrap(), &FeedLimits::default()).unwrap();
        assert_eq!(feed.head_seq, Some(25));
        seen.extend(feed.entries.iter().map(|e| e.seq));
        pages += 1;
        match feed.next {
            // The next link names the public URL; ask the same service.
            Some(next) => url = site.url(&format!("changes?{}", next.query().unwrap())),
            None => break,
        }
    }
    assert_eq!(seen, (1..=25).collect::<Vec<_>>());
    assert_eq!(pages, 3);

    // An idle site: the client is current, and revalidating costs a 304 with no body.
    let r = site
        .client
        .get(site.url("changes?since=25"))
        .send()
        .await
        .unwrap();
    let etag = r.headers()["etag"].to_str().unwrap().to_string();
    let feed = changes_feed::parse(&r.bytes().await.unwrap(), &FeedLimits::default()).unwrap();
    assert!(feed.entries.is_empty());
    let r = site
        .client
        .get(site.url("changes?since=25"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    let raw = http_get(
        site.addr,
        "/.well-known/webcoop/changes?since=25",
        &[("If-None-Match", &etag)],
    )
    .unwrap();
    let wire = raw
        .headers
        .iter()
        .map(|(n, v)| n.len() + v.len() + 4)
        .sum::<usize>()
        + 20;
    assert!(wire < 400, "a 304 costs {wire} bytes of headers");
    // A new change invalidates it.
    site.write("late.html", "late");
    site.wait_head(26).await;
    let r = site
        .client
        .get(site.url("changes?since=25"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let feed = changes_feed::parse(&r.bytes().await.unwrap(), &FeedLimits::default()).unwrap();
    assert_eq!(
        feed.entries
            .iter()
            .map(|e| (e.seq, e.kind))
            .collect::<Vec<_>>(),
        [(26, ChangeKind::Created)]
    );

    for (query, param) in [
        ("since=-3", "since"),
        ("since=x", "since"),
        ("limit=0", "limit"),
        ("limit=99999", "limit"),
    ] {
        let r = site
            .client
            .get(site.url(&format!("changes?{query}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
        assert!(r.text().await.unwrap().starts_with(param), "{query}");
    }
    // Without since: the newest page.
    let r = site
        .client
        .get(site.url("changes?limit=3"))
        .send()
        .await
        .unwrap();
    let feed = changes_feed::parse(&r.bytes().await.unwrap(), &FeedLimits::default()).unwrap();
    assert_eq!(
        feed.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [24, 25, 26]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_older_than_the_history_gets_410_and_a_resync_pointer() {
    let options = Options {
        retain_changes: Some(10),
        feed_entries: Some(5),
        ..Options::default()
    };
    let site = Site::start(&[("index.html", "home")], options).await;
    for i in 0..30 {
        site.write(&format!("p{i}.html"), "x");
    }
    site.wait_head(30).await;
    let r = site
        .client
        .get(site.url("changes?since=3"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 410);
    let feed = changes_feed::parse(&r.bytes().await.unwrap(), &FeedLimits::default()).unwrap();
    let resync = feed.resync.unwrap();
    assert_eq!(
        (resync.since, resync.listing.as_str()),
        (3, "https://site.example/robots.rdf")
    );
    // Within the retained history all is well; ahead of the head means the state was reset.
    let oldest_ok = site
        .client
        .get(site.url("changes?since=20"))
        .send()
        .await
        .unwrap();
    assert_eq!(oldest_ok.status(), 200);
    assert_eq!(
        site.client
            .get(site.url("changes?since=999"))
            .send()
            .await
            .unwrap()
            .status(),
        410
    );
}

struct DeltaSite {
    v1: Vec<u8>,
    v3: Vec<u8>,
    v3_etag: EntityTag,
}

async fn delta_site() -> (Site, DeltaSite) {
    let site = Site::start(
        &[
            ("docs/manual.html", &page(1)),
            ("logo.png", "\u{89}PNG...."),
        ],
        Options::default(),
    )
    .await;
    site.write("docs/manual.html", &page(2));
    site.wait_head(1).await;
    site.write("docs/manual.html", &page(3));
    site.wait_head(2).await;
    let held = DeltaSite {
        v1: page(1).into_bytes(),
        v3: page(3).into_bytes(),
        v3_etag: Sha256Digest::of(page(3).as_bytes()).etag(),
    };
    (site, held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dcz_delta_from_v1_to_v3_decodes_with_the_protocol_crate_and_stock_zstd() {
    let (site, held) = delta_site().await;
    let v1_digest = Sha256Digest::of(&held.v1);
    let r = site
        .client
        .get(site.url("delta/docs/manual.html"))
        .header("accept-encoding", "dcz, gzip")
        .header("available-dictionary", v1_digest.to_structured_field())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-encoding"], "dcz");
    assert_eq!(r.headers()["etag"], held.v3_etag.to_string());
    assert!(
        r.headers()["vary"]
            .to_str()
            .unwrap()
            .contains("Available-Dictionary")
    );
    let delta = r.bytes().await.unwrap().to_vec();
    assert!(
        delta.len() < 200,
        "a one-line change costs {} bytes",
        delta.len()
    );
    assert_eq!(
        dcz::decode_verified(&held.v1, &delta, &held.v3_etag, 1 << 20).unwrap(),
        held.v3
    );

    if let Some(zstd) = tool("zstd") {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("v1"), &held.v1).unwrap();
        std::fs::write(dir.path().join("d.dcz"), &delta).unwrap();
        run_ok(
            Command::new(zstd)
                .args(["-q", "-d", "-f", "--patch-from"])
                .arg(dir.path().join("v1"))
                .arg(dir.path().join("d.dcz"))
                .arg("-o")
                .arg(dir.path().join("v3")),
        );
        assert_eq!(std::fs::read(dir.path().join("v3")).unwrap(), held.v3);
    }
    // Naming the held version by entity tag works the same.
    let r = site
        .client
        .get(site.url("delta/docs/manual.html"))
        .header("accept-encoding", "dcz")
        .header("if-none-match", v1_digest.etag().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-encoding"], "dcz");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unified_diff_from_v1_to_v3_applies_with_gnu_patch() {
    let (site, held) = delta_site().await;
    let v1_etag = Sha256Digest::of(&held.v1).etag();
    let r = site
        .client
        .get(site.url("delta/docs/manual.html"))
        .header("a-im", "unified")
        .header("if-none-match", v1_etag.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 226);
    assert_eq!(r.headers()["im"], "unified");
    assert_eq!(r.headers()["delta-base"], v1_etag.to_string());
    assert_eq!(r.headers()["etag"], held.v3_etag.to_string());
    let diff = r.text().await.unwrap();
    assert_eq!(
        unified::apply_verified(&held.v1, &diff, &held.v3_etag).unwrap(),
        held.v3
    );
    let Some(patch) = tool("patch") else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("manual.html"), &held.v1).unwrap();
    std::fs::write(dir.path().join("d.diff"), &diff).unwrap();
    run_ok(
        Command::new(patch)
            .args(["--quiet", "--binary", "-o"])
            .arg(dir.path().join("v3"))
            .arg(dir.path().join("manual.html"))
            .arg(dir.path().join("d.diff")),
    );
    assert_eq!(std::fs::read(dir.path().join("v3")).unwrap(), held.v3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_clients_get_304_and_unknown_bases_the_whole_body() {
    let (site, held) = delta_site().await;
    let r = site
        .client
        .get(site.url("delta/docs/manual.html"))
        .header("if-none-match", held.v3_etag.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    // A version the agent never kept: the whole body, zstd as accepted.
    let stranger = Sha256Digest::of(b"some other version");
    let r = http_get(
        site.addr,
        "/.well-known/webcoop/delta/docs/manual.html",
        &[
            ("Accept-Encoding", "zstd, dcz"),
            ("Available-Dictionary", &stranger.to_structured_field()),
        ],
    )
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("zstd"));
    assert_eq!(zstd_decompress_bounded(&r.body, 1 << 20).unwrap(), held.v3);
    // Nothing accepted: identity.
    let r = http_get(
        site.addr,
        "/.well-known/webcoop/delta/docs/manual.html",
        &[],
    )
    .unwrap();
    assert_eq!((r.status, r.body.clone()), (200, held.v3.clone()));
    // A binary file is served whole (it has no kept versions).
    let r = http_get(site.addr, "/.well-known/webcoop/delta/logo.png", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("image/png"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traversal_and_unpublished_paths_are_404() {
    let site = Site::start(
        &[
            ("index.html", "home"),
            ("docs/a.html", "a"),
            (".htpasswd", "admin:secret"),
        ],
        Options::default(),
    )
    .await;
    std::os::unix::fs::symlink("/etc/passwd", site.docroot.join("passwd.html")).unwrap();
    site.write("index.html~", "backup");
    for path in [
        "/.well-known/webcoop/delta/../../../../etc/passwd",
        "/.well-known/webcoop/delta/docs/../../../etc/passwd",
        "/.well-known/webcoop/delta/%2e%2e/%2e%2e/etc/passwd",
        "/.well-known/webcoop/delta/docs%2f..%2f..%2fetc%2fpasswd",
        "/.well-known/webcoop/delta/..%5c..%5cetc%5cpasswd",
        "/.well-known/webcoop/delta/.htpasswd",
        "/.well-known/webcoop/delta/passwd.html",
        "/.well-known/webcoop/delta/index.html~",
        "/.well-known/webcoop/delta//etc/passwd",
        "/.well-known/webcoop/delta/docs/./a.html",
        "/.well-known/webcoop/delta/missing.html",
        "/.well-known/webcoop/delta/index.html%00.txt",
    ] {
        let r = http_get(site.addr, path, &[]).unwrap();
        assert_eq!(r.status, 404, "{path}");
        let body = String::from_utf8_lossy(&r.body);
        assert!(
            !body.contains("root:") && !body.contains("secret"),
            "{path} leaked {body}"
        );
    }
    assert_eq!(
        http_get(site.addr, "/.well-known/webcoop/delta/docs/a.html", &[])
            .unwrap()
            .status,
        200
    );
    assert_eq!(http_get(site.addr, "/etc/passwd", &[]).unwrap().status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_requests_for_the_same_change_cost_one_encoding() {
    let (site, held) = delta_site().await;
    let before = site.metric("webcoop_encodings_total").await;
    let dictionary = Sha256Digest::of(&held.v1).to_structured_field();
    let mut tasks = Vec::new();
    for _ in 0..1000 {
        let (client, url, dictionary) = (
            site.client.clone(),
            site.url("delta/docs/manual.html"),
            dictionary.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let r = client
                .get(url)
                .header("accept-encoding", "dcz")
                .header("available-dictionary", dictionary)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.bytes().await.unwrap())
        }));
    }
    let mut bodies = BTreeSet::new();
    for t in tasks {
        let (status, body) = t.await.unwrap();
        assert_eq!(status, 200);
        bodies.insert(body.to_vec());
    }
    assert_eq!(bodies.len(), 1, "every client got the same delta");
    assert_eq!(site.metric("webcoop_encodings_total").await - before, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_documents_point_at_the_service() {
    let site = Site::start(&[("docs/a.html", "a")], Options::default()).await;
    let rdf = std::fs::read(site.docroot.join("robots.rdf")).unwrap();
    let listing = webcoop_protocol::robots_rdf::parse(&rdf, &Default::default()).unwrap();
    assert_eq!(
        listing.channel.changes.as_ref().map(|u| u.as_str()),
        Some("https://site.example/.well-known/webcoop/changes")
    );
    assert_eq!(
        listing.channel.hub.as_ref().map(|u| u.as_str()),
        Some("https://site.example/.well-known/webcoop/hub")
    );
    assert_eq!(
        listing.items[0].delta.as_ref().map(|u| u.as_str()),
        Some("https://site.example/.well-known/webcoop/delta/docs/a.html")
    );
    let feed = std::fs::read(site.docroot.join(".well-known/webcoop/changes.atom")).unwrap();
    let feed = changes_feed::parse(&feed, &FeedLimits::default()).unwrap();
    assert_eq!(
        feed.hub.as_ref().map(|u| u.as_str()),
        Some("https://site.example/.well-known/webcoop/hub")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_urls_are_posted_to_indexnow_in_batches() {
    use axum::routing::post;
    use std::sync::{Arc, Mutex};
    let received: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/indexnow",
        post(move |body: bytes::Bytes| {
            let sink = sink.clone();
            async move {
                sink.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                axum::http::StatusCode::ACCEPTED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}/indexnow", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let key = "0123456789abcdef0123";
    let options = Options {
        indexnow: Some((endpoint, key.to_string())),
        ..Options::default()
    };
    let site = Site::start(&[("index.html", "home")], options).await;
    // The key file is published for the search engine to check, and never listed.
    assert_eq!(
        std::fs::read_to_string(site.docroot.join(format!("{key}.txt"))).unwrap(),
        key
    );
    for i in 0..5 {
        site.write(&format!("p{i}.html"), "x");
    }
    std::fs::remove_file(site.docroot.join("index.html")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let urls = loop {
        let urls: BTreeSet<String> = received
            .lock()
            .unwrap()
            .iter()
            .flat_map(|b| {
                b["urlList"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| u.as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        if urls.len() >= 6 {
            break urls;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "IndexNow got {urls:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let expected: BTreeSet<String> = [
        "index.html",
        "p0.html",
        "p1.html",
        "p2.html",
        "p3.html",
        "p4.html",
    ]
    .iter()
    .map(|p| format!("https://site.example/{p}"))
    .collect();
    assert_eq!(urls, expected);
    // The console lists each request with the endpoint's answer.
    let pings = site.activity().pings();
    assert!(!pings.is_empty());
    assert!(
        pings
            .iter()
            .all(|p| p.status == Some(202) && p.outcome == "accepted"),
        "{pings:?}"
    );
    assert_eq!(
        pings.iter().map(|p| p.urls).sum::<usize>(),
        received
            .lock()
            .unwrap()
            .iter()
            .map(|b| b["urlList"].as_array().unwrap().len())
            .sum::<usize>()
    );
    let first = received.lock().unwrap()[0].clone();
    assert_eq!(first["host"], "site.example");
    assert_eq!(first["key"], key);
    assert_eq!(
        first["keyLocation"],
        format!("https://site.example/{key}.txt")
    );
    let rdf = std::fs::read_to_string(site.docroot.join("robots.rdf")).unwrap();
    assert!(
        !rdf.contains(key),
        "the key file is not a public resource of the listing"
    );
}

/// A page of text `kib` KiB long, different for each `seed`.
fn filler(seed: usize, kib: usize) -> String {
    let mut s = String::with_capacity(kib << 10);
    let mut i = 0usize;
    while s.len() < kib << 10 {
        s.push_str(&format!(
            "<p>{seed}:{i} {}</p>\n",
            i.wrapping_mul(2_654_435_761) ^ seed
        ));
        i += 1;
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_carries_the_changed_pages_in_one_compressed_response_paged_by_size() {
    use webcoop_protocol::batch;
    let site = Site::start(&[("index.html", "home")], Options::default()).await;
    let start = site.head().await;
    // Ten pages of 1.5 MiB (the batch's budget is 8 MiB of content), one page changed twice,
    // one created and deleted.
    for i in 0..10 {
        site.write(&format!("big{i}.html"), &filler(i, 1536));
    }
    site.write("twice.html", "first");
    site.wait_head(start + 11).await;
    site.write("twice.html", "second");
    site.write("gone.html", "soon gone");
    site.wait_head(start + 13).await;
    std::fs::remove_file(site.docroot.join("gone.html")).unwrap();
    site.wait_head(start + 14).await;

    let mut url = site.url(&format!("changes?since={start}&bodies=1"));
    let mut changes = Vec::new();
    let mut pages: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    let mut responses = 0;
    let mut wire = 0usize;
    loop {
        let r = site
            .client
            .get(&url)
            .header("accept-encoding", "zstd")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], batch::MEDIA_TYPE);
        let etag = r.headers()["etag"].to_str().unwrap().to_string();
        let raw = http_get(
            site.addr,
            &format!(
                "/.well-known/webcoop/{}",
                url.split("/.well-known/webcoop/").nth(1).unwrap()
            ),
            &[("Accept-Encoding", "zstd")],
        )
        .unwrap();
        assert_eq!(raw.header("content-encoding"), Some("zstd"));
        wire += raw.body.len();
        let b = batch::parse(&r.bytes().await.unwrap(), 16 << 20).unwrap();
        responses += 1;
        changes.extend(
            b.feed
                .entries
                .iter()
                .map(|e| (e.seq, e.kind, e.url.path().to_string())),
        );
        for e in b.entries {
            assert!(
                pages.insert(e.url.clone(), e.body).is_none(),
                "{} twice",
                e.url
            );
        }
        // The same page again, with its tag: 304.
        let again = site
            .client
            .get(&url)
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304);
        match b.feed.next {
            Some(next) => {
                assert!(next.query().unwrap().contains("bodies=1"), "{next}");
                url = site.url(&format!("changes?{}", next.query().unwrap()));
            }
            None => break,
        }
    }
    assert_eq!(
        responses, 2,
        "8 MiB of content in the first, the rest in the second"
    );
    assert_eq!(
        changes.iter().map(|c| c.0).collect::<Vec<_>>(),
        (start + 1..=start + 14).collect::<Vec<_>>()
    );
    // Every page the site publishes now, with its bytes; the twice-changed one at its
    // last version, the deleted one not at all.
    for i in 0..10 {
        assert_eq!(
            pages[&format!("{}big{i}.html", common::BASE)],
            filler(i, 1536).into_bytes()
        );
    }
    assert_eq!(pages[&format!("{}twice.html", common::BASE)], b"second");
    assert_eq!(pages.len(), 11);
    // 15 MiB of distinct text crossed the wire compressed.
    assert!(wire < 8 << 20, "{wire} bytes on the wire");

    for (query, param) in [("bodies=yes", "bodies"), ("bodies=1&limit=0", "limit")] {
        let r = site
            .client
            .get(site.url(&format!("changes?since=0&{query}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{query}");
        assert!(r.text().await.unwrap().starts_with(param), "{query}");
    }
}

//! What a site says is checked like what it serves (issue 45): a snapshot whose pages are not
//! the live ones loses the site's trust and leaves no false copy, at every politeness; a URL
//! a listing, snapshot or batch states goes only where a link could (robots.txt, no
//! credentials, no fragments); within a batch the newest `wc:seq` wins. Each hostile site has
//! an honest twin whose cooperation is used, so that no check passes by ignoring the feature.

use super::listing_site::{
    SNAPSHOT_PATH, coop_of, copies, crawl, site_claiming, snapshot_file, with_hosts,
};
use super::support::{Canned, HostileWeb};
use chrono::{TimeZone, Utc};
use url::Url;
use webcoop_protocol::changes_feed::{ChangeEntry, ChangeKind, ChangesFeed};
use webcoop_protocol::snapshot::Entry;
use webcoop_protocol::validator::Sha256Digest;

const ALLOW_ALL: &str = "User-agent: *\nAllow: /\n";
const PRIVATE: &str = "User-agent: *\nDisallow: /private/\n";

fn etag(body: &str) -> String {
    Sha256Digest::of(body.as_bytes()).etag().to_string()
}

/// `n` pages (path, body), each body marked with `how`.
fn pages(n: usize, how: &str) -> Vec<(String, String)> {
    (0..n)
        .map(|i| (format!("/p{i}.html"), format!("<p>page {i}, {how}</p>")))
        .collect()
}

/// A snapshot of `claimed` (URL, body), served where the listing says.
fn serve_snapshot(web: &HostileWeb, claimed: &[(String, String)]) {
    let site = web.origin("site.test");
    let records: Vec<(&str, &[u8])> = claimed
        .iter()
        .map(|(u, b)| (u.as_str(), b.as_bytes()))
        .collect();
    web.set(
        "site.test",
        SNAPSHOT_PATH,
        Canned::ok("application/zstd", snapshot_file(&site, &records, b"")),
    );
}

/// How many times `path` of site.test was asked.
fn asked(web: &HostileWeb, path: &str) -> usize {
    let line = format!("site.test {path}");
    web.log().iter().filter(|l| **l == line).count()
}

/// A first visit of site.test at a politeness (`delays`: the arguments that set it).
fn first_visit(web: &HostileWeb, delays: &[&str]) -> (tempfile::TempDir, String) {
    let seed = format!("{}/", web.origin("site.test"));
    let mut words = vec!["--seeds", seed.as_str()];
    words.extend_from_slice(delays);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let o = crawl(&out, &with_hosts(web, &words, &["site.test"]));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    (dir, stderr)
}

#[test]
fn a_lying_snapshot_loses_the_sites_trust_and_leaves_no_false_copy_at_every_politeness() {
    let politeness: [(&str, &[&str]); 2] = [
        ("off", &["--delay-min", "0", "--delay-factor", "0"]),
        // The default: a second between requests at least.
        ("default", &[]),
    ];
    for (name, delays) in politeness {
        for lying in [true, false] {
            let web = HostileWeb::start();
            let site = web.origin("site.test");
            let live = pages(12, "live");
            // A cloaking site: its listing and snapshot describe pages no visitor is served,
            // and it answers every conditional request "not modified".
            let claimed: Vec<(String, String)> = if lying {
                pages(12, "cloaked")
            } else {
                live.clone()
            }
            .into_iter()
            .map(|(p, b)| (format!("{site}{p}"), b))
            .collect();
            site_claiming(&web, ALLOW_ALL, &live, &claimed);
            serve_snapshot(&web, &claimed);
            web.answer_unchanged("site.test");
            let (dir, stderr) = first_visit(&web, delays);
            let out = dir.path().join("crawl");
            let held = copies(&out);
            // Every copy is the live page, whatever the snapshot said.
            for (path, body) in &live {
                let line = format!("{} {site}{path}", etag(body));
                assert!(
                    held.contains(&line),
                    "{name}, lying {lying}: {line} not in\n{held}\n{stderr}"
                );
            }
            assert!(!held.contains(&etag(&claimed[0].1)) || !lying, "{held}");
            let coop = coop_of(&out, &site);
            let fetched: usize = live.iter().map(|(p, _)| asked(&web, p)).sum();
            if lying {
                assert_eq!(coop["believed"], false, "{name}: {coop}");
                assert!(coop["trust_score"].as_f64().unwrap() < 0.5, "{coop}");
                assert!(coop["stats"]["refuted"].as_u64().unwrap() >= 1, "{coop}");
                assert!(fetched >= live.len(), "every page fetched live: {fetched}");
            } else {
                // The honest twin: the snapshot is used, a few pages checked, the site believed.
                assert_eq!(coop["believed"], true, "{name}: {coop}");
                assert_eq!(coop["stats"]["from_snapshot"], live.len(), "{coop}");
                let checks = coop["stats"]["checks"].as_u64().unwrap() as usize;
                assert!((3..=6).contains(&checks), "{coop}");
                assert_eq!(fetched, checks, "only the checks were fetched: {coop}");
            }
        }
    }
}

#[test]
fn a_snapshot_goes_only_where_a_link_could() {
    for honest in [false, true] {
        let web = HostileWeb::start();
        let site = web.origin("site.test");
        let port = web.addr.port();
        let live: Vec<(String, String)> = [
            "/a.html",
            "/b.html",
            "/private/secret.html",
            "/cred.html",
            "/frag.html",
        ]
        .iter()
        .map(|p| (p.to_string(), format!("<p>{p}</p>")))
        .collect();
        let body = |p: &str| format!("<p>{p}</p>");
        let mut claimed = vec![
            (format!("{site}/a.html"), body("/a.html")),
            (format!("{site}/b.html"), body("/b.html")),
        ];
        if !honest {
            claimed.extend([
                (
                    format!("{site}/private/secret.html"),
                    body("/private/secret.html"),
                ),
                (
                    format!("http://user:hunter2@site.test:{port}/cred.html"),
                    body("/cred.html"),
                ),
                (format!("{site}/frag.html#one"), body("/frag.html")),
                (format!("{site}/frag.html#two"), body("/frag.html")),
            ]);
        }
        site_claiming(&web, PRIVATE, &live, &claimed);
        serve_snapshot(&web, &claimed);
        let (dir, stderr) = first_visit(&web, &["--delay-min", "0", "--delay-factor", "0"]);
        let out = dir.path().join("crawl");
        let held = copies(&out);
        let log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
        // The snapshot was used for what a link could reach (the honest twin's proof).
        let coop = coop_of(&out, &site);
        assert!(
            coop["stats"]["from_snapshot"].as_u64().unwrap() >= 2,
            "{coop}\n{stderr}"
        );
        for p in ["/a.html", "/b.html"] {
            assert!(held.contains(&format!("{site}{p}")), "{p}: {held}");
        }
        // What robots.txt disallows is neither fetched nor kept, however it arrived.
        assert_eq!(asked(&web, "/private/secret.html"), 0, "{:?}", web.log());
        assert!(!held.contains("secret"), "{held}");
        // Credentials refuse the URL: never sent, never written.
        assert!(
            !web.log().iter().any(|l| l.contains("with credentials")),
            "{:?}",
            web.log()
        );
        for text in [&held, &log] {
            assert!(!text.contains("hunter2"), "{text}");
        }
        // Fragments name one page: held once, without its fragment.
        assert!(!held.contains('#'), "{held}");
        assert!(held.matches("/frag.html").count() <= 1, "{held}");
        assert!(asked(&web, "/frag.html") <= 1, "{:?}", web.log());
        if !honest {
            let refused = coop["stats"]["refused_urls"].as_u64().unwrap_or(0);
            assert!(refused >= 2, "the refusals are counted: {coop}");
        }
    }
}

/// A page of the changes feed with `entries`, and the content of `pages` (URL, body), as a
/// batch.
/// The site's changes feed with `entries`, its head the newest of them.
fn feed_of(site: &str, entries: Vec<ChangeEntry>) -> ChangesFeed {
    let changes = format!("{site}/.well-known/webcoop/changes");
    ChangesFeed {
        id: changes.clone(),
        title: "changes".into(),
        updated: Utc::now(),
        self_link: Url::parse(&changes).unwrap(),
        hub: None,
        next: None,
        head_seq: entries.iter().map(|e| e.seq).max(),
        resync: None,
        content_usage: None,
        entries,
    }
}

/// A crawl of `seed` kept fresh for `run_for` seconds, using changes only (no deltas), its
/// metadata polled every 0.2-0.5 s, politeness off; `extra` after.
fn kept_fresh<'a>(seed: &'a str, run_for: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut words = vec![
        "--seeds",
        seed,
        "--delay-min",
        "0",
        "--delay-factor",
        "0",
        "--coop",
        "meta",
        "--coop-deltas",
        "false",
        "--keep-fresh",
        "--coop-poll-min",
        "0.2",
        "--coop-poll-max",
        "0.5",
        "--run-for",
        run_for,
    ];
    words.extend_from_slice(extra);
    words
}

fn batch(site: &str, entries: Vec<ChangeEntry>, pages: &[(String, String)]) -> Canned {
    let changes = format!("{site}/.well-known/webcoop/changes");
    let feed = feed_of(site, entries);
    let atom = webcoop_protocol::changes_feed::write(&feed);
    let content: Vec<Entry> = pages
        .iter()
        .map(|(url, body)| Entry {
            url: url.clone(),
            content_type: "text/html".into(),
            sha256: Sha256Digest::of(body.as_bytes()),
            body: body.as_bytes().to_vec(),
        })
        .collect();
    let mut n = 0u8;
    let bytes =
        webcoop_protocol::batch::write(&changes, atom.as_bytes(), &content, Utc::now(), || {
            n += 1;
            webcoop_protocol::warc::record::record_id([n; 16])
        });
    Canned::ok(webcoop_protocol::batch::MEDIA_TYPE, bytes)
}

fn change(seq: u64, url: &str, body: &str) -> ChangeEntry {
    let time = Utc.timestamp_opt(1_790_000_000 + seq as i64, 0).unwrap();
    let mut e = ChangeEntry::new(seq, ChangeKind::Modified, Url::parse(url).unwrap(), time);
    e.etag = etag(body).parse().ok();
    e.size = Some(body.len() as u64);
    e
}

#[test]
fn within_a_batch_the_newest_seq_wins_and_stated_urls_go_only_where_links_may() {
    let web = HostileWeb::start();
    let site = web.origin("site.test");
    let port = web.addr.port();
    let first: Vec<(String, String)> = ["/a.html", "/b.html", "/frag.html"]
        .iter()
        .map(|p| (p.to_string(), format!("<p>{p}, first</p>")))
        .collect();
    let claimed: Vec<(String, String)> = first
        .iter()
        .map(|(p, b)| (format!("{site}{p}"), b.clone()))
        .collect();
    site_claiming(&web, PRIVATE, &first, &claimed);
    serve_snapshot(&web, &claimed);
    // After the first visit, the site changes a and b; its batch lists a's newer version
    // first and an older one last, and states URLs no link could reach.
    let (a1, a2, b2) = (
        "<p>/a.html, second</p>",
        "<p>/a.html, third</p>",
        "<p>/b.html, second</p>",
    );
    let cred = format!("http://user:hunter2@site.test:{port}/cred.html");
    let entries = vec![
        change(3, &format!("{site}/a.html"), a2),
        change(4, &format!("{site}/b.html"), b2),
        change(5, &format!("{site}/private/secret.html"), "<p>secret</p>"),
        change(6, &cred, "<p>cred</p>"),
        change(7, &format!("{site}/frag.html#one"), "<p>frag, second</p>"),
        change(8, &format!("{site}/frag.html#two"), "<p>frag, second</p>"),
        change(2, &format!("{site}/a.html"), a1),
    ];
    let content = vec![
        (format!("{site}/a.html"), a2.to_string()),
        (format!("{site}/b.html"), b2.to_string()),
        (
            format!("{site}/private/secret.html"),
            "<p>secret</p>".into(),
        ),
        (cred.clone(), "<p>cred</p>".into()),
        (
            format!("{site}/frag.html#one"),
            "<p>frag, second</p>".into(),
        ),
        (format!("{site}/a.html"), a1.to_string()),
    ];
    let seed = format!("{site}/");
    // No checks: a check of the snapshot's pages made after the site changed (a loaded
    // machine) would hold a question open for the feed to explain (`coop::questions`), and
    // this test counts requests; checks have their own tests.
    let words = kept_fresh(&seed, "8", &["--coop-check-share", "0"]);
    let args = with_hosts(&web, &words, &["site.test"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    // The site changes once the first visit has its pages.
    let changed = std::thread::scope(|s| {
        let crawl = s.spawn(|| crawl(&out, &args));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(6);
        while asked(&web, SNAPSHOT_PATH) == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        web.set("site.test", "/a.html", Canned::ok("text/html", a2));
        web.set("site.test", "/b.html", Canned::ok("text/html", b2));
        web.set(
            "site.test",
            "/.well-known/webcoop/changes",
            batch(&site, entries, &content),
        );
        crawl.join().unwrap()
    });
    let stderr = String::from_utf8_lossy(&changed.stderr);
    assert!(changed.status.success(), "{stderr}");
    let held = copies(&out);
    let coop = coop_of(&out, &site);
    // The honest part of the batch was used.
    assert!(
        coop["stats"]["from_batch"].as_u64().unwrap() >= 1,
        "{coop}\n{stderr}\n{:?}",
        web.log()
    );
    assert!(
        held.contains(&format!("{} {site}/b.html", etag(b2))),
        "{held}"
    );
    // The newest version of a is held, not the one the document ends with.
    assert!(
        held.contains(&format!("{} {site}/a.html", etag(a2))),
        "{held}\n{coop}"
    );
    // Nothing reached what robots.txt disallows, carried credentials, or kept a fragment.
    assert_eq!(asked(&web, "/private/secret.html"), 0, "{:?}", web.log());
    assert!(!held.contains("secret") && !held.contains('#'), "{held}");
    assert!(held.matches("/frag.html").count() == 1, "{held}");
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
    assert!(
        !held.contains("hunter2") && !log.contains("hunter2"),
        "{log}"
    );
    assert!(
        !web.log().iter().any(|l| l.contains("with credentials")),
        "{:?}",
        web.log()
    );
}

#[test]
fn a_record_above_the_page_limit_is_fetched_alone_and_the_rest_of_the_snapshot_is_used() {
    let web = HostileWeb::start();
    let site = web.origin("site.test");
    // Fifteen small pages and one of 3 MB, above the crawl's 2 MB page limit: the large one
    // comes first in the snapshot, as Debian's Rust docs put theirs early.
    let mut live = pages(15, "small");
    live.insert(
        0,
        (
            "/big.html".to_string(),
            format!("<p>{}</p>", "big ".repeat(750_000)),
        ),
    );
    let claimed: Vec<(String, String)> = live
        .iter()
        .map(|(p, b)| (format!("{site}{p}"), b.clone()))
        .collect();
    site_claiming(&web, ALLOW_ALL, &live, &claimed);
    serve_snapshot(&web, &claimed);
    let (dir, stderr) = first_visit(
        &web,
        &[
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
            "--max-body",
            "2097152",
        ],
    );
    let out = dir.path().join("crawl");
    let coop = coop_of(&out, &site);
    assert_eq!(
        coop["stats"]["from_snapshot"], 15,
        "the rest of the snapshot is used: {coop}\n{stderr}"
    );
    // The large page is fetched alone, under the same limit (cut there, as any page is).
    assert_eq!(asked(&web, "/big.html"), 1, "{:?}", web.log());
    let fetched: usize = live.iter().skip(1).map(|(p, _)| asked(&web, p)).sum();
    assert!(
        fetched <= 6,
        "only the checks of the small pages: {fetched}"
    );
    let held = copies(&out);
    for (path, body) in live.iter().skip(1) {
        assert!(
            held.contains(&format!("{} {site}{path}", etag(body))),
            "{held}"
        );
    }
}

#[test]
fn a_page_edited_after_its_snapshot_is_explained_by_the_feed_and_an_unannounced_one_refutes() {
    for announced in [true, false] {
        let web = HostileWeb::start();
        let site = web.origin("site.test");
        // The snapshot is older than the live pages: every page was edited since.
        let before: Vec<(String, String)> = pages(12, "before")
            .into_iter()
            .map(|(p, b)| (format!("{site}{p}"), b))
            .collect();
        let live = pages(12, "edited");
        site_claiming(&web, ALLOW_ALL, &live, &before);
        serve_snapshot(&web, &before);
        // The honest site's feed announces each edit after the listing's change 1; the other's
        // feed says nothing happened.
        let entries: Vec<ChangeEntry> = match announced {
            true => live
                .iter()
                .enumerate()
                .map(|(i, (p, b))| change(i as u64 + 2, &format!("{site}{p}"), b))
                .collect(),
            false => Vec::new(),
        };
        let mut feed = feed_of(&site, entries);
        feed.head_seq = Some(feed.entries.len() as u64 + 1);
        web.set(
            "site.test",
            "/.well-known/webcoop/changes",
            Canned::ok(
                "application/atom+xml",
                webcoop_protocol::changes_feed::write(&feed),
            ),
        );
        let seed = format!("{site}/");
        let words = kept_fresh(&seed, "10", &[]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("crawl");
        let o = crawl(&out, &with_hosts(&web, &words, &["site.test"]));
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        let coop = coop_of(&out, &site);
        let checks = coop["stats"]["checks"].as_u64().unwrap_or(0);
        assert!(checks >= 3, "the snapshot was checked: {coop}");
        if announced {
            // Each page checked differed, and the feed said why: still believed.
            assert_eq!(coop["believed"], true, "{coop}\n{stderr}");
            assert_eq!(coop["stats"]["refuted"], 0, "{coop}");
        } else {
            assert!(
                stderr.contains("its changes feed is read again before this counts against it"),
                "{stderr}"
            );
            assert_eq!(coop["believed"], false, "{coop}\n{stderr}");
            assert_eq!(coop["stats"]["refuted"], 1, "{coop}");
        }
        // Every copy is the live page either way.
        let held = copies(&out);
        for (path, body) in &live {
            let line = format!("{} {site}{path}", etag(body));
            let log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();
            assert!(
                held.contains(&line),
                "{line} not in\n{held}\n{log}\n{stderr}"
            );
        }
    }
}

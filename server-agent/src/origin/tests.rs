//! Origin mode through its interface, against a server of the test's own over a directory the
//! test edits: what one check of a page records (the page checks), what a page that left takes
//! with it (the withdrawals), and what the sitemaps, the rules, pings and the access log
//! bring in (the intake).

use super::OriginAgent;
use crate::config::{AgentOptions, Config};
use chrono::{TimeZone, Utc};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::clock::ManualClock;

/// Paths that answer different text at every request.
type Volatile = Arc<Mutex<HashSet<String>>>;

/// Serves `dir` on loopback, one request a connection, without validators; a path in the
/// returned set answers text that differs at every request. Its address, and the set.
fn serve(dir: PathBuf) -> (String, Volatile) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let volatile: Volatile = Arc::default();
    let changing = volatile.clone();
    let answered = AtomicU64::new(0);
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).is_ok_and(|n| n == 1) {
                head.push(b[0]);
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let path = match target.trim_start_matches('/') {
                "" => "index.html".to_string(),
                p => p.to_string(),
            };
            let n = answered.fetch_add(1, Ordering::Relaxed);
            let body = if changing.lock().unwrap().contains(&path) {
                // Mostly new text at every request: nothing to learn.
                let words: String = (0..40)
                    .map(|i| format!("{:x} ", (n + 1) * 2_654_435_761 + i))
                    .collect();
                Some(format!("<p>{words}</p>").into_bytes())
            } else {
                std::fs::read(dir.join(&path)).ok()
            };
            let answer = match body {
                Some(body) => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(&body);
                    r
                }
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = s.write_all(&answer);
        }
    });
    (url, volatile)
}

/// A site of three pages a sitemap names, served from a directory; the agent reading it.
struct World {
    _tmp: tempfile::TempDir,
    site: PathBuf,
    volatile: Volatile,
    clock: Arc<ManualClock>,
    agent: OriginAgent,
}

fn write(site: &Path, path: &str, body: &str) {
    std::fs::write(site.join(path), body).unwrap();
}

fn sitemap(site: &Path, paths: &[&str]) {
    let urls: String = paths
        .iter()
        .map(|p| format!("<url><loc>http://h.test/{p}</loc></url>"))
        .collect();
    write(
        site,
        "pages.xml",
        &format!(
            "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{urls}</urlset>"
        ),
    );
}

/// robots.txt with `rules`, naming the sitemap (the agent's own `sitemap.xml` is not read as
/// the site's).
fn robots_txt(site: &Path, rules: &str) {
    write(
        site,
        "robots.txt",
        &format!("User-agent: *\n{rules}\nSitemap: http://h.test/pages.xml\n"),
    );
}

fn world(more: impl FnOnce(&mut AgentOptions)) -> World {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();
    write(
        &site,
        "index.html",
        "<title>Home</title><a href=\"a.html\">a</a>",
    );
    write(
        &site,
        "a.html",
        "<title>Page A</title><p>It links to <a href=\"b.html\">b</a>.</p>",
    );
    write(&site, "b.html", "<title>The page called B</title><p>b</p>");
    sitemap(&site, &["", "a.html", "b.html"]);
    robots_txt(&site, "");
    let (server, volatile) = serve(site.clone());
    let mut o = AgentOptions {
        origin: Some(server),
        base_url: Some("http://h.test/".into()),
        state: Some(tmp.path().join("state")),
        out: Some(tmp.path().join("out")),
        origin_rate: Some(1000.0),
        ..AgentOptions::default()
    };
    std::fs::create_dir(tmp.path().join("out")).unwrap();
    more(&mut o);
    let config = Config::from_options(o).unwrap();
    let clock = Arc::new(ManualClock::new(
        Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
    ));
    let agent = OriginAgent::open(config, clock.clone()).unwrap();
    World {
        _tmp: tmp,
        site,
        volatile,
        clock,
        agent,
    }
}

impl World {
    /// The changes recorded after the baseline, as (kind, path).
    fn changes(&self) -> Vec<(ChangeKind, String)> {
        self.agent
            .core
            .store
            .recent_changes(100)
            .unwrap()
            .into_iter()
            .map(|c| (c.kind, c.path))
            .collect()
    }

    fn published(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .agent
            .core
            .inventory
            .iter()
            .map(|(p, _)| p.to_string())
            .collect();
        out.sort();
        out
    }

    /// Checks `path` once, a second later, and saves what it showed.
    fn check(&mut self, path: &str) {
        self.clock.advance(Duration::from_secs(1));
        self.agent.check(path).unwrap();
        self.agent.flush(false).unwrap();
    }
}

#[test]
fn the_baseline_publishes_what_the_sitemap_names_and_announces_nothing() {
    let mut w = world(|_| {});
    let stats = w.agent.run_once().unwrap();
    assert_eq!(w.published(), ["", "a.html", "b.html"]);
    assert!(w.agent.core.baseline_done);
    assert_eq!(stats.changes, 0);
    assert!(w.changes().is_empty());
    // The documents are written for the pages published.
    let out = w.agent.core.config.out.clone();
    let rdf = std::fs::read_to_string(out.join("robots.rdf")).unwrap();
    assert!(rdf.contains("http://h.test/a.html"), "{rdf}");
}

#[test]
fn a_check_records_unchanged_edited_and_gone_pages_as_such() {
    let mut w = world(|_| {});
    w.agent.run_once().unwrap();
    let before = w.agent.stats();

    // Unchanged: the same digest; nothing announced.
    w.check("a.html");
    let after = w.agent.stats();
    assert_eq!(
        (after.not_modified + after.unchanged) - (before.not_modified + before.unchanged),
        1
    );
    assert!(w.changes().is_empty());

    // Edited: asked whole, its new version kept and its change announced with its digest.
    write(
        &w.site,
        "b.html",
        "<title>The page called B</title><p>b, edited</p>",
    );
    w.agent.pages.get_mut("b.html").unwrap().whole = true;
    w.check("b.html");
    assert_eq!(w.changes(), [(ChangeKind::Modified, "b.html".to_string())]);
    let entry = w.agent.core.inventory.get("b.html").unwrap().clone();
    let kept = w.agent.core.store.version("b.html", &entry.sha256).unwrap();
    assert_eq!(
        kept.as_deref(),
        Some(&b"<title>The page called B</title><p>b, edited</p>"[..])
    );

    // Gone: deleted from what is published, said so at the page, and announced.
    std::fs::remove_file(w.site.join("b.html")).unwrap();
    w.check("b.html");
    assert_eq!(w.published(), ["", "a.html"]);
    assert_eq!(
        w.agent.pages["b.html"].refused.as_deref(),
        Some("gone (404 or 410)")
    );
    assert_eq!(w.changes().last().unwrap().0, ChangeKind::Deleted);
}

#[test]
fn a_page_that_left_takes_its_versions_and_the_snapshots_and_what_showed_it_is_checked() {
    let mut w = world(|_| {});
    w.agent.run_once().unwrap();
    let b = w.agent.core.inventory.get("b.html").unwrap().sha256;
    assert!(w.agent.core.store.version("b.html", &b).unwrap().is_some());
    let dir = crate::publish::snapshot::directory(&w.agent.core.config.out);
    std::fs::create_dir_all(&dir).unwrap();
    let snapshot = dir.join(webcoop_protocol::snapshot::file_name(1));
    std::fs::write(&snapshot, b"a snapshot holding b").unwrap();

    std::fs::remove_file(w.site.join("b.html")).unwrap();
    w.check("b.html");
    // Its kept versions are dropped: no delta, batch or snapshot can be made of it.
    assert!(w.agent.core.store.versions_of("b.html").unwrap().is_empty());
    assert_eq!(w.agent.stats().withdrawals, 1);
    assert!(!snapshot.exists(), "a snapshot that may hold it is removed");
    // a.html links to it: checked again at once, whole, and its older versions go after.
    let a = &w.agent.pages["a.html"];
    assert!(a.urgent && a.whole);
    assert!(w.agent.quoting.contains("a.html"));
    assert!(
        !w.agent.pages[""].urgent,
        "the home page does not link to it"
    );
    // A snapshot waits until every page that showed it was checked again.
    w.check("a.html");
    assert!(w.agent.quoting.is_empty());
    assert!(!w.agent.pages["a.html"].urgent);
}

#[test]
fn a_page_that_never_was_published_withdraws_nothing() {
    let mut w = world(|_| {});
    w.agent.run_once().unwrap();
    // Named by a ping, never there: refused, nothing deleted or withdrawn.
    assert_eq!(w.agent.urgent(&["nothing.html".to_string()]), 1);
    w.check("nothing.html");
    assert_eq!(w.agent.stats().withdrawals, 0);
    assert!(w.changes().is_empty());
    assert_eq!(w.published(), ["", "a.html", "b.html"]);
}

#[test]
fn the_intake_takes_what_the_sitemaps_name_under_the_rules_and_the_budget() {
    let mut w = world(|o| o.origin_max_urls = Some(5));
    w.agent.run_once().unwrap();
    // robots.txt forbids a directory: a page there is neither taken in nor published, and a
    // ping naming it is refused.
    std::fs::create_dir(w.site.join("private")).unwrap();
    write(&w.site, "private/p.html", "<title>P</title>");
    write(&w.site, "c.html", "<title>C</title>");
    write(&w.site, "d.html", "<title>D</title>");
    robots_txt(&w.site, "Disallow: /private/");
    sitemap(
        &w.site,
        &["private/p.html", "", "a.html", "b.html", "c.html", "d.html"],
    );
    w.agent.discover().unwrap();
    assert!(!w.agent.pages.contains_key("private/p.html"));
    assert_eq!(w.agent.urgent(&["private/p.html".to_string()]), 0);
    // The budget of five URLs: the sitemaps are read as far as five (d.html is not), the one
    // robots.txt forbids is left out, c.html is taken; a ping may bring one page more.
    assert!(w.agent.pages.contains_key("c.html"));
    assert!(!w.agent.pages.contains_key("d.html"));
    assert_eq!(
        w.agent
            .urgent(&["d.html".to_string(), "e.html".to_string()]),
        1
    );
    assert!(!w.agent.pages.contains_key("e.html"));
    // A page already tracked may be made urgent within the budget.
    assert_eq!(w.agent.urgent(&["a.html".to_string()]), 1);
    assert!(w.agent.pages["a.html"].urgent);
    // A published page the rules now forbid is taken out at its next check.
    robots_txt(&w.site, "Disallow: /b.html");
    w.agent.discover().unwrap();
    w.check("b.html");
    assert_eq!(w.published(), ["", "a.html"]);
    assert_eq!(w.changes().last().unwrap().0, ChangeKind::Deleted);
}

#[test]
fn a_page_that_left_the_sitemaps_after_a_write_is_checked_at_once() {
    let mut w = world(|_| {});
    w.agent.run_once().unwrap();
    // A write was seen (a ping): the next reading of the sitemaps marks what left them.
    w.agent.take_notice(super::Notice { paths: Vec::new() });
    sitemap(&w.site, &["", "a.html"]);
    w.agent.discover().unwrap();
    let b = &w.agent.pages["b.html"];
    assert!(
        b.urgent && b.whole,
        "b.html left the sitemaps after a write"
    );
    assert!(!w.agent.pages["a.html"].urgent);
}

#[test]
fn the_access_log_brings_visitors_pages_holds_editors_and_a_write_checks_the_home_page() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let path = log.path().to_path_buf();
    let mut w = world(|o| o.access_log = Some(vec![path.clone()]));
    w.agent.run_once().unwrap();
    let line = |who: &str, method: &str, target: &str, status: u16| {
        format!(
            "{who} - - [07/Dec/2026:00:00:00 +0000] \"{method} {target} HTTP/1.1\" {status} 100 \"-\" \"Mozilla/5.0 ({who})\"\n"
        )
    };
    let lines = [
        line("10.0.0.9", "GET", "/fresh.html", 200),
        line("10.0.0.5", "GET", "/wp-login.php", 200),
        line("10.0.0.5", "GET", "/draft.html", 200),
        line("10.0.0.5", "POST", "/wp-admin/post.php", 302),
    ];
    std::fs::write(&path, lines.concat()).unwrap();
    assert_eq!(w.agent.read_logs(), 1, "only the visitor's page is new");
    assert!(w.agent.pages.contains_key("fresh.html"));
    assert!(
        !w.agent.pages.contains_key("draft.html"),
        "read by an editor alone, it stays private"
    );
    // The editor's write: the home page and what it links to are checked whole, at once.
    assert_eq!(w.agent.stats().writes, 1);
    let home = &w.agent.pages[""];
    assert!(home.urgent && home.whole);
    assert!(w.agent.pages["a.html"].urgent);
    assert!(
        !w.agent.pages["b.html"].urgent,
        "the home page does not link to it"
    );
}

#[test]
fn a_page_that_showed_one_withdrawn_and_now_changes_at_every_request_is_not_kept() {
    let mut w = world(|_| {});
    w.agent.run_once().unwrap();
    // a.html links to b.html; from now on it answers anew at every request.
    w.volatile.lock().unwrap().insert("a.html".into());
    std::fs::remove_file(w.site.join("b.html")).unwrap();
    w.check("b.html");
    assert!(w.agent.quoting.contains("a.html"));
    // Its kept version may hold what left, and what it is now cannot be told from its
    // volatile parts: it is not published until it can be, and nothing of it is kept.
    w.check("a.html");
    assert_eq!(w.published(), [""]);
    assert!(w.agent.core.store.versions_of("a.html").unwrap().is_empty());
    assert!(w.agent.quoting.is_empty());

    // The twin: a page that changes at every request and showed nothing withdrawn keeps its
    // last published version.
    let mut w = world(|_| {});
    w.agent.run_once().unwrap();
    w.volatile.lock().unwrap().insert("a.html".into());
    w.check("a.html");
    assert_eq!(w.published(), ["", "a.html", "b.html"]);
    assert!(
        w.agent.pages["a.html"]
            .refused
            .as_deref()
            .is_some_and(|r| r.contains("keeps its last published version"))
    );
}

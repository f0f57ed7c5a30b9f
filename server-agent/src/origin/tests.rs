//! Origin mode through its interface, against a real static server over a directory the test
//! edits: what one check of a page records (the page checks), what a page that left takes
//! with it (the withdrawals), and what the sitemaps, the rules, pings and the access log
//! bring in (the intake).

use super::OriginAgent;
use crate::config::{AgentOptions, Config};
use chrono::{TimeZone, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::clock::ManualClock;
use webcoop_testkit::static_site::StaticServer;

/// A site of three pages a sitemap names, served from a directory; the agent reading it.
struct World {
    _tmp: tempfile::TempDir,
    site: PathBuf,
    _server: StaticServer,
    clock: Arc<ManualClock>,
    agent: OriginAgent,
}

/// Writes a file of the site, each write dated a second after the one before: the server's
/// `Last-Modified` has a second's resolution, and a test writes faster.
fn write(site: &Path, path: &str, body: &str) {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    std::fs::write(site.join(path), body).unwrap();
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    let at = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + n);
    let f = std::fs::File::options()
        .write(true)
        .open(site.join(path))
        .unwrap();
    f.set_modified(at).unwrap();
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
    let server = StaticServer::serve(&site);
    let mut o = AgentOptions {
        origin: Some(server.url()),
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
        _server: server,
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

    // Unchanged: answered 304 to its validators, or the same digest; nothing announced.
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

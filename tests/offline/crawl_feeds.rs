//! Feeds read as the web writes them, by real `webcoop-crawl` processes keeping a test web
//! fresh: an RSS 2.0 feed (no edit dates, as WordPress's), an Atom feed and a JSON Feed each
//! announce the pages that change, found within seconds, and the pages they list are not
//! polled; a host with no feed is polled as before; a feed whose dates lie is believed no more
//! (its twin: the honest Atom feed stays believed). Asserted from the server's side.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{Feed, HostSpec, Robots, TestWeb};

const PAGES: usize = 30;
/// Pages edited, in turn, on every host: all within the feed's newest entries.
const EDITED: usize = 6;
const RUN_SECS: u64 = 40;

fn crawl(web: &TestWeb, out: &Path, seeds: &[String], cycle: &str) -> Output {
    let cfg = out.with_extension("toml");
    // Feeds read at the pace their dates show, no faster than a second; pages polled about
    // once a `cycle`; no politeness delay beyond 50 ms.
    std::fs::write(&cfg, "park_base = 0.2\ncoop_poll_min = 1\n").unwrap();
    let mut c = Command::new(testkit::workspace_bin("webcoop-crawl"));
    c.arg("crawl")
        .args(["--allow-net", "127.0.0.0/8", "--out"])
        .arg(out)
        .arg("--config")
        .arg(&cfg)
        .args(["--progress", "quiet"])
        .args(web.resolve_args())
        .args(["--delay-min", "0.05", "--delay-factor", "0"])
        .args(["--keep-fresh", "--refresh-cycle", cycle])
        .args(["--run-for", &RUN_SECS.to_string()])
        .env("RUST_LOG", "info");
    for s in seeds {
        c.args(["--seeds", s]);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success() || o.status.code() == Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Edits `EDITED` pages of each host in `hosts`, one every 1.5 s, from now on (a blog that is
/// busy when the crawl comes); returns the edits `(host, path, when)` when `done` is set.
fn edit_until(
    web: &TestWeb,
    hosts: Vec<String>,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<(String, String, Instant)>> {
    let change = web.changer();
    std::thread::spawn(move || {
        let mut edits = Vec::new();
        let mut k = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) {
            let path = format!("/p/{}.html", k % EDITED);
            for h in &hosts {
                change(h, &path);
                edits.push((h.clone(), path.clone(), Instant::now()));
            }
            k += 1;
            std::thread::sleep(Duration::from_millis(1_500));
        }
        edits
    })
}

/// For each edit, the first request for its page after it: the detection latency (None: not
/// fetched again after it), for edits made `margin` before the end at least.
fn latencies(
    web: &TestWeb,
    edits: &[(String, String, Instant)],
    end: Instant,
    margin: Duration,
) -> HashMap<String, Vec<Option<Duration>>> {
    let log = web.log();
    let mut out: HashMap<String, Vec<Option<Duration>>> = HashMap::new();
    for (host, path, at) in edits.iter().filter(|e| e.2 + margin <= end) {
        let next = log
            .iter()
            .filter(|r| &r.host == host && &r.target == path && r.arrived > *at)
            .map(|r| r.arrived.duration_since(*at))
            .min();
        out.entry(host.clone()).or_default().push(next);
    }
    out
}

/// A field of the cooperation `status --json` reports for `host`'s site (null if none).
fn site_field(out: &Path, host: &str, field: &str) -> serde_json::Value {
    let o = testkit::run_ok(
        Command::new(testkit::workspace_bin("webcoop-crawl"))
            .args(["status", "--json", "--out"])
            .arg(out),
    );
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    s["cooperation"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["origin"].as_str().is_some_and(|o| o.contains(host)))
        .map(|c| c[field].clone())
        .unwrap_or_default()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or(Duration::MAX)
}

#[test]
fn feeds_of_every_format_announce_what_changes_and_what_they_list_is_not_polled() {
    let spec = |name: &str, feed: Option<Feed>| {
        let mut h = HostSpec::new(name, PAGES).robots(Robots::NotFound);
        h.page_bytes = 300;
        match feed {
            Some(f) => h.feed(f),
            None => h,
        }
    };
    let web = TestWeb::start(vec![
        spec("rss.test", Some(Feed::Rss)),
        spec("atom.test", Some(Feed::Atom)),
        spec("json.test", Some(Feed::Json)),
        spec("plain.test", None),
    ]);
    let names = ["rss.test", "atom.test", "json.test", "plain.test"];
    let seeds: Vec<String> = names
        .iter()
        .map(|h| format!("{}/", web.origin(h)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let editor = edit_until(
        &web,
        names.iter().map(|h| h.to_string()).collect(),
        done.clone(),
    );
    std::thread::sleep(Duration::from_secs(5));
    let o = crawl(&web, &out, &seeds, "15");
    let end = Instant::now();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let edits = editor.join().unwrap();
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    let started = end - Duration::from_secs(RUN_SECS);
    let edits: Vec<_> = edits.into_iter().filter(|e| e.2 > started).collect();
    let lat = latencies(&web, &edits, end, Duration::from_secs(8));
    let counts = web.answered_counts();
    let requests = |host: &str, pred: &dyn Fn(&str) -> bool| -> usize {
        counts
            .iter()
            .filter(|((h, t), _)| h == host && pred(t))
            .map(|(_, n)| n)
            .sum()
    };
    let edited = |t: &str| (0..EDITED).any(|i| t == format!("/p/{i}.html"));
    // Listed by every feed throughout (after the edited pages, by path) and never edited.
    let listed_unchanged = |t: &str| ["/p/10.html", "/p/11.html", "/p/12.html"].contains(&t);
    for feed in ["rss.test", "atom.test", "json.test"] {
        let found: Vec<Duration> = lat[feed].iter().flatten().copied().collect();
        let share = found.len() as f64 / lat[feed].len() as f64;
        assert!(
            share >= 0.95,
            "{feed}: {} of {} edits fetched\n{log}",
            found.len(),
            lat[feed].len()
        );
        let n = found.len();
        let m = median(found);
        eprintln!(
            "{feed}: {n} of {} edits found, median latency {m:?}, {} page requests",
            lat[feed].len(),
            requests(feed, &|t: &str| t.starts_with("/p/"))
        );
        assert!(m <= Duration::from_secs(10), "{feed}: median latency {m:?}");
        // The feed was read again and again, conditionally.
        let path = match feed {
            "rss.test" => "/feed.xml",
            "atom.test" => "/feed.atom",
            _ => "/feed.json",
        };
        let reads = counts
            .get(&(feed.to_string(), path.to_string()))
            .copied()
            .unwrap_or(0);
        assert!(reads >= 5, "{feed}: feed read {reads} times\n{log}");
        // Pages it lists and that never changed were fetched once: left to the feed.
        assert_eq!(
            requests(feed, &listed_unchanged),
            3,
            "{feed}: listed pages polled: {counts:?}"
        );
    }
    // The same pages of the host without a feed were polled.
    let polled = requests("plain.test", &listed_unchanged);
    assert!(
        polled > 4,
        "plain.test: unchanged pages requested {polled} times"
    );
    // The host without a feed found its edits by polling, later, with more requests per edit
    // found.
    let plain: Vec<Duration> = lat["plain.test"].iter().flatten().copied().collect();
    eprintln!(
        "plain.test: {} page requests",
        requests("plain.test", &|t: &str| t.starts_with("/p/"))
    );
    let feed_requests = requests("atom.test", &edited);
    let plain_requests = requests("plain.test", &edited);
    eprintln!(
        "edits found on plain.test: {} of {}, median {:?}; edited pages requested {plain_requests} times (atom.test: {feed_requests})",
        plain.len(),
        lat["plain.test"].len(),
        median(plain.clone())
    );
    // It found them by polling every page, where the feeds' hosts poll only what their feeds
    // do not list.
    let pages = |t: &str| t.starts_with("/p/");
    for feed in ["rss.test", "atom.test", "json.test"] {
        assert!(
            requests(feed, &pages) < requests("plain.test", &pages),
            "{feed}: {} page requests, plain.test {}",
            requests(feed, &pages),
            requests("plain.test", &pages)
        );
    }
    // status names what each site offers.
    let level = |host: &str| site_field(&out, host, "level").as_str().map(str::to_string);
    for feed in ["rss.test", "atom.test", "json.test"] {
        assert_eq!(level(feed).as_deref(), Some("feed"));
    }
    assert_ne!(level("plain.test").as_deref(), Some("feed"));
    assert!(log.contains("names the feed"), "{log}");
}

#[test]
fn a_feed_whose_dates_lie_is_believed_no_more_and_an_honest_one_still_is() {
    let spec = |name: &str, feed: Feed| {
        let mut h = HostSpec::new(name, PAGES)
            .robots(Robots::NotFound)
            .feed(feed);
        h.page_bytes = 300;
        h
    };
    let web = TestWeb::start(vec![
        spec("lying.test", Feed::LyingAtom),
        spec("honest.test", Feed::Atom),
    ]);
    let seeds: Vec<String> = ["lying.test", "honest.test"]
        .iter()
        .map(|h| format!("{}/", web.origin(h)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    // Pages polled rarely: what fetches them again is what the feeds say.
    let o = crawl(&web, &out, &seeds, "3600");
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        log.contains("lying.test") && log.contains("claims proved wrong"),
        "{log}"
    );
    let believed = |host: &str| site_field(&out, host, "believed").as_bool();
    assert_eq!(believed("lying.test"), Some(false));
    assert_eq!(believed("honest.test"), Some(true));
    // Once not believed, its claims stop driving fetches: of three claims a reading, only the
    // first readings' were fetched.
    let counts = web.answered_counts();
    let reads = counts
        .get(&("lying.test".to_string(), "/feed.atom".to_string()))
        .copied()
        .unwrap_or(0);
    let pages: usize = counts
        .iter()
        .filter(|((h, t), _)| h == "lying.test" && t.starts_with("/p/"))
        .map(|(_, n)| n)
        .sum();
    assert!(reads >= 20, "the feed was read {reads} times");
    assert!(
        pages < PAGES + 3 * 12,
        "{pages} page requests for {reads} readings of a lying feed"
    );
}

/// A feed is found where the web names it besides `<link>`: a page's `Link` header, and a
/// robots.txt `Sitemap:` line (search engines read feeds named as sitemaps). Each is read as a
/// feed and its edits found within seconds; the honest twin: a feed nothing names is never
/// asked for (the crawler does not guess feed paths), and its host is polled.
#[test]
fn feeds_named_by_a_link_header_or_a_sitemap_line_are_read_and_one_named_nowhere_is_not() {
    use webcoop_testkit::testweb::FeedNaming;
    let spec = |name: &str, feed: Feed, named: FeedNaming, robots: Robots| {
        let mut h = HostSpec::new(name, PAGES).robots(robots).feed(feed);
        h.feed_named = named;
        h.page_bytes = 300;
        h
    };
    let pointer = "User-agent: *\nDisallow:\nSitemap: {origin}/feed.json\n".to_string();
    let web = TestWeb::start(vec![
        spec(
            "header.test",
            Feed::Atom,
            FeedNaming::LinkHeader,
            Robots::NotFound,
        ),
        spec(
            "pointer.test",
            Feed::Json,
            FeedNaming::Nowhere,
            Robots::Custom(pointer),
        ),
        spec(
            "hidden.test",
            Feed::Atom,
            FeedNaming::Nowhere,
            Robots::NotFound,
        ),
    ]);
    let names = ["header.test", "pointer.test", "hidden.test"];
    let seeds: Vec<String> = names
        .iter()
        .map(|h| format!("{}/", web.origin(h)))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let editor = edit_until(
        &web,
        names.iter().map(|h| h.to_string()).collect(),
        done.clone(),
    );
    let o = crawl(&web, &out, &seeds, "3600");
    let end = Instant::now();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let edits = editor.join().unwrap();
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    // Edits after the first pass (pages found by their links are fetched once anyway).
    let after = end - Duration::from_secs(RUN_SECS - 10);
    let edits: Vec<_> = edits.into_iter().filter(|e| e.2 > after).collect();
    let lat = latencies(&web, &edits, end, Duration::from_secs(8));
    let counts = web.answered_counts();
    let asked = |host: &str, path: &str| {
        counts
            .get(&(host.to_string(), path.to_string()))
            .copied()
            .unwrap_or(0)
    };
    for (host, path) in [
        ("header.test", "/feed.atom"),
        ("pointer.test", "/feed.json"),
    ] {
        let found: Vec<Duration> = lat[host].iter().flatten().copied().collect();
        assert!(
            found.len() as f64 >= 0.95 * lat[host].len() as f64,
            "{host}: {} of {} edits fetched\n{log}",
            found.len(),
            lat[host].len()
        );
        let m = median(found);
        assert!(
            m <= Duration::from_secs(10),
            "{host}: median latency {m:?}\n{log}"
        );
        assert!(
            asked(host, path) >= 5,
            "{host}: feed read {} times",
            asked(host, path)
        );
        assert_eq!(
            site_field(&out, host, "level").as_str(),
            Some("feed"),
            "{host}"
        );
    }
    assert!(log.contains("is a feed; read as one"), "{log}");
    // A host that names its sitemap is not asked for /sitemap.xml besides.
    assert_eq!(asked("pointer.test", "/sitemap.xml"), 0, "{counts:?}");
    // Named nowhere: never asked for, its edits left to the refresh cycle (an hour here).
    assert_eq!(asked("hidden.test", "/feed.atom"), 0, "{counts:?}");
    let hidden: Vec<Duration> = lat["hidden.test"].iter().flatten().copied().collect();
    assert!(
        hidden.len() * 2 < lat["hidden.test"].len(),
        "hidden.test: {} of {} edits fetched without a feed",
        hidden.len(),
        lat["hidden.test"].len()
    );
    assert_ne!(
        site_field(&out, "hidden.test", "level").as_str(),
        Some("feed")
    );
}

//! What people read (issue 47), counted from the access log Debian's nginx writes for real
//! requests: visitors from addresses of their own in 127/8, a crawler by its name, one that
//! hides its name but reads robots.txt, one that signs with Web Bot Auth, one client reading a
//! page hundreds of times, one address changing its user agent with every request. The counts
//! are exact per page, published only above the threshold and rounded, survive a `kill -9` of
//! the agent and a log rotation, and the documents that carry them still read in feedparser,
//! rdflib and ultimate-sitemap-parser.

use super::crawl_coop::{Site, page, wait_for};
use super::popularity::counted;
use super::web_bot_auth::{key_server, signed};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::time::Duration;
use webcoop::servers::{http_get, http_request_from};
use webcoop_protocol::robots_rdf;
use webcoop_testkit::{reference_python, run_reference};

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
/// Published only for pages read by at least this many visitors.
const MIN_VISITORS: f64 = 3.0;

fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// A GET from `127.0.0.LAST` with `agent` as its User-Agent; the status.
fn visit(site: &Site, last: u8, path: &str, agent: &str) -> u16 {
    let host = site.nginx.addr.to_string();
    http_request_from(
        loopback(last),
        site.nginx.addr,
        "GET",
        path,
        &[("Host", &host), ("User-Agent", agent)],
        b"",
    )
    .unwrap()
    .status
}

/// Where the agent's console listens, from what it said on starting.
fn console_of(site: &Site) -> std::net::SocketAddr {
    let err = site.tmp.path().join("agent.err");
    let mut found = None;
    wait_for("the agent's console", Duration::from_secs(30), || {
        let said = std::fs::read_to_string(&err).unwrap_or_default();
        found = said
            .split("console at http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|a| a.parse().ok());
        found.is_some()
    });
    found.unwrap()
}

/// Whether the counts are `expected` (decay over a test's minute is far below 0.01).
fn counts_are(got: &BTreeMap<String, (f64, Option<f64>)>, expected: &[(&str, f64)]) -> bool {
    got.len() == expected.len()
        && expected
            .iter()
            .all(|(p, n)| got.get(*p).is_some_and(|(v, _)| (v - n).abs() < 0.01))
}

/// The power of two nearest `x` in log scale, written here independently of the agent.
fn nearest_power_of_two(x: f64) -> f64 {
    2f64.powf(x.log2().round())
}

/// Every page's figure is published iff it has enough visitors, and is its rounded share.
fn assert_threshold_and_rounding(got: &BTreeMap<String, (f64, Option<f64>)>) {
    let total: f64 = got.values().map(|(v, _)| v).sum();
    for (page, (visitors, published)) in got {
        let expected = (*visitors >= MIN_VISITORS).then(|| nearest_power_of_two(visitors / total));
        assert_eq!(*published, expected, "{page}: {visitors} of {total}");
    }
}

fn wait_counts(console: std::net::SocketAddr, expected: &[(&str, f64)]) {
    let mut last = BTreeMap::new();
    wait_for("the agent's counts", Duration::from_secs(60), || {
        last = counted(console);
        counts_are(&last, expected)
    });
    assert_threshold_and_rounding(&last);
}

#[test]
fn the_agent_counts_what_visitors_read_in_nginx_s_log_and_publishes_it_with_care() {
    let Some(python) = reference_python() else {
        return;
    };
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("access.log");
    let agent_args: Vec<String> = [
        "--access-log",
        log.to_str().unwrap(),
        "--publish-popularity",
        "--popularity-min-visitors",
        "3",
        "--trusted-proxy",
        "127.0.0.1/32",
        "--console",
        "127.0.0.1:0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let args: Vec<&str> = agent_args.iter().map(String::as_str).collect();
    let logged = |c: String| {
        c.replacen(
            "server {",
            &format!("server {{\n    access_log {} combined;", log.display()),
            1,
        )
    };
    let Some(mut site) = Site::start_conf(6, logged, &args) else {
        return;
    };
    let console = console_of(&site);

    // Visitors, each an address of its own.
    for (page, from) in [
        ("/p1.html", 10..18),
        ("/p2.html", 10..14),
        ("/p3.html", 20..22),
        ("/", 10..15),
    ] {
        for last in from {
            assert_eq!(visit(&site, last, page, FIREFOX), 200, "{page}");
        }
    }
    // One reader reloading a page hundreds of times is one visitor; a query is the same file.
    for _ in 0..300 {
        visit(&site, 10, "/p1.html", FIREFOX);
    }
    visit(&site, 11, "/?utm_source=mail", FIREFOX);
    // One address changing its user agent with every request: a few visitors at most.
    for i in 0..10 {
        visit(&site, 30, "/p4.html", &format!("Mozilla/5.0 Reader/{i}"));
    }
    // What is not a read: a page that is not there, a method that is not GET.
    assert_eq!(visit(&site, 12, "/missing.html", FIREFOX), 404);
    let host = site.nginx.addr.to_string();
    let post = http_request_from(
        loopback(13),
        site.nginx.addr,
        "POST",
        "/p3.html",
        &[("Host", &host), ("User-Agent", FIREFOX)],
        b"x=1",
    )
    .unwrap();
    assert_ne!(post.status, 200);

    // Crawlers: by name; by reading robots.txt under a browser's name; by a verified
    // Web Bot Auth signature on a request to the agent, under a browser's name.
    for page in ["/p5.html", "/p6.html"] {
        visit(
            &site,
            40,
            page,
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        );
    }
    assert_eq!(visit(&site, 41, "/robots.txt", FIREFOX), 200);
    for page in ["/p5.html", "/p6.html"] {
        visit(&site, 41, page, FIREFOX);
    }
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("key.json");
    run_reference(
        &python,
        "web_bot_auth.py",
        &[
            "keygen".as_ref(),
            key.as_os_str(),
            keys.path().join("directory.json").as_os_str(),
        ],
    );
    let signer = key_server(&key);
    let changes = format!("{}.well-known/webcoop/changes", site.nginx.url());
    let signature = signed(&python, &key, "GET", &changes, &signer.origin, None);
    let signed_agent = "Mozilla/5.0 (X11; Linux x86_64) SignedReader/1.0";
    let mut headers: Vec<(&str, &str)> = vec![("Host", &host), ("User-Agent", signed_agent)];
    headers.extend(signature.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let r = http_request_from(
        loopback(42),
        site.nginx.addr,
        "GET",
        "/.well-known/webcoop/changes",
        &headers,
        b"",
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    for page in ["/p5.html", "/p6.html"] {
        assert_eq!(visit(&site, 42, page, signed_agent), 200);
    }
    // The honest twin: the same browser name from an address that never signed is a visitor.
    let mut expected = vec![
        ("p1.html", 8.0),
        ("p2.html", 4.0),
        ("p3.html", 2.0),
        ("index.html", 5.0),
        ("p4.html", 4.0),
        ("p6.html", 1.0),
    ];
    assert_eq!(visit(&site, 43, "/p6.html", signed_agent), 200);
    wait_counts(console, &expected);
    let got = counted(console);
    let figures: BTreeMap<&str, Option<f64>> =
        got.iter().map(|(p, (_, f))| (p.as_str(), *f)).collect();
    // 24 reads in all: 8/24 and 5/24 round to 1/4, 4/24 to 1/8; 2 and 1 visitors are too few.
    assert_eq!(
        figures,
        BTreeMap::from([
            ("index.html", Some(0.25)),
            ("p1.html", Some(0.25)),
            ("p2.html", Some(0.125)),
            ("p3.html", None),
            ("p4.html", Some(0.125)),
            ("p6.html", None),
        ])
    );
    wait_for("the figures in robots.rdf", Duration::from_secs(30), || {
        published_in_rdf(&site) == figures_by_url(&site, &figures)
    });
    // Pages edited now reach the changes feed with their figures.
    site.write("p1.html", &page(1, "edited"));
    site.write("p3.html", &page(3, "edited"));
    wait_for(
        "the edits in the changes feed",
        Duration::from_secs(30),
        || {
            let feed = http_get(site.nginx.addr, "/.well-known/webcoop/changes.atom", &[]);
            feed.is_ok_and(|f| {
                let text = String::from_utf8_lossy(&f.body);
                text.contains("/p1.html") && text.contains("/p3.html")
            })
        },
    );
    check_documents(&site, &python, &figures);

    // kill -9, then reads while the agent is down, some before the log is rotated and some
    // after: none lost, none counted twice.
    site.agent_killed();
    for last in 50..52 {
        visit(&site, last, "/p2.html", FIREFOX);
    }
    std::fs::rename(&log, logs.path().join("access.log.1")).unwrap();
    reopen_logs(site.nginx.dir());
    wait_for("nginx's new log", Duration::from_secs(10), || log.exists());
    for last in 52..54 {
        visit(&site, last, "/p3.html", FIREFOX);
    }
    site.start_agent_with(&args);
    let console = console_of(&site);
    expected[1].1 = 6.0;
    expected[2].1 = 4.0;
    wait_counts(console, &expected);
}

impl Site {
    /// Stops the agent as `kill -9` would.
    fn agent_killed(&mut self) {
        self.stop_agent();
        let _ = std::fs::remove_file(self.tmp.path().join("agent.err"));
    }
}

/// Asks nginx's master to reopen its logs, as logrotate's postrotate does.
fn reopen_logs(nginx_dir: &Path) {
    let pid = std::fs::read_to_string(nginx_dir.join("nginx.pid")).unwrap();
    let status = std::process::Command::new("kill")
        .args(["-USR1", pid.trim()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Each listed URL's `wc:popularity`, as robots.rdf served by nginx says.
fn published_in_rdf(site: &Site) -> BTreeMap<String, Option<f64>> {
    let Ok(r) = http_get(site.nginx.addr, "/robots.rdf", &[]) else {
        return BTreeMap::new();
    };
    let Ok(doc) = robots_rdf::parse(&r.body, &Default::default()) else {
        return BTreeMap::new();
    };
    doc.items
        .iter()
        .filter(|i| i.url.path().ends_with(".html") || i.url.path() == "/")
        .map(|i| {
            let p = i
                .extensions
                .get("popularity")
                .and_then(|v| v.parse::<f64>().ok());
            (i.url.to_string(), p)
        })
        .collect()
}

/// The figures by URL for every `.html` page of the site (those with no visitors: none).
fn figures_by_url(
    site: &Site,
    figures: &BTreeMap<&str, Option<f64>>,
) -> BTreeMap<String, Option<f64>> {
    let base = site.nginx.url();
    let mut out: BTreeMap<String, Option<f64>> = (1..=6)
        .map(|i| (format!("{base}p{i}.html"), None))
        .collect();
    out.insert(format!("{base}index.html"), None);
    for (page, f) in figures {
        out.insert(format!("{base}{page}"), *f);
    }
    out
}

/// robots.rdf, the changes feed and the sitemap, as nginx serves them, read by rdflib,
/// feedparser and ultimate-sitemap-parser: valid, and carrying the figures.
fn check_documents(site: &Site, python: &Path, figures: &BTreeMap<&str, Option<f64>>) {
    let base = site.nginx.url();
    let dir = tempfile::tempdir().unwrap();
    for (path, name) in [
        ("/robots.rdf", "robots.rdf"),
        ("/.well-known/webcoop/changes.atom", "changes.atom"),
    ] {
        let body = http_get(site.nginx.addr, path, &[]).unwrap().body;
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let rdf: Value = serde_json::from_str(&run_reference(
        python,
        "rdf_check.py",
        &[dir.path().join("robots.rdf").as_os_str()],
    ))
    .unwrap();
    let atom: Value = serde_json::from_str(&run_reference(
        python,
        "feed_check.py",
        &[dir.path().join("changes.atom").as_os_str()],
    ))
    .unwrap();
    assert_eq!(atom["bozo"], false, "{}", atom["bozo_exception"]);
    let in_feed: BTreeMap<String, Option<f64>> = atom["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["link"].as_str().unwrap_or_default().to_string(),
                e["wc_popularity"].as_str().and_then(|v| v.parse().ok()),
            )
        })
        .collect();
    for edited in ["p1.html", "p3.html"] {
        assert!(
            in_feed.contains_key(&format!("{base}{edited}")),
            "{in_feed:?}"
        );
    }
    let usp: Value = serde_json::from_str(&run_reference(
        python,
        "sitemap_check.py",
        &[
            OsStr::new("--url"),
            OsStr::new(&format!("{base}sitemap.xml")),
        ],
    ))
    .unwrap();
    assert_eq!(usp["invalid"], serde_json::json!([]));
    let priorities: BTreeMap<String, f64> = usp["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["url"].as_str().unwrap_or_default().to_string(),
                p["priority"].as_f64().unwrap_or(-1.0),
            )
        })
        .collect();
    let sitemap = http_get(site.nginx.addr, "/sitemap.xml", &[]).unwrap().body;
    let sitemap = String::from_utf8_lossy(&sitemap);
    let top = figures.values().flatten().copied().fold(0.0, f64::max);
    for (page, figure) in figures {
        let url = format!("{base}{page}");
        let item = &rdf["items"][&url];
        assert_eq!(
            item["popularity"].as_str().and_then(|v| v.parse().ok()),
            *figure,
            "rdflib, {url}"
        );
        if let Some(in_feed) = in_feed.get(&url) {
            assert_eq!(in_feed, figure, "feedparser, {url}");
        }
        match figure {
            // The most read pages have priority 1, the others their rounded ratio to them.
            Some(f) => assert_eq!(priorities.get(&url), Some(&(f / top)), "usp, {url}"),
            // No figure, no priority: the sitemap's <url> for the page says only where it is.
            None => {
                let entry = sitemap
                    .split("<url>")
                    .find(|u| u.contains(&format!("<loc>{url}</loc>")))
                    .unwrap_or_else(|| panic!("{url} not in the sitemap"));
                assert!(!entry.contains("<priority>"), "{entry}");
            }
        }
    }
}

//! Cooperation found where the web names it, not probed before a host's pages: on a small web
//! of hosts that offer nothing, each host's first page follows its robots.txt by one delay, and
//! `/robots.rdf` and `/sitemap.xml` are asked once each, after the host's pages, of the hosts
//! with `--probe-after` pages fetched and of the seed's, and of no smaller one; a host whose robots.txt names its
//! sitemap has it read before its pages (its twin). Asserted from the server's side, and the
//! probes counted by `status`.

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{HostSpec, Sitemap, TestWeb};

const DELAY: f64 = 0.2;

#[test]
fn a_hosts_first_page_follows_its_robots_txt_and_unnamed_documents_are_probed_after_its_pages() {
    let mut specs: Vec<HostSpec> = (0..4)
        .map(|i| {
            let mut h = HostSpec::new(&format!("plain{i}.test"), 6);
            h.page_bytes = 300;
            h
        })
        .collect();
    // The seed's host has fewer pages than `--probe-after` too, but the operator named it:
    // probed all the same, after its pages.
    specs[0] = HostSpec::new("plain0.test", 2);
    specs[0].page_bytes = 300;
    let mut named = HostSpec::new("named.test", 6).sitemap(Sitemap::Honest);
    named.page_bytes = 300;
    // Two pages and its home page: fewer than `--probe-after`, so never probed.
    let mut small = HostSpec::new("small.test", 2);
    small.page_bytes = 300;
    specs[0].links_to = (1..4)
        .map(|i| format!("plain{i}.test"))
        .chain(["named.test".to_string(), "small.test".to_string()])
        .collect();
    specs.push(named);
    specs.push(small);
    let web = TestWeb::start(specs);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let o = Command::new(testkit::workspace_bin("webcoop-crawl"))
        .args(["crawl", "--allow-net", "127.0.0.0/8", "--progress", "quiet"])
        .args(["--scope", "any", "--delay-min", &DELAY.to_string()])
        .args(["--delay-factor", "0", "--probe-after", "4"])
        .args(web.resolve_args())
        .args(["--seeds", &format!("{}/", web.origin("plain0.test"))])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut by_host: HashMap<String, Vec<_>> = HashMap::new();
    for r in web.log() {
        by_host.entry(r.host.clone()).or_default().push(r);
    }
    let probes = |log: &[webcoop_testkit::testweb::Logged]| {
        log.iter()
            .filter(|r| r.target == "/robots.rdf" || r.target == "/sitemap.xml")
            .count()
    };
    for i in 0..4 {
        let host = format!("plain{i}.test");
        let log = &by_host[&host];
        let targets: Vec<&str> = log.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(targets[0], "/robots.txt", "{host}: {targets:?}");
        assert!(
            !["/robots.rdf", "/sitemap.xml"].contains(&targets[1]),
            "{host}: a probe before its first page: {targets:?}"
        );
        // Its first page one delay after robots.txt (and not three).
        let gap = log[1].arrived.duration_since(log[0].arrived);
        assert!(
            gap < Duration::from_secs_f64(DELAY * 2.5),
            "{host}: first page {gap:?} after robots.txt"
        );
        // Each probe once, after every page of the host.
        assert_eq!(probes(log), 2, "{host}: {targets:?}");
        let last_page = targets
            .iter()
            .rposition(|t| t.starts_with("/p/") || *t == "/")
            .unwrap();
        let first_probe = targets
            .iter()
            .position(|t| *t == "/robots.rdf" || *t == "/sitemap.xml")
            .unwrap();
        assert!(first_probe > last_page, "{host}: {targets:?}");
    }
    // The small host's pages were all fetched, and nothing more was asked of it: the crawl
    // ended without its probes.
    let mut small: Vec<&str> = by_host["small.test"]
        .iter()
        .map(|r| r.target.as_str())
        .collect();
    assert_eq!(small.first(), Some(&"/robots.txt"), "{small:?}");
    small.sort();
    assert_eq!(
        small,
        ["/", "/p/0.html", "/p/1.html", "/robots.txt"],
        "{small:?}"
    );
    // The twin: a sitemap robots.txt names is read before the host's pages, and only
    // /robots.rdf, which nothing names, is probed.
    let log = &by_host["named.test"];
    let targets: Vec<&str> = log.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(
        &targets[..2],
        ["/robots.txt", "/sitemap.xml"],
        "{targets:?}"
    );
    assert_eq!(
        targets.iter().filter(|t| **t == "/sitemap.xml").count(),
        1,
        "{targets:?}"
    );
    assert_eq!(
        targets.iter().filter(|t| **t == "/robots.rdf").count(),
        1,
        "{targets:?}"
    );
    // status counts them: two for each plain host, one for the named, none for the small.
    let s = testkit::run_ok(
        Command::new(testkit::workspace_bin("webcoop-crawl"))
            .args(["status", "--json", "--out"])
            .arg(&out),
    );
    let v: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    let total: u64 = v["cooperation"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["stats"]["probes"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(total, 9, "{}", String::from_utf8_lossy(&s.stdout));
}

//! Snapshots a site hands the crawler: one that lies or breaks off costs only the pages it
//! lied about, and reading one weighs on politeness as its download, not its reading.

use super::listing_site::{
    SNAPSHOT_PATH, crawl, site_with_listing, snapshot_crawl_args, snapshot_file, status_json,
};
use super::support::{Canned, HostileWeb, crawl_bin};
use std::process::Command;

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

//! A WordPress site as Debian ships it, with no webcoop agent: its pages name its RSS feed
//! (`/feed/`: `pubDate` only, `lastBuildDate` moving with each edit), and a crawler kept fresh
//! reads it as a listing. A new post no page it holds links to is found through the feed, an
//! edited post is fetched again, and a post the feed lists and nobody edits is not polled.
//! Asserted from nginx's access log.

use super::crawl_coop::{coop_of, crawl_seeds, wait_for};
use super::wordpress_site::WordPress;
use std::time::Duration;

/// GETs of `path` by the crawler in nginx's access log whose line holds `status` (as
/// `" 200 "`, or `""` for any).
fn gets_with(wp: &WordPress, path: &str, status: &str) -> usize {
    std::fs::read_to_string(&wp.access_log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("feed-crawler") && l.contains(&format!("\"GET {path} ")))
        .filter(|l| l.contains(status))
        .count()
}

fn gets(wp: &WordPress, path: &str) -> usize {
    gets_with(wp, path, "")
}

/// Every request of the crawler.
fn requests(wp: &WordPress) -> usize {
    wp.requests_by("feed-crawler").0
}

/// The crawler's reads of feeds.
fn reads(wp: &WordPress) -> usize {
    std::fs::read_to_string(&wp.access_log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("feed-crawler") && l.contains("/feed/ "))
        .count()
}

#[test]
fn a_wordpress_without_the_agent_is_kept_fresh_through_its_own_feed() {
    let Some(wp) = WordPress::start(&[]) else {
        return;
    };
    let out = wp.tmp.path().join("crawl-feed");
    let _crawl = crawl_seeds(
        std::slice::from_ref(&wp.base),
        &out,
        "push",
        600,
        3600,
        &[
            "--resolve".into(),
            format!("{}={}", wp.host, wp.nginx.addr),
            "--user-agent".into(),
            "feed-crawler".into(),
        ],
    );
    wait_for("the feed read", Duration::from_secs(120), || {
        coop_of(&out, &wp.base)["level"] == "feed"
    });
    // The first pass over (its pages, WordPress's category and author pages, its REST
    // documents), so that what lists a new post is no page the crawler reads again within the
    // test's refresh cycle of an hour, only the feed.
    let mut quiet = 0;
    wait_for("the first pass", Duration::from_secs(90), || {
        let (n, f) = (requests(&wp), reads(&wp));
        std::thread::sleep(Duration::from_secs(2));
        let pages = (requests(&wp) - n).saturating_sub(reads(&wp) - f);
        quiet = if pages == 0 { quiet + 1 } else { 0 };
        quiet >= 2 && gets(&wp, "/hello-world/") >= 1
    });
    let feed_before = gets_with(&wp, "/feed/", " 200 ");
    let id = wp.new_post("Found through the feed", "Nothing links here yet.");
    wait_for("the new post fetched", Duration::from_secs(90), || {
        gets(&wp, "/found-through-the-feed/") >= 1
    });
    assert!(
        gets_with(&wp, "/feed/", " 200 ") > feed_before,
        "the new post was not found through the feed"
    );
    std::thread::sleep(Duration::from_secs(2));
    // Edited: RSS gives no edit date, the entry's text changed: fetched again.
    wp.edit_post(&id, "Edited after the crawler fetched it.");
    wait_for(
        "the edited post fetched again",
        Duration::from_secs(90),
        || gets(&wp, "/found-through-the-feed/") >= 2,
    );
    let hello = gets(&wp, "/hello-world/");
    assert!(
        hello <= 2,
        "a post the feed lists and nobody edited was polled: {hello} GETs"
    );
    let feed_reads = gets(&wp, "/feed/");
    eprintln!(
        "wordpress without the agent: feed read {feed_reads} times, /hello-world/ {hello} times"
    );
}

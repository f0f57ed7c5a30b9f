//! A site's feed read as a listing of its newest pages, on the in-memory world: what a
//! reading queues, makes due and leaves to the feed; what a second reading gives back to the
//! schedule; a feed whose dates lie; what a feed may not state; a hub's delivery read as the
//! feed.

use super::*;
use crate::analyze::Link;
use crate::coop::CoopMode;
use crate::coop::callback::CallbackEvent;

const FEED: &str = "http://site.test/feed.atom";

/// A site with no changes feed of its own: discovered, believed, its robots.txt read.
fn world() -> World {
    let mut w = World::new(CoopConfig::default());
    *w.coop.site(w.host) = SiteCoop {
        discovered: true,
        ..SiteCoop::default()
    };
    w
}

/// An Atom feed of `(path or URL, updated at, ms)`.
fn atom(entries: &[(&str, i64)]) -> CoopFetched {
    let mut body = format!(
        "<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>t</title><id>{FEED}</id><updated>2026-12-01T00:00:00Z</updated><link rel=\"self\" href=\"{FEED}\"/><link rel=\"hub\" href=\"https://hub.example/\"/>"
    );
    for (path, at) in entries {
        let url = if path.contains(':') {
            path.to_string()
        } else {
            format!("{SITE}{path}")
        };
        let at = Utc.timestamp_millis_opt(*at).unwrap().to_rfc3339();
        body.push_str(&format!(
            "<entry><title>e</title><id>{url}</id><link href=\"{url}\"/><updated>{at}</updated></entry>"
        ));
    }
    body.push_str("</feed>");
    CoopFetched {
        status: 200,
        headers: vec![("ETag".into(), "\"f1\"".into())],
        size: body.len() as u64,
        body: body.into_bytes(),
        record: None,
    }
}

impl World {
    /// A page of the site names the feed; the read it asks for answered `got`.
    fn read_feed(&mut self, got: CoopFetched) -> Effects {
        let host = self.host;
        let feed = Link::to(&Url::parse(FEED).unwrap());
        self.decide(|c, r| c.page_feeds(r, host, std::slice::from_ref(&feed)));
        let job = CoopJob::Fetch {
            kind: MetaKind::Feed,
            url: Url::parse(FEED).unwrap(),
            etag: None,
            last_modified: None,
        };
        self.decide(|c, r| c.answered(r, host, job, Ok(got))).1
    }
}

#[test]
fn a_reading_queues_new_pages_makes_changed_ones_due_and_leaves_listed_ones_to_the_feed() {
    let mut w = world();
    let host = w.host;
    let t = now_ms();
    let a = w.held_page("/a", 60_000, "\"a1\"");
    let b = w.held_page("/b", 60_000, "\"b1\"");
    let c = w.held_page("/c", 60_000, "\"c1\"");
    // Left to the schedule's own estimates first (held_page covers, as for a covering site).
    for fp in [a, b, c] {
        w.schedule.as_mut().unwrap().uncover(fp);
    }
    let out = w.read_feed(atom(&[
        ("/a", t - 1_000),
        ("/b", t - 3_600_000),
        ("/new", t - 2_000),
        ("http://other.test/x", t - 1_000),
        ("javascript:alert(1)", t - 1_000),
    ]));
    let level = w.coop.site_state(host).unwrap().level(CoopMode::Push, 3);
    assert_eq!(level, super::super::Level::Feed);
    assert!(!w.coop.covers(host), "a feed never covers the whole site");
    // /a changed after its visit: due now; /b did not: left to the feed; /c is not listed.
    assert!(w.due(a) <= now_ms());
    assert!(w.covered(a) && w.covered(b) && !w.covered(c));
    assert!(w.due(b) > now_ms() + 86_400_000);
    let queued: Vec<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(queued, ["http://site.test/new"]);
    let stats = &w.coop.site_state(host).unwrap().stats;
    assert_eq!(
        stats.foreign, 1,
        "another site's page is not this feed's to state"
    );

    // The next reading: /b left the feed (its page goes back to the schedule), /a unchanged.
    let due_a = w.due(a);
    let out = w.read_feed(atom(&[("/a", t - 1_000), ("/new", t - 2_000)]));
    assert!(!w.covered(b) && w.covered(a));
    assert!(w.due(b) < now_ms() + 31 * 86_400_000);
    assert_eq!(
        w.due(a),
        due_a,
        "an entry that did not move announces nothing"
    );
    assert!(out.links.is_empty());
}

#[test]
fn a_feed_whose_dates_lie_is_believed_no_more() {
    let mut w = world();
    let host = w.host;
    let t = now_ms();
    let a = w.held_page("/a", 60_000, "\"a1\"");
    w.read_feed(atom(&[("/a", t - 1_000)]));
    assert!(w.due(a) <= now_ms());
    // Each visit finds the page as it was: the feed's "changed" was false.
    for _ in 0..40 {
        w.decide(|c, r| c.visited(r, host, a, (false, Some("\"a1\""), false), None, true));
        if !w.coop.site_state(host).unwrap().trust.believed(0.5) {
            break;
        }
        w.coop
            .ledger
            .expect(a, host, super::super::ledger::Claim::Changed);
    }
    assert!(!w.coop.site_state(host).unwrap().trust.believed(0.5));
    // Not believed: a new date makes nothing due, and the pages are no longer left to it.
    let before = w.due(a);
    w.read_feed(atom(&[("/a", t - 10)]));
    assert_eq!(w.due(a), before);
}

#[test]
fn a_hub_delivery_of_the_feed_is_read_as_the_feed_without_fetching_it_again() {
    let mut w = world();
    let host = w.host;
    let t = now_ms();
    let a = w.held_page("/a", 60_000, "\"a1\"");
    w.read_feed(atom(&[("/a", t - 3_600_000)]));
    assert!(w.due(a) > now_ms());
    w.coop.site(host).page_hub = Some(("https://hub.example/".into(), FEED.into()));
    let polling_before = w.coop.polling.contains(&host);
    // The hub delivers the feed with /a edited and a new page.
    let delivery = atom(&[("/a", t - 500), ("/fresh", t - 500)]);
    let (_, out) = w.decide(|c, r| {
        c.callback_event(
            r,
            CallbackEvent::Delivery {
                host,
                body: delivery.body.clone(),
                cbor: false,
            },
        )
    });
    assert!(w.due(a) <= now_ms(), "the edited page is due at once");
    let queued: Vec<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(queued, ["http://site.test/fresh"]);
    assert_eq!(out.pushes, 1);
    assert_eq!(
        w.coop.polling.contains(&host),
        polling_before,
        "the feed is not fetched again"
    );
    // A delivery that omits an entry says nothing of it.
    let (_, out) = w.decide(|c, r| {
        c.callback_event(
            r,
            CallbackEvent::Delivery {
                host,
                body: atom(&[("/other", t - 500)]).body,
                cbor: false,
            },
        )
    });
    assert_eq!(out.links.len(), 1);
    assert!(w.covered(a), "still listed");
}

#[test]
fn a_feed_on_an_origin_the_site_does_not_speak_for_is_not_read_and_hubs_are_restricted() {
    let mut w = world();
    let host = w.host;
    let elsewhere = Link::to(&Url::parse("http://feeds.other.test/site.xml").unwrap());
    w.decide(|c, r| c.page_feeds(r, host, std::slice::from_ref(&elsewhere)));
    assert!(!w.coop.polling.contains(&host));
    let feed_url = Url::parse("http://feeds.other.test/site.xml").unwrap();
    assert!(!w.coop.site_state(host).unwrap().feeds.follows(&feed_url));
    // --hub-allow: only the hosts named (a leading dot for a domain).
    w.coop
        .allow_hubs(vec![".superfeedr.example".into(), "hub.example".into()]);
    for (hub, ok) in [
        ("https://hub.example/", true),
        ("https://x.superfeedr.example/", true),
        ("https://superfeedr.example/", true),
        ("https://evil-superfeedr.example/", false),
        ("https://hub.example.evil/", false),
        ("ftp://hub.example/", false),
    ] {
        assert_eq!(w.coop.hub_allowed(&Url::parse(hub).unwrap()), ok, "{hub}");
    }
}

/// Sitemap jobs of the site queued, taken off the queue.
fn sitemap_jobs(w: &mut World, url: Option<&str>) -> usize {
    let host = w.host;
    w.frontier.drop_coop(host, |j| {
        matches!(j, CoopJob::Fetch { kind: MetaKind::Sitemap, url: u, .. } if url.is_none_or(|want| u.as_str() == want))
    })
}

/// The walk's file at `url` answered `got`.
fn walk_answered(w: &mut World, url: &str, got: CoopFetched) {
    let host = w.host;
    let job = CoopJob::Fetch {
        kind: MetaKind::Sitemap,
        url: Url::parse(url).unwrap(),
        etag: None,
        last_modified: None,
    };
    w.decide(|c, r| c.answered(r, host, job, Ok(got)));
}

#[test]
fn a_sitemap_that_is_a_feed_is_read_as_one_and_not_walked_again() {
    let mut w = world();
    let host = w.host;
    let t = now_ms();
    let a = w.held_page("/a", 60_000, "\"a1\"");
    w.coop.site(host).sitemaps = vec![FEED.into()];
    w.decide(|c, r| c.start_walks(r, host));
    assert_eq!(sitemap_jobs(&mut w, Some(FEED)), 1);
    walk_answered(&mut w, FEED, atom(&[("/a", t - 1_000), ("/b", t - 5_000)]));
    let site = w.coop.site_state(host).unwrap();
    assert_eq!(site.level(CoopMode::Push, 3), super::super::Level::Feed);
    assert!(w.due(a) <= now_ms(), "the feed's date made /a due");
    // The next walk leaves it to the feed, and asks for no /sitemap.xml instead.
    w.decide(|c, r| c.start_walks(r, host));
    assert_eq!(sitemap_jobs(&mut w, None), 0);
    // A sitemap that is no feed is walked as before (the twin).
    let mut w = world();
    w.coop.site(w.host).sitemaps = vec![format!("{SITE}/sitemap.xml")];
    let host = w.host;
    w.decide(|c, r| c.start_walks(r, host));
    assert_eq!(sitemap_jobs(&mut w, None), 1);
}

#[test]
fn a_sitemap_read_again_counts_the_changes_its_dates_claim_as_announced() {
    let mut w = world();
    let host = w.host;
    let t = now_ms();
    w.held_page("/a", 60_000, "\"a1\"");
    w.held_page("/b", 60_000, "\"b1\"");
    w.held_page("/c", 60_000, "\"c1\"");
    let url = format!("{SITE}/sitemap.xml");
    w.coop.site(host).sitemaps = vec![url.clone()];
    let sitemap = |dates: &[(&str, i64)]| {
        let mut body =
            String::from("<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">");
        for (p, at) in dates {
            let at = Utc.timestamp_millis_opt(*at).unwrap().to_rfc3339();
            body.push_str(&format!(
                "<url><loc>{SITE}{p}</loc><lastmod>{at}</lastmod></url>"
            ));
        }
        body.push_str("</urlset>");
        CoopFetched {
            status: 200,
            headers: Vec::new(),
            size: body.len() as u64,
            body: body.into_bytes(),
            record: None,
        }
    };
    let walk = |w: &mut World, dates: &[(&str, i64)]| {
        w.decide(|c, r| c.start_walks(r, host));
        sitemap_jobs(w, None);
        walk_answered(w, &url, sitemap(dates));
        w.coop.site_state(host).unwrap().stats.announced
    };
    let old = [
        ("/a", t - 7_200_000),
        ("/b", t - 3_600_000),
        ("/c", t - 5_400_000),
    ];
    assert_eq!(walk(&mut w, &old), 0, "no date moved past a visit");
    let moved = [("/a", t - 1_000), ("/b", t - 2_000), ("/c", t - 5_400_000)];
    assert_eq!(walk(&mut w, &moved), 2, "two dates claim changes");
}

#[test]
fn a_site_with_the_agents_changes_feed_has_its_rss_feeds_left_unread() {
    let feeds = |w: &mut World| {
        let host = w.host;
        let feed = Link::to(&Url::parse(FEED).unwrap());
        w.decide(|c, r| c.page_feeds(r, host, std::slice::from_ref(&feed)));
        w.frontier.drop_coop(host, |j| {
            matches!(
                j,
                CoopJob::Fetch {
                    kind: MetaKind::Feed,
                    ..
                }
            )
        })
    };
    // The changes feed announces every change: the RSS feed would say the same, later.
    let mut agent_site = World::new(CoopConfig::default());
    assert_eq!(feeds(&mut agent_site), 0);
    // The twin: a site without one has its feed read.
    assert_eq!(feeds(&mut world()), 1);
}

#[test]
fn a_sitemap_that_only_looks_like_a_feed_or_speaks_for_another_site_is_not_read_as_one() {
    // Starts like RSS, is not a feed: a failed read of the feed, nothing announced, no panic.
    let mut w = world();
    let host = w.host;
    w.held_page("/a", 60_000, "\"a1\"");
    w.coop.site(host).sitemaps = vec![FEED.into()];
    w.decide(|c, r| c.start_walks(r, host));
    sitemap_jobs(&mut w, None);
    let body = b"<rss version=\"2.0\"><channel><item><link>".repeat(50);
    let got = CoopFetched {
        status: 200,
        headers: Vec::new(),
        size: body.len() as u64,
        body,
        record: None,
    };
    walk_answered(&mut w, FEED, got);
    let site = w.coop.site_state(host).unwrap();
    assert_eq!(site.stats.announced, 0);
    assert_ne!(site.level(CoopMode::Push, 3), super::super::Level::Feed);
    // A feed named as a sitemap of another origin is no feed of this site's.
    let mut w = world();
    let host = w.host;
    let other = "http://other.test/feed.atom";
    w.coop.site(host).sitemaps = vec![other.into()];
    w.decide(|c, r| c.start_walks(r, host));
    sitemap_jobs(&mut w, None);
    walk_answered(&mut w, other, atom(&[("/a", now_ms() - 1_000)]));
    let site = w.coop.site_state(host).unwrap();
    assert_ne!(site.level(CoopMode::Push, 3), super::super::Level::Feed);
    assert_eq!(site.stats.announced, 0);
}

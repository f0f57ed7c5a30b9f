//! Claims of absence: a site whose robots.rdf states that it lists every page (`wc:complete`)
//! has the links its snapshot's pages make to URLs it does not list held unfetched, a few of
//! them fetched to check; a site whose complete listing hid pages it serves loses its belief
//! at the first check, and every link it held is fetched.

use super::listing_site::{
    SNAPSHOT_PATH, coop_of, copies, crawl, site_claiming_complete, snapshot_crawl_args,
    snapshot_file,
};
use super::support::{Canned, HostileWeb};

/// Links each listed page makes to URLs the listing does not name.
const UNLISTED: usize = 8;

/// Serves site.test: three listed pages in an honest snapshot, each linking the same
/// [`UNLISTED`] URLs under /gone/; those answer 404 unless `hidden`, when each is a page of
/// its own. Crawls it; gives the requests each /gone/ URL got, and the site's cooperation.
fn crawl_site(complete: bool, hidden: bool) -> (Vec<usize>, serde_json::Value, String) {
    let web = HostileWeb::start();
    let site = web.origin("site.test");
    let links: String = (0..UNLISTED)
        .map(|i| format!("<a href=\"/gone/{i}.html\">gone {i}</a>"))
        .collect();
    let pages: Vec<(String, String)> = ["a", "b", "c"]
        .iter()
        .map(|n| (format!("/{n}.html"), format!("<p>{n}</p>{links}")))
        .collect();
    let claimed: Vec<(String, String)> = pages
        .iter()
        .map(|(p, b)| (format!("{site}{p}"), b.clone()))
        .collect();
    site_claiming_complete(
        &web,
        "User-agent: *\nAllow: /\n",
        &pages,
        &claimed,
        complete,
    );
    if hidden {
        for i in 0..UNLISTED {
            let body = format!("<p>hidden page {i}, served to visitors</p>");
            web.set(
                "site.test",
                &format!("/gone/{i}.html"),
                Canned::ok("text/html", body),
            );
        }
    }
    let records: Vec<(String, &[u8])> = claimed
        .iter()
        .map(|(u, b)| (u.clone(), b.as_bytes()))
        .collect();
    let records: Vec<(&str, &[u8])> = records.iter().map(|(u, b)| (u.as_str(), *b)).collect();
    web.set(
        "site.test",
        SNAPSHOT_PATH,
        Canned::ok("application/zstd", snapshot_file(&site, &records, b"")),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let o = crawl(&out, &snapshot_crawl_args(&web, &["site.test"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = web.log();
    let asked: Vec<usize> = (0..UNLISTED)
        .map(|i| {
            let line = format!("site.test /gone/{i}.html");
            log.iter().filter(|l| **l == line).count()
        })
        .collect();
    for (p, _) in &pages {
        let line = format!("site.test {p}");
        assert!(
            log.iter().filter(|l| **l == line).count() <= 1,
            "{p} fetched more than once: {log:?}"
        );
    }
    (asked, coop_of(&out, &site), copies(&out))
}

#[test]
fn a_complete_listing_has_its_unlisted_links_held_and_a_few_checked() {
    let (asked, coop, _) = crawl_site(true, false);
    let checked = asked.iter().filter(|n| **n > 0).count();
    assert!(asked.iter().all(|n| *n <= 1), "{asked:?}");
    assert!(
        (1..UNLISTED).contains(&checked),
        "some links checked, not all: {asked:?}"
    );
    assert_eq!(coop["stats"]["held"], UNLISTED, "{coop}");
    assert_eq!(coop["stats"]["refuted"], 0, "{coop}");
    assert_eq!(coop["believed"], true, "{coop}");
}

#[test]
fn a_listing_that_does_not_state_completeness_has_every_link_fetched() {
    // The twin: the same site without `wc:complete`; every link is fetched, none held.
    let (asked, coop, _) = crawl_site(false, false);
    assert_eq!(asked, vec![1; UNLISTED], "{coop}");
    assert_eq!(coop["stats"]["held"], 0, "{coop}");
}

#[test]
fn a_complete_listing_that_hid_pages_loses_its_belief_and_every_link_is_fetched() {
    let (asked, coop, copies) = crawl_site(true, true);
    // Each hidden page once: the first check found a page, and the rest were released.
    assert_eq!(asked, vec![1; UNLISTED], "{coop}");
    assert!(
        coop["stats"]["refuted"].as_u64().unwrap_or(0) >= 1,
        "{coop}"
    );
    assert_eq!(coop["believed"], false, "{coop}");
    for i in 0..UNLISTED {
        assert!(copies.contains(&format!("/gone/{i}.html")), "{copies}");
    }
}

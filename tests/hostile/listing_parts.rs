//! A hostile robots.rdf in parts: an index naming a part on another origin, a part that names
//! parts of its own (on the victim), and a part that is not there, beside one honest part. The
//! honest part's page is fetched (the twin: parts are read), and nothing is asked of the victim.

use super::listing_site::{asked_of, crawl, foreign_of, listing, with_hosts};
use super::support::{Canned, HostileWeb};
use chrono::{TimeZone, Utc};
use url::Url;
use webcoop_protocol::robots_rdf::{self, ListingPart};

fn part(url: &str, n: u64) -> ListingPart {
    ListingPart {
        url: Url::parse(url).unwrap(),
        date: Utc.timestamp_opt(1_790_000_000, 0).unwrap(),
        version: format!("v{n}"),
        items: 1,
    }
}

/// A robots.rdf at `about` whose channel names `parts` and lists `items` (URLs).
fn document(site: &str, about: &str, items: Vec<String>, parts: Vec<ListingPart>) -> String {
    let text = listing(
        site,
        items.into_iter().map(|u| (u, None)).collect(),
        &format!("{site}/.well-known/webcoop/changes"),
        &format!("{site}/.well-known/webcoop/hub"),
    );
    let mut doc = robots_rdf::parse(text.as_bytes(), &Default::default()).unwrap();
    doc.channel.about = Url::parse(about).unwrap();
    doc.channel.parts = parts;
    robots_rdf::write(&doc)
}

#[test]
fn parts_elsewhere_or_nested_are_refused_and_the_honest_one_is_read() {
    let web = HostileWeb::start();
    let (site, victim) = (web.origin("site.test"), web.origin("victim.test"));
    let rdf = |body: String| Canned::ok("application/rdf+xml", body);
    web.set(
        "site.test",
        "/robots.txt",
        Canned::ok("text/plain", "User-agent: *\nAllow: /\n"),
    );
    web.set(
        "site.test",
        "/",
        Canned::ok("text/html", "<p>home, no links</p>"),
    );
    web.set(
        "site.test",
        "/robots.rdf",
        rdf(document(
            &site,
            &format!("{site}/robots.rdf"),
            Vec::new(),
            vec![
                part(&format!("{site}/robots-honest.rdf"), 1),
                part(&format!("{victim}/robots-elsewhere.rdf"), 2),
                part(&format!("{site}/robots-nested.rdf"), 3),
                part(&format!("{site}/robots-missing.rdf"), 4),
            ],
        )),
    );
    web.set(
        "site.test",
        "/robots-honest.rdf",
        rdf(document(
            &site,
            &format!("{site}/robots-honest.rdf"),
            vec![format!("{site}/only-listed.html")],
            Vec::new(),
        )),
    );
    web.set(
        "site.test",
        "/robots-nested.rdf",
        rdf(document(
            &site,
            &format!("{site}/robots-nested.rdf"),
            Vec::new(),
            vec![part(&format!("{victim}/robots-deeper.rdf"), 5)],
        )),
    );
    web.set(
        "site.test",
        "/only-listed.html",
        Canned::ok("text/html", "<p>named by the honest part alone</p>"),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let args = with_hosts(
        &web,
        &[
            "--seeds",
            &format!("{site}/"),
            "--coop",
            "meta",
            "--delay-min",
            "0.05",
            "--delay-factor",
            "0",
        ],
        &["site.test", "victim.test"],
    );
    let o = crawl(&out, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = web.log();
    assert!(
        log.iter()
            .any(|l| l.starts_with("site.test /only-listed.html")),
        "the honest part was read and its page fetched: {log:?}"
    );
    let steered = asked_of(&log, "victim.test");
    assert!(
        steered.is_empty(),
        "the index steered the crawler to: {steered:?}"
    );
    assert!(
        foreign_of(&out, &site) >= 1,
        "the part elsewhere counted as foreign"
    );
}

//! What each fuzz target does with its input, shared by the cargo-fuzz targets (nightly,
//! coverage-guided) and by `tests/fuzz_corpora.rs` (stable), which replays every corpus file
//! and every crash kept in `fuzz/regressions/`. Each function feeds untrusted bytes to one
//! parser the way the agent or the crawler would, and must return without panicking, within
//! its limits.

#![allow(dead_code)]

use std::time::Duration;
use url::Url;
use webcoop_protocol as p;

#[path = "links_reference.rs"]
mod links_reference;

/// Bytes as text, the way a parser of text input would see them.
fn text(data: &[u8]) -> &str {
    match std::str::from_utf8(data) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&data[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// Splits an input in two at its first byte (a length), for targets with two inputs.
fn two(data: &[u8]) -> (&[u8], &[u8]) {
    match data.split_first() {
        Some((n, rest)) => rest.split_at((*n as usize * 4).min(rest.len())),
        None => (&[], &[]),
    }
}

/// robots.rdf listings (RSS 1.0), as the crawler reads a site's.
pub(crate) fn robots_rdf(data: &[u8]) {
    let limits = p::robots_rdf::RdfLimits::default();
    if let Ok(doc) = p::robots_rdf::parse(data, &limits) {
        // What parses must write and parse again.
        let again = p::robots_rdf::write(&doc);
        assert!(p::robots_rdf::parse(again.as_bytes(), &limits).is_ok());
    }
}

/// Sitemaps and sitemap indexes, plain or gzip, strict and lenient, and a walk fed with them.
pub(crate) fn sitemap(data: &[u8]) {
    let limits = p::sitemap::SitemapLimits::default();
    for leniency in [
        p::sitemap::Leniency::Strict,
        p::sitemap::Leniency::SkipBadEntries,
    ] {
        let _ = p::sitemap::parse(data, &limits, leniency);
    }
    if let Ok(root) = Url::parse("http://site.test/sitemap.xml") {
        let mut walk = p::sitemap::SitemapWalk::new(root, p::sitemap::WalkLimits::default());
        while let Some(next) = walk.next_fetch() {
            let _ = walk.feed(&next, data);
            if walk.fetched() > 3 {
                break;
            }
        }
    }
}

/// The changes feed, as polled or pushed: Atom and CBOR.
pub(crate) fn changes_feed(data: &[u8]) {
    let limits = p::changes_feed::FeedLimits::default();
    let _ = p::changes_feed::parse(data, &limits);
    // The same changes as CBOR (a webcoop hub's deliveries): what parses writes and parses
    // again to the same feed.
    if let Ok(feed) = p::changes_feed::parse_cbor(data, &limits) {
        let again = p::changes_feed::write_cbor(&feed);
        let back = p::changes_feed::parse_cbor(&again, &limits);
        assert!(back.is_ok(), "{back:?}");
    }
}

/// dcz deltas and unified diffs against a base: the first byte says where the base ends.
pub(crate) fn delta(data: &[u8]) {
    let (base, delta) = two(data);
    let _ = p::delta::dcz::dictionary_of(delta);
    let _ = p::delta::dcz::decode(base, delta, 1 << 20);
    let _ = p::delta::unified::apply(base, text(delta));
}

/// WebSub: subscription forms, callback queries, signatures and compressed deliveries.
pub(crate) fn websub(data: &[u8]) {
    let _ = p::websub::SubscriptionRequest::from_form(data);
    let _ = p::websub::CallbackQuery::parse(text(data));
    let (sig, body) = two(data);
    let _ = p::websub::verify(b"secret", body, text(sig));
    for coding in [
        None,
        Some("gzip"),
        Some("zstd"),
        Some("br"),
        Some(text(sig)),
    ] {
        let _ = p::websub::decode_delivery(coding, body, 1 << 20);
    }
}

/// Header values and dates a server sends: HTTP-dates, W3C-DTF, entity tags, If-None-Match,
/// Available-Dictionary, Retry-After, Link, X-Robots-Tag, and what a document is.
pub(crate) fn http_values(data: &[u8]) {
    let t = text(data);
    let _ = p::dates::parse_w3cdtf(t);
    let _ = p::dates::parse_http_date(t);
    let _ = t.parse::<p::validator::EntityTag>();
    let _ = p::validator::IfNoneMatch::parse(t);
    let _ = p::validator::Sha256Digest::from_structured_field(t);
    let _ = p::sniff::sniff(data);
    let now = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
    let politeness = webcoop_crawler::parsers::Politeness::default();
    let _ = politeness.retry_after(Some(t), now);
    let _ = webcoop_crawler::parsers::robots_tag::parse(t.split('\n'), "webcoop-crawl");
    if let Ok(base) = Url::parse("http://site.test/.well-known/webcoop/changes") {
        let _ = webcoop_crawler::parsers::link_header(&base, t);
    }
    // Content-Usage, and a Web Bot Auth claim whose three headers are the input's lines.
    let _ = p::usage::Prefs::parse_aipref(t, &mut Vec::new());
    let _ = p::usage::Prefs::parse_content_signal(t, &mut Vec::new());
    let mut lines = t.splitn(3, '\n');
    let (a, b, c) = (
        lines.next().unwrap_or(""),
        lines.next().unwrap_or(""),
        lines.next().unwrap_or(""),
    );
    let headers = [
        ("signature-agent", a),
        ("signature-input", b),
        ("signature", c),
    ];
    let view = p::bot_auth::verify::RequestView {
        scheme: "https",
        authority: "site.test",
        method: "GET",
        path: "/",
        query: None,
        headers: &headers,
    };
    if let p::bot_auth::verify::Reading::Claim(claim) =
        p::bot_auth::verify::read(&view, "site.test", 1_800_000_000, true)
    {
        let _ = claim.verify(&p::bot_auth::directory::Directory::default(), 1_800_000_000);
    }
    let _ = p::bot_auth::directory::Directory::parse(data);
}

/// robots.txt as the crawler obeys it: rules, Crawl-delay into a politeness delay, pointers.
pub(crate) fn robots_txt(data: &[u8]) {
    use webcoop_crawler::parsers::Rules;
    let rules = Rules::from_fetch(Some(200), data, "webcoop-crawl");
    for path in ["/", "/private/x", "/a?b=c", "/%E2%82%AC"] {
        if let Ok(u) = Url::parse(&format!("http://site.test{path}")) {
            let _ = rules.allows(&u);
        }
    }
    let politeness = webcoop_crawler::parsers::Politeness::default();
    let delay = rules.crawl_delay();
    let _ = politeness.too_slow(delay);
    let wait = politeness.delay(delay, Duration::from_millis(5));
    // Whatever the file says, the wait is one the clock can add.
    assert!(wait <= webcoop_crawler::parsers::MAX_HONOURED_DELAY.max(politeness.max_delay));
    let _ = std::time::Instant::now().checked_add(wait).is_some();
    let _ = rules.sitemaps();
    for path in ["/", "/a/b", "/%E2%82%AC/"] {
        if let Ok(u) = Url::parse(&format!("http://site.test{path}")) {
            let _ = rules.usage_at(&u);
        }
    }
    if let Ok(robots) = Url::parse("http://site.test/robots.txt") {
        let _ = webcoop_crawler::parsers::robots_txt_pointers(&robots, data);
    }
}

/// URLs from links: resolution, normalisation, trap checks and scope.
pub(crate) fn urls(data: &[u8]) {
    use webcoop_crawler::parsers::url_norm;
    let t = text(data);
    let Ok(base) = Url::parse("http://site.test/dir/page.html?x=1") else {
        return;
    };
    let candidates = [url_norm::resolve(&base, t), Url::parse(t).ok()];
    for mut u in candidates.into_iter().flatten() {
        url_norm::normalize(&mut u);
        let once = u.clone();
        url_norm::normalize(&mut u);
        assert_eq!(once, u, "normalisation is idempotent");
        let _ = url_norm::check(&u, 2048);
        let _ = url_norm::is_dynamic(&u);
        let _ = url_norm::fingerprint(&u);
        let _ = url_norm::origin_key(&u);
        let policy = webcoop_crawler::parsers::LinkPolicy::new(
            webcoop_crawler::parsers::Scope::Host,
            std::slice::from_ref(&base),
            webcoop_crawler::parsers::Limits::default(),
        );
        let _ = policy.admit(&u, 3);
    }
}

/// Link extraction from HTML as a browser reads it (encoding sniffing, `<base>`, character
/// references, meta refresh, foreign content), served with no charset and with several: every
/// link and refresh it yields is an http(s) URL with a host and no fragment.
pub(crate) fn links(data: &[u8]) {
    let Ok(page) = Url::parse("http://site.test/dir/page.html") else {
        return;
    };
    for served in [
        None,
        Some("text/html; charset=windows-1252"),
        Some("text/html; charset=utf-16le"),
        Some("text/html; charset=shift_jis"),
        Some("text/html; charset=\"nonsense\""),
    ] {
        let found = webcoop_crawler::parsers::extract_links_served(&page, data, served);
        for u in found.links.iter().chain(found.refresh()) {
            assert!(
                matches!(u.scheme(), "http" | "https") && u.host().is_some(),
                "{u}"
            );
            assert!(u.fragment().is_none(), "{u}");
        }
    }
}

/// The crawler's scan held to a browser's tree (`links_reference.rs`: html5ever, the `url`
/// crate) on the same bytes, served as UTF-8 and as windows-1252: the same links and the same
/// refresh, or the input shows where the scan reads a page differently from a browser.
pub(crate) fn links_reference(data: &[u8]) {
    // Past 10,000 start tags the crawler hands no page to a tree builder (its time grows with
    // the square of the nesting; docs/CRAWLER.md): nothing to compare there.
    let tags = data
        .windows(2)
        .filter(|w| w[0] == b'<' && w[1].is_ascii_alphabetic())
        .count();
    if tags > 10_000 {
        return;
    }
    let Ok(page) = Url::parse("http://site.test/dir/page.html") else {
        return;
    };
    for (served, charset) in [
        ("text/html; charset=utf-8", encoding_rs::UTF_8),
        ("text/html; charset=windows-1252", encoding_rs::WINDOWS_1252),
    ] {
        let ours = webcoop_crawler::parsers::extract_links_served(&page, data, Some(served));
        let theirs = links_reference::read(&page, data, charset);
        let our_links: std::collections::BTreeSet<String> =
            ours.links.iter().map(Url::to_string).collect();
        assert_eq!(our_links, theirs.links, "links, served as {served}");
        assert_eq!(
            ours.refresh().map(Url::to_string),
            theirs.refresh,
            "refresh, served as {served}"
        );
    }
}

/// WARC replay after a crash: records read back from whatever the file holds, and the pages'
/// content decoded from them.
pub(crate) fn warc(data: &[u8]) {
    for rec in webcoop_crawler::archives::warc::records_in(data, 0) {
        let _ = webcoop_crawler::archives::warc::parse_http(&rec.block);
        let _ = webcoop_crawler::archives::warc::content_of(&rec, 1 << 20);
    }
    let _ = webcoop_crawler::archives::warc::parse_http(data);
    let _ = webcoop_crawler::parsers::decode(Some("gzip"), data, true, 1 << 20);
    let _ = webcoop_crawler::parsers::decode(Some("zstd"), data, true, 1 << 20);
    let _ = webcoop_crawler::parsers::decode(Some("br"), data, true, 1 << 20);
    let _ = webcoop_crawler::parsers::decode(Some("deflate"), data, true, 1 << 20);
}

/// A site's snapshot (IIPC WARC-zstd) from a site: its frames, dictionary and records read as
/// the crawler reads them, each record as the snapshot's `warcinfo` and as a page; and the
/// same bytes as a batch of changes (plain WARC records, the changes page first).
pub(crate) fn snapshot(data: &[u8]) {
    use webcoop_protocol::snapshot::{Entry, SnapshotInfo};
    use webcoop_protocol::warc::{ZstdWarcReader, record};
    let _ = record::parse(data);
    // A batch of changes is plain WARC records read the same way.
    let _ = webcoop_protocol::batch::parse(data, 1 << 20);
    let Ok(reader) = ZstdWarcReader::new(data, 1 << 20) else {
        return;
    };
    for located in reader.take(10_000) {
        let Ok(l) = located else {
            break;
        };
        let _ = SnapshotInfo::from_record(&l.record);
        let _ = Entry::from_record(l.record);
    }
}

/// What a target does with one input.
pub(crate) type Target = fn(&[u8]);

/// Every target, by name (the cargo-fuzz target names).
/// A web server's configuration and `.htaccess` files (anyone who may write into the docroot
/// writes the latter), read as nginx, Apache and `.htaccess` for what they hide from the judge.
pub(crate) fn server_config(data: &[u8]) {
    use webcoop_agent::{JudgeFacts, Site, TextKind, hidden_in_text};
    let judge = JudgeFacts {
        source: std::net::IpAddr::from([127, 83, 14, 201]),
        local: vec![std::net::IpAddr::from([192, 0, 2, 2])],
    };
    let spellings = ["/var/www/site".to_string(), "/srv/site/current".to_string()];
    let defines = [("SITE".to_string(), "/var/www/site".to_string())];
    let site = Site {
        docroot: std::path::Path::new("/var/www/site"),
        spellings: &spellings,
        base_path: "/",
        host: "www.example.org",
        trusted: &[],
        judge: &judge,
        vhosts: None,
        defines: &defines,
    };
    for kind in [TextKind::Nginx, TextKind::Apache, TextKind::Htaccess] {
        if let Ok(hidden) = hidden_in_text(text(data), kind, site) {
            for h in &hidden {
                let _ = h.to_string();
            }
        }
    }
}

pub(crate) const TARGETS: &[(&str, Target)] = &[
    ("robots_rdf", robots_rdf),
    ("sitemap", sitemap),
    ("changes_feed", changes_feed),
    ("delta", delta),
    ("websub", websub),
    ("http_values", http_values),
    ("robots_txt", robots_txt),
    ("urls", urls),
    ("links", links),
    ("links_reference", links_reference),
    ("warc", warc),
    ("snapshot", snapshot),
    ("server_config", server_config),
];

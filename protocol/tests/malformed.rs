//! Malformed and hostile inputs of every format end in a typed error naming what was wrong,
//! never a panic: truncation, wrong namespaces, bad values, entity abuse, decompression bombs,
//! deltas for the wrong base, and every limit.

#[path = "malformed/sitemaps.rs"]
mod sitemaps;

use chrono::{TimeZone, Utc};
use url::Url;
use webcoop_protocol::changes_feed::{self, ChangeEntry, ChangeKind, ChangesFeed, FeedLimits};
use webcoop_protocol::delta::{DeltaError, dcz, unified};
use webcoop_protocol::error::{Format, ParseError};
use webcoop_protocol::robots_rdf::{self, Channel, Extensions, RdfItem, RdfLimits, RobotsRdf};
use webcoop_protocol::sitemap::{self, Leniency, SitemapLimits, UrlEntry};
use webcoop_protocol::validator::Sha256Digest;

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn rdf(n: usize) -> String {
    let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
    robots_rdf::write(&RobotsRdf {
        channel: Channel {
            title: "e.org".into(),
            description: "d".into(),
            date: Some(t),
            seq: Some(1),
            ..Channel::new(u("https://e.org/robots.rdf"), u("https://e.org/"))
        },
        items: (0..n)
            .map(|i| RdfItem {
                url: u(&format!("https://e.org/{i}.html")),
                title: format!("/{i}.html"),
                modified: t,
                size: Some(10),
                content_type: Some("text/html".into()),
                etag: Some(Sha256Digest::of(&[i as u8]).etag()),
                delta: None,
                extensions: Extensions::default(),
            })
            .collect(),
    })
}

fn parse_rdf(xml: &str) -> Result<RobotsRdf, ParseError> {
    robots_rdf::parse(xml.as_bytes(), &RdfLimits::default())
}

#[test]
fn every_truncation_of_every_format_is_an_error_not_a_panic() {
    let rdf = rdf(3);
    let sitemap = sitemap::write_urlset(&[UrlEntry::new(u("https://e.org/a"), None)]);
    let feed = changes_feed::write(&ChangesFeed {
        id: "urn:x".into(),
        title: "t".into(),
        updated: Utc::now(),
        self_link: u("https://e.org/changes"),
        hub: None,
        next: None,
        head_seq: None,
        resync: None,
        content_usage: None,
        entries: vec![ChangeEntry::new(
            1,
            ChangeKind::Created,
            u("https://e.org/a"),
            Utc::now(),
        )],
    });
    for cut in 0..rdf.len() - 1 {
        let r = robots_rdf::parse(&rdf.as_bytes()[..cut], &RdfLimits::default());
        assert!(r.is_err(), "robots.rdf cut at {cut} parsed");
    }
    for cut in 0..sitemap.len() - 1 {
        assert!(
            sitemap::parse(
                &sitemap.as_bytes()[..cut],
                &SitemapLimits::default(),
                Leniency::Strict
            )
            .is_err()
        );
    }
    for cut in 0..feed.len() - 1 {
        assert!(changes_feed::parse(&feed.as_bytes()[..cut], &FeedLimits::default()).is_err());
    }
    // A cut inside the root reports the open element.
    let cut = &rdf[..rdf.len() / 2];
    let cut = &cut[..cut.rfind('>').unwrap() + 1];
    assert!(matches!(
        parse_rdf(cut),
        Err(ParseError::Truncated {
            format: Format::RobotsRdf,
            ..
        })
    ));
}

#[test]
fn the_thesis_printed_rdf_errors_are_refused() {
    let ok = rdf(1);
    // Fig. 6.5 of the thesis writes `rdf:rdf` and drops the `#` of the RDF namespace.
    let lowercase = ok
        .replace("<rdf:RDF", "<rdf:rdf")
        .replace("</rdf:RDF>", "</rdf:rdf>");
    assert!(matches!(
        parse_rdf(&lowercase),
        Err(ParseError::WrongRoot { .. })
    ));
    let no_hash = ok.replace("22-rdf-syntax-ns#", "22-rdf-syntax-ns");
    let err = parse_rdf(&no_hash).unwrap_err();
    assert!(matches!(err, ParseError::WrongRoot { .. }), "{err}");
    assert!(err.to_string().contains("22-rdf-syntax-ns"), "{err}");
    // ... and lists one item twice.
    let first_item = &ok[ok.find("<item ").unwrap()..ok.find("</rdf:RDF>").unwrap()];
    let twice = ok.replace("</rdf:RDF>", &format!("{first_item}</rdf:RDF>"));
    assert!(matches!(
        parse_rdf(&twice),
        Err(ParseError::Inconsistent { .. })
    ));
}

#[test]
fn rdf_structure_errors_name_the_problem() {
    let ok = rdf(2);
    let no_channel = {
        let start = ok.find("<channel").unwrap();
        let end = ok.find("</channel>").unwrap() + "</channel>\n".len();
        format!("{}{}", &ok[..start], &ok[end..])
    };
    assert!(matches!(
        parse_rdf(&no_channel),
        Err(ParseError::Missing {
            missing: "<channel>",
            ..
        })
    ));
    let unlisted = ok.replacen("<rdf:li rdf:resource=\"https://e.org/1.html\"/>", "", 1);
    let err = parse_rdf(&unlisted).unwrap_err();
    assert!(err.to_string().contains("https://e.org/1.html"), "{err}");
    let bad_date = ok.replacen(
        "<dc:date>2023-11-14T22:13:20Z</dc:date>\n  <dc:format>",
        "<dc:date>14/11/2023</dc:date>\n  <dc:format>",
        1,
    );
    let err = parse_rdf(&bad_date).unwrap_err();
    assert!(
        matches!(
            err,
            ParseError::BadValue {
                field: "<dc:date>",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("14/11/2023"));
    let no_date = ok.replacen(
        "  <dc:date>2023-11-14T22:13:20Z</dc:date>\n  <dc:format>",
        "  <dc:format>",
        1,
    );
    assert!(matches!(
        parse_rdf(&no_date),
        Err(ParseError::Missing {
            missing: "<dc:date>",
            ..
        })
    ));
    let bad_size = ok.replacen("<wc:size>10</wc:size>", "<wc:size>ten</wc:size>", 1);
    assert!(matches!(
        parse_rdf(&bad_size),
        Err(ParseError::BadValue {
            field: "<wc:size>",
            ..
        })
    ));
    let bad_etag = ok.replacen("<wc:etag>\"", "<wc:etag>", 1);
    assert!(matches!(
        parse_rdf(&bad_etag),
        Err(ParseError::BadValue {
            field: "<wc:etag>",
            ..
        })
    ));
    let bad_url = ok.replacen(
        "rdf:about=\"https://e.org/0.html\"",
        "rdf:about=\"not a url\"",
        1,
    );
    assert!(matches!(
        parse_rdf(&bad_url),
        Err(ParseError::BadValue {
            field: "rdf:about",
            ..
        })
    ));
    let bad_period = ok.replace("<sy:updatePeriod>daily", "<sy:updatePeriod>often");
    assert!(parse_rdf(&bad_period).is_err());
    let zero_freq = ok.replace("<sy:updateFrequency>1<", "<sy:updateFrequency>0<");
    assert!(parse_rdf(&zero_freq).is_err());
    for junk in [
        "",
        "   ",
        "not xml at all",
        "<a><b></a></b>",
        "\u{feff}",
        "<?xml version=\"1.0\"?>",
    ] {
        assert!(parse_rdf(junk).is_err(), "{junk:?}");
    }
    assert!(
        robots_rdf::parse(
            b"<rdf:RDF xmlns:rdf=\"x\">\xff\xfe</rdf:RDF>",
            &RdfLimits::default()
        )
        .is_err()
    );
    let undeclared = "<rdf:RDF><channel/></rdf:RDF>";
    assert!(matches!(parse_rdf(undeclared), Err(ParseError::Xml { .. })));
}

#[test]
fn entity_abuse_is_refused_without_expansion() {
    let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
"#;
    let rdf_doc = format!(
        "{laughs}<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns=\"http://purl.org/rss/1.0/\"><channel rdf:about=\"https://e.org/r\"><title>&lol9;</title></channel></rdf:RDF>"
    );
    assert_eq!(
        parse_rdf(&rdf_doc).unwrap_err(),
        ParseError::UndefinedEntity {
            format: Format::RobotsRdf,
            name: "lol9".into()
        }
    );
    let sitemap_doc = format!(
        "{laughs}<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>https://e.org/&lol9;</loc></url></urlset>"
    );
    assert!(matches!(
        sitemap::parse(
            sitemap_doc.as_bytes(),
            &SitemapLimits::default(),
            Leniency::SkipBadEntries
        ),
        Err(ParseError::UndefinedEntity { .. })
    ));
    let feed_doc =
        format!("{laughs}<feed xmlns=\"http://www.w3.org/2005/Atom\"><id>&lol9;</id></feed>");
    assert!(matches!(
        changes_feed::parse(feed_doc.as_bytes(), &FeedLimits::default()),
        Err(ParseError::UndefinedEntity { .. })
    ));
    // Entities in attributes, and external entities, are refused the same way.
    let attr = "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns=\"http://purl.org/rss/1.0/\"><channel rdf:about=\"&xxe;\"/></rdf:RDF>";
    assert!(matches!(
        parse_rdf(attr),
        Err(ParseError::UndefinedEntity { .. })
    ));
    let xxe = "<!DOCTYPE r [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>&xxe;</loc></url></urlset>";
    assert!(matches!(
        sitemap::parse(xxe.as_bytes(), &SitemapLimits::default(), Leniency::Strict),
        Err(ParseError::UndefinedEntity { .. })
    ));
}

#[test]
fn deep_nesting_and_huge_text_hit_limits() {
    let deep = format!(
        "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{}{}</urlset>",
        "<x>".repeat(100),
        "</x>".repeat(100)
    );
    assert!(matches!(
        sitemap::parse(deep.as_bytes(), &SitemapLimits::default(), Leniency::Strict),
        Err(ParseError::Limit {
            what: "element nesting",
            ..
        })
    ));
    let huge = format!(
        "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>https://e.org/{}</loc></url></urlset>",
        "a".repeat(100_000)
    );
    assert!(matches!(
        sitemap::parse(huge.as_bytes(), &SitemapLimits::default(), Leniency::Strict),
        Err(ParseError::Limit {
            what: "text of one element",
            ..
        })
    ));
}

#[test]
fn robots_rdf_size_and_item_limits() {
    let doc = rdf(10);
    let limits = RdfLimits {
        max_bytes: doc.len() as u64 - 1,
        max_items: 100,
    };
    assert!(matches!(
        robots_rdf::parse(doc.as_bytes(), &limits),
        Err(ParseError::Limit { .. })
    ));
    let limits = RdfLimits {
        max_bytes: 1 << 20,
        max_items: 9,
    };
    assert_eq!(
        robots_rdf::parse(doc.as_bytes(), &limits).unwrap_err(),
        ParseError::Limit {
            format: Format::RobotsRdf,
            what: "number of items",
            limit: 9
        }
    );
    assert_eq!(
        robots_rdf::parse(
            doc.as_bytes(),
            &RdfLimits {
                max_bytes: 1 << 20,
                max_items: 10
            }
        )
        .unwrap()
        .items
        .len(),
        10
    );
}

fn feed_xml(entry: &str) -> String {
    format!(
        "<feed xmlns=\"http://www.w3.org/2005/Atom\" xmlns:wc=\"https://webcoop.dev/ns/1.0#\"><id>urn:x</id><updated>2024-01-01T00:00:00Z</updated><link rel=\"self\" href=\"https://e.org/c\"/>{entry}</feed>"
    )
}

#[test]
fn changes_feed_errors_name_the_problem() {
    let good = "<entry><id>urn:x#1</id><updated>2024-01-01T00:00:00Z</updated><link href=\"https://e.org/a\"/><category scheme=\"https://webcoop.dev/ns/1.0#change\" term=\"created\"/><wc:seq>1</wc:seq></entry>";
    let parsed = changes_feed::parse(feed_xml(good).as_bytes(), &FeedLimits::default()).unwrap();
    assert_eq!(parsed.entries[0].kind, ChangeKind::Created);
    let cases = [
        (good.replace("<wc:seq>1</wc:seq>", ""), "<wc:seq>"),
        (good.replace("term=\"created\"", "term=\"renamed\""), "renamed"),
        (good.replace("<category scheme=\"https://webcoop.dev/ns/1.0#change\" term=\"created\"/>", ""), "category"),
        (good.replace("<link href=\"https://e.org/a\"/>", ""), "alternate"),
        (good.replace("2024-01-01T00:00:00Z", "Jan 1"), "Jan 1"),
        (good.replace("<wc:seq>1", "<wc:seq>-1"), "<wc:seq>"),
        (good.replace("<wc:seq>1</wc:seq>", "<wc:seq>1</wc:seq><wc:changed>1.5</wc:changed>"), "between 0 and 1"),
        (good.replace("<wc:seq>1</wc:seq>", "<wc:seq>1</wc:seq><wc:delta encoding=\"dcz\" base=\"&quot;a&quot;\">!!!</wc:delta>"), "<wc:delta>"),
        (good.replace("<wc:seq>1</wc:seq>", "<wc:seq>1</wc:seq><wc:delta encoding=\"vcdiff\" base=\"&quot;a&quot;\">AAAA</wc:delta>"), "vcdiff"),
        (good.replace("<wc:seq>1</wc:seq>", "<wc:seq>1</wc:seq><wc:delta encoding=\"dcz\">AAAA</wc:delta>"), "base"),
    ];
    for (entry, needle) in cases {
        let err =
            changes_feed::parse(feed_xml(&entry).as_bytes(), &FeedLimits::default()).unwrap_err();
        assert!(err.to_string().contains(needle), "{needle}: {err}");
    }
    let rss = format!("<rss>{good}</rss>");
    assert!(matches!(
        changes_feed::parse(rss.as_bytes(), &FeedLimits::default()),
        Err(ParseError::WrongRoot { .. })
    ));
    let no_self = feed_xml(good).replace("<link rel=\"self\" href=\"https://e.org/c\"/>", "");
    assert!(matches!(
        changes_feed::parse(no_self.as_bytes(), &FeedLimits::default()),
        Err(ParseError::Missing { .. })
    ));

    let doc = feed_xml(good);
    assert_eq!(
        changes_feed::parse(
            doc.as_bytes(),
            &FeedLimits {
                max_bytes: doc.len() as u64 - 1,
                ..FeedLimits::default()
            }
        )
        .unwrap_err(),
        ParseError::Limit {
            format: Format::ChangesFeed,
            what: "document size in bytes",
            limit: doc.len() as u64 - 1
        }
    );
    let many = feed_xml(&good.repeat(11));
    assert!(matches!(
        changes_feed::parse(
            many.as_bytes(),
            &FeedLimits {
                max_entries: 10,
                ..FeedLimits::default()
            }
        ),
        Err(ParseError::Limit {
            what: "number of entries",
            ..
        })
    ));
    let big_delta = good.replace(
        "<wc:seq>1</wc:seq>",
        &format!(
            "<wc:seq>1</wc:seq><wc:delta encoding=\"dcz\" base=\"&quot;a&quot;\">{}</wc:delta>",
            "A".repeat(4000)
        ),
    );
    assert!(matches!(
        changes_feed::parse(
            feed_xml(&big_delta).as_bytes(),
            &FeedLimits {
                max_inline_delta: 1000,
                ..FeedLimits::default()
            }
        ),
        Err(ParseError::Limit { .. })
    ));
}

#[test]
fn deltas_for_the_wrong_base_or_damaged_fail_cleanly() {
    let old = b"<html>version 1.0 of the page, with enough text to compress</html>".repeat(20);
    let new = String::from_utf8(old.clone())
        .unwrap()
        .replace("1.0", "1.1")
        .into_bytes();
    let delta = dcz::encode(&old, &new, 19).unwrap();
    let expected = Sha256Digest::of(&new).etag();
    assert_eq!(
        dcz::decode_verified(&old, &delta, &expected, 1 << 20).unwrap(),
        new
    );

    assert!(matches!(
        dcz::decode(&new, &delta, 1 << 20),
        Err(DeltaError::WrongBase { .. })
    ));
    assert!(matches!(
        dcz::decode(&old, &delta[..30], 1 << 20),
        Err(DeltaError::NotDcz(_))
    ));
    assert!(matches!(
        dcz::decode(&old, b"not a delta at all, just some bytes here.", 1 << 20),
        Err(DeltaError::NotDcz(_))
    ));
    assert!(matches!(
        dcz::decode(&old, &delta[..delta.len() - 5], 1 << 20),
        Err(DeltaError::Corrupt(_))
    ));
    let mut flipped = delta.clone();
    let n = flipped.len();
    flipped[n - 3] ^= 0xff; // inside the checksum
    assert!(matches!(
        dcz::decode(&old, &flipped, 1 << 20),
        Err(DeltaError::Corrupt(_))
    ));
    assert!(matches!(
        dcz::decode(&old, &delta, 100),
        Err(DeltaError::TooLarge { limit: 100 })
    ));
    let wrong = Sha256Digest::of(b"something else").etag();
    assert!(matches!(
        dcz::decode_verified(&old, &delta, &wrong, 1 << 20),
        Err(DeltaError::Mismatch { .. })
    ));
    let foreign = "\"5f2a-61a8\"".parse().unwrap();
    assert!(matches!(
        dcz::decode_verified(&old, &delta, &foreign, 1 << 20),
        Err(DeltaError::UnverifiableValidator(_))
    ));

    // A zstd bomb inside a dcz frame: 100 MB of zeros against a tiny base.
    let zeros = vec![0u8; 60 << 20];
    let bomb = dcz::encode(b"base", &zeros, 3).unwrap();
    assert!(bomb.len() < 100_000);
    assert!(matches!(
        dcz::decode(b"base", &bomb, 1 << 20),
        Err(DeltaError::TooLarge { .. })
    ));
    assert!(matches!(
        dcz::encode(&vec![0u8; (64 << 20) + 1], b"x", 3),
        Err(DeltaError::InputTooLarge { .. })
    ));

    let patch = unified::diff(b"a\nb\n", b"a\nc\n", "a", "b").unwrap();
    assert!(matches!(
        unified::apply_verified(b"a\nb\n", &patch, &wrong),
        Err(DeltaError::Mismatch { .. })
    ));
    assert!(matches!(
        unified::apply(b"x\ny\n", &patch),
        Err(DeltaError::PatchFailed(_))
    ));
}

#[test]
fn a_huge_or_hostile_content_usage_statement_is_kept_bounded_and_escaped() {
    let huge = "search=n, ".repeat(50_000);
    let xml = rdf(1).replacen(
        "<wc:seq>",
        &format!("<wc:contentUsage>{huge}</wc:contentUsage>\n  <wc:seq>"),
        1,
    );
    let doc = parse_rdf(&xml).unwrap();
    assert_eq!(doc.channel.content_usage.unwrap().chars().count(), 1024);
    // Markup in the statement is text, written escaped and read back as it was.
    let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
    let mut d = parse_rdf(&rdf(1)).unwrap();
    d.channel.content_usage = Some("search=n</wc:contentUsage><item>".into());
    d.channel.date = Some(t);
    let back = parse_rdf(&robots_rdf::write(&d)).unwrap();
    assert_eq!(
        back.channel.content_usage.as_deref(),
        Some("search=n</wc:contentUsage><item>")
    );
}

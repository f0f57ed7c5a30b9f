//! Malformed and hostile sitemaps end in a typed error naming what was wrong, never a panic:
//! entry limits, decompression bombs, strict and lenient reading, what the writer refuses, and
//! walks bounded in depth, cycles, count and scope.

use chrono::Utc;
use url::Url;
use webcoop_protocol::compression::gzip;
use webcoop_protocol::error::{Format, ParseError};
use webcoop_protocol::sitemap::{
    self, Leniency, SitemapDocument, SitemapLayout, SitemapLimits, SitemapWalk, UrlEntry,
    WalkLimits, WalkProblem,
};

fn u(s: &str) -> Url {
    Url::parse(s).unwrap()
}

fn urlset(n: usize) -> String {
    let entries: Vec<UrlEntry> = (0..n)
        .map(|i| UrlEntry::new(u(&format!("https://e.org/{i}")), None))
        .collect();
    sitemap::write_urlset(&entries)
}

#[test]
fn sitemap_entry_count_limit_is_the_protocols_by_default() {
    let at_limit = urlset(50_000);
    assert!(
        sitemap::parse(
            at_limit.as_bytes(),
            &SitemapLimits::default(),
            Leniency::Strict
        )
        .is_ok()
    );
    let over = urlset(50_001);
    assert_eq!(
        sitemap::parse(over.as_bytes(), &SitemapLimits::default(), Leniency::Strict).unwrap_err(),
        ParseError::Limit {
            format: Format::Sitemap,
            what: "number of entries",
            limit: 50_000
        }
    );
}

#[test]
fn a_gzip_bomb_is_an_error_not_an_allocation() {
    // 60 MB of one repeated entry gzips to a few hundred KB; uncompressed it is over 50 MB.
    let entry = "  <url>\n    <loc>https://e.org/a</loc>\n  </url>\n";
    let mut xml = String::from(sitemap::URLSET_HEAD);
    while xml.len() < 60_000_000 {
        xml.push_str(entry);
    }
    xml.push_str(sitemap::URLSET_TAIL);
    let bomb = gzip(xml.as_bytes(), 9);
    assert!(bomb.len() < 1_000_000, "{}", bomb.len());
    assert_eq!(
        sitemap::parse(
            &bomb,
            &SitemapLimits {
                max_entries: usize::MAX,
                max_bytes: sitemap::MAX_BYTES
            },
            Leniency::Strict
        )
        .unwrap_err(),
        ParseError::Limit {
            format: Format::Sitemap,
            what: "decompressed size in bytes",
            limit: sitemap::MAX_BYTES
        }
    );
    // The same size uncompressed is refused before parsing.
    assert!(matches!(
        sitemap::parse(xml.as_bytes(), &SitemapLimits::default(), Leniency::Strict),
        Err(ParseError::Limit {
            what: "size in bytes",
            ..
        })
    ));
    let mut corrupt = gzip(urlset(3).as_bytes(), 6);
    let n = corrupt.len();
    corrupt[n / 2] ^= 0x55;
    assert!(matches!(
        sitemap::parse(&corrupt, &SitemapLimits::default(), Leniency::Strict),
        Err(ParseError::Decompress { .. } | ParseError::Xml { .. })
    ));
    let truncated = &gzip(urlset(3).as_bytes(), 6)[..20];
    assert!(sitemap::parse(truncated, &SitemapLimits::default(), Leniency::Strict).is_err());
}

#[test]
fn strict_sitemaps_fail_and_lenient_ones_report() {
    let doc = "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">
      <url><loc>https://e.org/good</loc><lastmod>2024-01-01</lastmod><priority>0.3</priority></url>
      <url><loc>/relative</loc></url>
      <url><loc>ftp://e.org/file</loc></url>
      <url><lastmod>2024-01-01</lastmod></url>
      <url><loc>https://e.org/baddate</loc><lastmod>yesterday</lastmod><changefreq>sometimes</changefreq><priority>2</priority></url>
    </urlset>";
    let err =
        sitemap::parse(doc.as_bytes(), &SitemapLimits::default(), Leniency::Strict).unwrap_err();
    assert!(err.to_string().contains("/relative"), "{err}");
    let parsed = sitemap::parse(
        doc.as_bytes(),
        &SitemapLimits::default(),
        Leniency::SkipBadEntries,
    )
    .unwrap();
    let SitemapDocument::UrlSet(urls) = parsed.document else {
        panic!("not a urlset")
    };
    assert_eq!(
        urls.iter().map(|e| e.loc.as_str()).collect::<Vec<_>>(),
        ["https://e.org/good", "https://e.org/baddate"]
    );
    assert_eq!(urls[1].lastmod, None);
    assert_eq!(urls[1].changefreq, None);
    assert_eq!(urls[1].priority, None);
    let dropped: Vec<usize> = parsed
        .problems
        .iter()
        .filter(|p| p.entry_dropped)
        .map(|p| p.index)
        .collect();
    assert_eq!(dropped, [2, 3, 4]);
    assert_eq!(
        parsed
            .problems
            .iter()
            .filter(|p| !p.entry_dropped && p.index == 5)
            .count(),
        3
    );

    let long = format!(
        "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>https://e.org/{}</loc></url></urlset>",
        "a".repeat(2100)
    );
    let err =
        sitemap::parse(long.as_bytes(), &SitemapLimits::default(), Leniency::Strict).unwrap_err();
    assert!(err.to_string().contains("2,048"), "{err}");

    let old_ns = "<urlset xmlns=\"http://www.google.com/schemas/sitemap/0.84\"><url><loc>https://e.org/a</loc></url></urlset>";
    assert!(matches!(
        sitemap::parse(
            old_ns.as_bytes(),
            &SitemapLimits::default(),
            Leniency::Strict
        ),
        Err(ParseError::WrongRoot { .. })
    ));
    assert_eq!(
        sitemap::parse(
            old_ns.as_bytes(),
            &SitemapLimits::default(),
            Leniency::SkipBadEntries
        )
        .unwrap()
        .document,
        SitemapDocument::UrlSet(vec![UrlEntry::new(u("https://e.org/a"), None)])
    );
    let rss = "<rss version=\"2.0\"><channel/></rss>";
    assert!(matches!(
        sitemap::parse(
            rss.as_bytes(),
            &SitemapLimits::default(),
            Leniency::SkipBadEntries
        ),
        Err(ParseError::WrongRoot { .. })
    ));
}

#[test]
fn writer_refuses_what_cannot_be_a_sitemap() {
    let mut layout = SitemapLayout::new(u("https://e.org/"));
    layout.max_bytes = 200;
    let long = UrlEntry::new(u(&format!("https://e.org/{}", "x".repeat(300))), None);
    assert!(matches!(
        sitemap::build(&[long], &layout, Utc::now()),
        Err(sitemap::SitemapWriteError::EntryTooLarge { .. })
    ));
}

fn index_of(children: &[&str]) -> Vec<u8> {
    let refs: Vec<sitemap::SitemapRef> = children
        .iter()
        .map(|c| sitemap::SitemapRef {
            loc: u(c),
            lastmod: None,
        })
        .collect();
    sitemap::write_index(&refs).into_bytes()
}

#[test]
fn sitemap_walk_bounds_depth_cycles_count_and_scope() {
    let root = u("https://e.org/maps/index.xml");
    let mut walk = SitemapWalk::new(
        root.clone(),
        WalkLimits {
            max_depth: 2,
            max_sitemaps: 5,
            ..WalkLimits::default()
        },
    );
    // root lists itself (a cycle), a nested index, a urlset, another origin.
    let first = walk.next_fetch().unwrap();
    assert_eq!(first.url, root);
    let urls = walk.feed(
        &first,
        &index_of(&[
            "https://e.org/maps/index.xml",
            "https://e.org/maps/nested.xml",
            "https://e.org/maps/a.xml",
            "https://evil.example/x.xml",
        ]),
    );
    assert!(urls.is_empty());
    let nested = walk.next_fetch().unwrap();
    assert_eq!(
        (nested.url.as_str(), nested.depth),
        ("https://e.org/maps/nested.xml", 1)
    );
    walk.feed(
        &nested,
        &index_of(&["https://e.org/maps/deeper.xml", "https://e.org/maps/b.xml"]),
    );
    let a = walk.next_fetch().unwrap();
    let entries = vec![
        UrlEntry::new(u("https://e.org/maps/page1"), None),
        UrlEntry::new(u("https://e.org/other/page2"), None),
        UrlEntry::new(u("https://evil.example/maps/page3"), None),
    ];
    let got = walk.feed(&a, sitemap::write_urlset(&entries).as_bytes());
    assert_eq!(
        got,
        entries[..1].to_vec(),
        "only URLs under the root's directory are in scope"
    );
    let deeper = walk.next_fetch().unwrap();
    assert_eq!(deeper.depth, 2);
    walk.feed(&deeper, &index_of(&["https://e.org/maps/deepest.xml"]));
    assert!(walk.problems().contains(&WalkProblem::TooDeep {
        url: deeper.url.clone(),
        depth: 2
    }));
    let b = walk.next_fetch().unwrap();
    walk.fetch_failed(&b, "503");
    walk.feed(&b, b"garbage");
    assert!(walk.next_fetch().is_none());
    assert_eq!(walk.fetched(), 5);
    assert_eq!(walk.out_of_scope(), 3);
    assert!(
        walk.problems()
            .iter()
            .any(|p| matches!(p, WalkProblem::Unreadable { .. }))
    );
    assert!(
        walk.problems()
            .iter()
            .any(|p| matches!(p, WalkProblem::FetchFailed { reason, .. } if reason == "503"))
    );

    // The file limit stops a walk and says how much was left out.
    let mut walk = SitemapWalk::new(
        root,
        WalkLimits {
            max_sitemaps: 2,
            ..WalkLimits::default()
        },
    );
    let first = walk.next_fetch().unwrap();
    walk.feed(
        &first,
        &index_of(&[
            "https://e.org/maps/1.xml",
            "https://e.org/maps/2.xml",
            "https://e.org/maps/3.xml",
        ]),
    );
    assert!(walk.next_fetch().is_some());
    assert!(walk.next_fetch().is_none());
    assert!(
        walk.problems()
            .contains(&WalkProblem::TooManySitemaps { left_out: 2 })
    );
}

//! Feeds as WordPress, Hugo and the JSON Feed specification write them, and hostile ones.

use super::*;

fn base() -> Url {
    Url::parse("https://blog.example/feed/").unwrap()
}

/// WordPress 6's RSS 2.0 feed (`/feed/`), trimmed to two items, with its `atom:link`s.
const WORDPRESS_RSS: &str = r#"<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"
	xmlns:content="http://purl.org/rss/1.0/modules/content/"
	xmlns:wfw="http://wellformedweb.org/CommentAPI/"
	xmlns:dc="http://purl.org/dc/elements/1.1/"
	xmlns:atom="http://www.w3.org/2005/Atom"
	xmlns:sy="http://purl.org/rss/1.0/modules/syndication/"
	xmlns:slash="http://purl.org/rss/1.0/modules/slash/"
	>
<channel>
	<title>A blog</title>
	<atom:link href="https://blog.example/feed/" rel="self" type="application/rss+xml" />
	<atom:link rel="hub" href="https://pubsubhubbub.appspot.com" />
	<link>https://blog.example</link>
	<description>Just another WordPress site</description>
	<lastBuildDate>Sun, 06 Dec 2026 10:12:07 +0000</lastBuildDate>
	<language>en-US</language>
	<sy:updatePeriod>hourly</sy:updatePeriod>
	<sy:updateFrequency>1</sy:updateFrequency>
	<generator>https://wordpress.org/?v=6.1.1</generator>
	<item>
		<title>Second post</title>
		<link>https://blog.example/2026/12/06/second-post/</link>
		<comments>https://blog.example/2026/12/06/second-post/#respond</comments>
		<dc:creator><![CDATA[admin]]></dc:creator>
		<pubDate>Sun, 06 Dec 2026 10:12:07 +0000</pubDate>
		<category><![CDATA[Uncategorized]]></category>
		<guid isPermaLink="false">https://blog.example/?p=7</guid>
		<description><![CDATA[Text &#8230;]]></description>
		<wfw:commentRss>https://blog.example/2026/12/06/second-post/feed/</wfw:commentRss>
		<slash:comments>0</slash:comments>
	</item>
	<item>
		<title>Hello world!</title>
		<link>https://blog.example/2026/12/01/hello-world/</link>
		<pubDate>Tue, 01 Dec 2026 08:00:00 +0000</pubDate>
		<guid isPermaLink="false">https://blog.example/?p=1</guid>
	</item>
</channel>
</rss>
"#;

/// WordPress 6's Atom feed (`/feed/atom/`), one entry.
const WORDPRESS_ATOM: &str = r#"<?xml version="1.0" encoding="UTF-8"?><feed
  xmlns="http://www.w3.org/2005/Atom"
  xmlns:thr="http://purl.org/syndication/thread/1.0"
  xml:lang="en-US"
  >
	<title type="text">A blog</title>
	<subtitle type="text">Just another WordPress site</subtitle>
	<updated>2026-12-06T10:15:00Z</updated>
	<link rel="alternate" type="text/html" href="https://blog.example" />
	<id>https://blog.example/feed/atom/</id>
	<link rel="self" type="application/atom+xml" href="https://blog.example/feed/atom/" />
	<link rel="hub" href="https://hub.example/" />
	<entry>
		<author><name>admin</name></author>
		<title type="html"><![CDATA[Second post]]></title>
		<link rel="alternate" type="text/html" href="https://blog.example/2026/12/06/second-post/" />
		<id>https://blog.example/?p=7</id>
		<updated>2026-12-06T10:15:00Z</updated>
		<published>2026-12-06T10:12:07Z</published>
		<link rel="replies" type="text/html" href="https://blog.example/2026/12/06/second-post/#respond" thr:count="0" />
		<link rel="replies" type="application/atom+xml" href="https://blog.example/2026/12/06/second-post/feed/atom/" thr:count="0" />
		<thr:total>0</thr:total>
	</entry>
</feed>
"#;

/// Hugo's built-in RSS template (0.111), with relative-looking permalinks made absolute by
/// Hugo, and an item whose link is relative (a theme that forgot `absURL`).
const HUGO_RSS: &str = r#"<?xml version="1.0" encoding="utf-8" standalone="yes"?>
<rss version="2.0" xmlns:atom="http://www.w3.org/2005/Atom">
  <channel>
    <title>Docs</title>
    <link>https://blog.example/</link>
    <description>Recent content on Docs</description>
    <generator>Hugo -- gohugo.io</generator>
    <language>en-us</language>
    <lastBuildDate>Sat, 05 Dec 2026 18:00:00 +0000</lastBuildDate><atom:link href="https://blog.example/index.xml" rel="self" type="application/rss+xml" />
    <item>
      <title>Install</title>
      <link>https://blog.example/posts/install/</link>
      <pubDate>Sat, 05 Dec 2026 18:00:00 +0000</pubDate>
      <guid>https://blog.example/posts/install/</guid>
      <description>How to install</description>
    </item>
    <item>
      <title>Relative</title>
      <link>/posts/relative/</link>
      <pubDate>Fri, 04 Dec 2026 18:00:00 +0000</pubDate>
      <guid>/posts/relative/</guid>
      <description>A theme without absURL</description>
    </item>
  </channel>
</rss>
"#;

/// The JSON Feed 1.1 specification's shape, with a WebSub hub.
const JSON_FEED: &str = r#"{
    "version": "https://jsonfeed.org/version/1.1",
    "title": "My Example Feed",
    "home_page_url": "https://blog.example/",
    "feed_url": "https://blog.example/feed.json",
    "hubs": [{"type": "WebSub", "url": "https://hub.example/"}, {"type": "rssCloud", "url": "https://cloud.example/"}],
    "items": [
        {"id": "2", "content_text": "This is a second item.", "url": "https://blog.example/second-item",
         "date_published": "2026-12-01T10:00:00Z", "date_modified": "2026-12-06T09:30:00+01:00"},
        {"id": "1", "content_html": "<p>Hello, world!</p>", "url": "https://blog.example/initial-post"}
    ]
}"#;

/// RSS 1.0 (RDF), as older CMSes write it.
const RSS1: &str = r#"<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="https://blog.example/index.rdf">
    <title>Old</title><link>https://blog.example/</link><description>d</description>
    <items><rdf:Seq><rdf:li rdf:resource="https://blog.example/a"/></rdf:Seq></items>
  </channel>
  <item rdf:about="https://blog.example/a"><title>A</title><link>https://blog.example/a</link><dc:date>2026-12-02T08:00:00Z</dc:date></item>
</rdf:RDF>
"#;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[test]
fn wordpress_rss_names_its_pages_dates_topic_and_hub() {
    let f = parse(WORDPRESS_RSS.as_bytes(), &base()).unwrap();
    assert_eq!(f.format, FeedFormat::Rss2);
    assert_eq!(f.self_url.unwrap().as_str(), "https://blog.example/feed/");
    assert_eq!(
        f.hubs,
        [Url::parse("https://pubsubhubbub.appspot.com/").unwrap()]
    );
    assert_eq!(f.entries.len(), 2);
    let e = &f.entries[0];
    assert_eq!(
        e.url.as_str(),
        "https://blog.example/2026/12/06/second-post/"
    );
    assert_eq!(e.id, "https://blog.example/?p=7");
    assert_eq!(e.date(), Some(at("2026-12-06T10:12:07Z")));
    assert_eq!(f.skipped, 0);
    // An edit without a new date changes the entry's digest, and nothing else does.
    let again = parse(WORDPRESS_RSS.as_bytes(), &base()).unwrap();
    assert_eq!(again.entries[0].digest, e.digest);
    let edited = WORDPRESS_RSS.replace("Text &#8230;", "Edited text &#8230;");
    let edited = parse(edited.as_bytes(), &base()).unwrap();
    assert_ne!(edited.entries[0].digest, e.digest);
    assert_eq!(edited.entries[1].digest, f.entries[1].digest);
}

#[test]
fn wordpress_atom_gives_the_edit_date_and_not_the_replies_link() {
    let f = parse(WORDPRESS_ATOM.as_bytes(), &base()).unwrap();
    assert_eq!(f.format, FeedFormat::Atom);
    assert_eq!(
        f.self_url.unwrap().as_str(),
        "https://blog.example/feed/atom/"
    );
    assert_eq!(f.hubs[0].as_str(), "https://hub.example/");
    let e = &f.entries[0];
    assert_eq!(
        e.url.as_str(),
        "https://blog.example/2026/12/06/second-post/"
    );
    assert_eq!(e.modified, Some(at("2026-12-06T10:15:00Z")));
    assert_eq!(e.published, Some(at("2026-12-06T10:12:07Z")));
}

#[test]
fn hugo_rss_links_resolve_against_the_feed() {
    let f = parse(
        HUGO_RSS.as_bytes(),
        &Url::parse("https://blog.example/index.xml").unwrap(),
    )
    .unwrap();
    let urls: Vec<&str> = f.entries.iter().map(|e| e.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://blog.example/posts/install/",
            "https://blog.example/posts/relative/"
        ]
    );
    assert!(f.hubs.is_empty());
}

#[test]
fn json_feed_names_its_websub_hubs_only_and_its_edit_dates() {
    let f = parse(JSON_FEED.as_bytes(), &base()).unwrap();
    assert_eq!(f.format, FeedFormat::Json);
    assert_eq!(
        f.self_url.unwrap().as_str(),
        "https://blog.example/feed.json"
    );
    assert_eq!(f.hubs, [Url::parse("https://hub.example/").unwrap()]);
    assert_eq!(f.entries[0].modified, Some(at("2026-12-06T08:30:00Z")));
    assert_eq!(
        f.entries[1].url.as_str(),
        "https://blog.example/initial-post"
    );
    assert_eq!(f.entries[1].date(), None);
}

#[test]
fn rss1_is_read() {
    let f = parse(RSS1.as_bytes(), &base()).unwrap();
    assert_eq!(f.format, FeedFormat::Rss1);
    assert_eq!(f.entries[0].url.as_str(), "https://blog.example/a");
    assert_eq!(f.entries[0].date(), Some(at("2026-12-02T08:00:00Z")));
}

#[test]
fn feed_media_types_are_known() {
    for t in [
        "application/rss+xml",
        "application/atom+xml; charset=UTF-8",
        "Application/Feed+JSON",
        "application/rdf+xml",
    ] {
        assert!(is_feed_media_type(t), "{t}");
    }
    for t in ["text/html", "application/json", "text/xml", ""] {
        assert!(!is_feed_media_type(t), "{t}");
    }
}

#[test]
fn hostile_feeds_are_refused_by_name_or_read_without_what_cannot_be_a_page() {
    // Not a feed, truncated, empty, binary.
    for body in [
        &b"<html><body>hi</body></html>"[..],
        &WORDPRESS_ATOM.as_bytes()[..400],
        b"",
        b"\x00\xff\xfe garbage",
        b"{\"version\": \"https://jsonfeed.org/version/9\", \"items\": []}",
    ] {
        let e = parse(body, &base()).unwrap_err();
        assert!(matches!(e, FeedError::NotAFeed(_)), "{e}");
    }
    // Too large, before any parsing.
    let big = vec![b' '; MAX_BYTES + 1];
    assert_eq!(
        parse(&big, &base()).unwrap_err(),
        FeedError::TooLarge {
            bytes: MAX_BYTES + 1
        }
    );
    // Entities declared in a DTD are never expanded (a billion laughs ends at once).
    let laughs = r#"<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;"><!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">]>
<rss version="2.0"><channel><title>&h;</title><link>https://blog.example/</link><description>x</description>
<item><title>&h;</title><link>https://blog.example/a</link></item></channel></rss>"#;
    let started = std::time::Instant::now();
    if let Ok(f) = parse(laughs.as_bytes(), &base()) {
        assert!(f.entries.len() <= 1);
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Links that are no web pages, and an identity too long, are read past and counted.
    let odd = format!(
        r#"<rss version="2.0"><channel><title>t</title><link>https://blog.example/</link><description>d</description>
<item><title>js</title><link>javascript:alert(1)</link><guid isPermaLink="false">x1</guid></item>
<item><title>mail</title><link>mailto:a@b.example</link><guid isPermaLink="false">x2</guid></item>
<item><title>long</title><link>https://blog.example/long</link><guid isPermaLink="false">{}</guid></item>
<item><title>ok</title><link>https://blog.example/ok</link></item>
</channel></rss>"#,
        "i".repeat(5_000)
    );
    let f = parse(odd.as_bytes(), &base()).unwrap();
    let urls: Vec<&str> = f.entries.iter().map(|e| e.url.as_str()).collect();
    assert_eq!(urls, ["https://blog.example/ok"]);
    assert_eq!(f.skipped, 3);
}

#[test]
fn a_feed_of_too_many_entries_is_refused_not_read_in_part() {
    let mut body = String::from(
        r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><id>urn:x</id><updated>2026-12-01T00:00:00Z</updated>"#,
    );
    for i in 0..=MAX_ENTRIES {
        body.push_str(&format!(
            "<entry><id>urn:{i}</id><title>e</title><updated>2026-12-01T00:00:00Z</updated><link href=\"/p/{i}\"/></entry>"
        ));
    }
    body.push_str("</feed>");
    assert_eq!(
        parse(body.as_bytes(), &base()).unwrap_err(),
        FeedError::TooManyEntries {
            entries: MAX_ENTRIES + 1
        }
    );
}

#[test]
fn a_feed_is_told_from_a_sitemap_by_its_first_element() {
    use super::sniff;
    assert!(sniff(
        b"<?xml version=\"1.0\"?>\n<!-- generator --><rss version=\"2.0\"><channel/></rss>"
    ));
    assert!(sniff(
        b"\xEF\xBB\xBF<feed xmlns=\"http://www.w3.org/2005/Atom\"></feed>"
    ));
    assert!(sniff(
        b"<atom:feed xmlns:atom=\"http://www.w3.org/2005/Atom\"/>"
    ));
    assert!(sniff(b"<rdf:RDF xmlns:rdf=\"x\"></rdf:RDF>"));
    assert!(sniff(
        b"  {\"version\": \"https://jsonfeed.org/version/1.1\"}"
    ));
    assert!(!sniff(
        b"<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"/>"
    ));
    assert!(!sniff(b"<sitemapindex/>"));
    assert!(!sniff(b"<feedback/>"));
    assert!(!sniff(b"https://example.com/a\nhttps://example.com/b\n"));
    assert!(!sniff(b""));
    assert!(!sniff(b"<?xml unterminated"));
}

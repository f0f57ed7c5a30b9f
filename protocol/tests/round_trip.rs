//! Every writer/parser pair reads back what it wrote, for awkward inputs: IRIs, `&`, spaces,
//! quotes, control characters, very long URLs, fractional seconds.

use chrono::{DateTime, TimeZone, Utc};
use proptest::prelude::*;
use url::Url;
use webcoop_protocol::changes_feed::{
    self, ChangeEntry, ChangeKind, ChangesFeed, FeedLimits, InlineDelta, Resync,
};
use webcoop_protocol::dates::{format_http_date, format_w3cdtf, parse_http_date, parse_w3cdtf};
use webcoop_protocol::delta::{self, DeltaEncoding, DeltaPlan, dcz, unified};
use webcoop_protocol::robots_rdf::{
    self, Channel, Extensions, RdfItem, RdfLimits, RobotsRdf, UpdatePeriod,
};
use webcoop_protocol::sitemap::{
    self, ChangeFreq, Leniency, SitemapDocument, SitemapLayout, SitemapLimits, SitemapRef, UrlEntry,
};
use webcoop_protocol::validator::{EntityTag, Sha256Digest};
use webcoop_protocol::websub::{Mode, SubscriptionRequest};
use webcoop_protocol::xml_safe;

fn time() -> impl Strategy<Value = DateTime<Utc>> {
    // 1993 to 2100, whole seconds or with milli/nanoseconds.
    (
        725_846_400i64..4_102_444_800,
        prop_oneof![Just(0u32), 0u32..1000, 0u32..1_000_000_000],
    )
        .prop_map(|(secs, frac)| {
            let nanos = if frac < 1000 { frac * 1_000_000 } else { frac };
            Utc.timestamp_opt(secs, nanos).single().unwrap()
        })
}

fn host() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "https://example.org/",
        "http://bücher.example/",
        "http://127.0.0.1:8080/",
        "https://[::1]/",
        "https://sub.domain.example.co.uk/base/",
    ])
}

/// URLs made by joining awkward text to a base: spaces, `&`, quotes, `<>`, percent signs,
/// non-ASCII, queries, fragments and occasionally a very long path.
fn url() -> impl Strategy<Value = Url> {
    let path = prop_oneof![
        9 => "[a-zA-Z0-9 &<>\"'%/?=._~é日本-]{0,40}",
        1 => "[a-z/]{1000,3000}",
    ];
    (host(), path).prop_filter_map("joinable", |(h, p)| Url::parse(h).ok()?.join(&p).ok())
}

/// Any string; what XML cannot carry is replaced on writing, so compare with `xml_safe`.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,30}",
        prop::collection::vec(
            prop_oneof![
                any::<char>(),
                Just('\r'),
                Just('\n'),
                Just('\t'),
                Just('&'),
                Just('<'),
                Just(']')
            ],
            0..30
        )
        .prop_map(|v| v.into_iter().collect()),
    ]
}

fn etag() -> impl Strategy<Value = EntityTag> {
    prop_oneof![
        any::<[u8; 8]>().prop_map(|b| Sha256Digest::of(&b).etag()),
        "[!#-~]{0,20}".prop_map(|t| EntityTag::strong(t).unwrap()),
        "[!#-~]{0,20}".prop_map(|t| EntityTag { weak: true, tag: t }),
    ]
}

fn content_type() -> impl Strategy<Value = String> {
    "[a-z]{1,10}/[a-z0-9.+-]{1,15}(; charset=[a-z0-9-]{1,10})?"
}

fn rdf_item() -> impl Strategy<Value = RdfItem> {
    (
        url(),
        text(),
        time(),
        prop::option::of(any::<u64>()),
        prop::option::of(content_type()),
        prop::option::of(etag()),
        prop::option::of(url()),
        prop::collection::btree_map("[a-z][a-z0-9_.-]{0,8}", text(), 0..3),
    )
        .prop_map(
            |(url, title, modified, size, content_type, etag, delta, ext)| {
                let mut extensions = Extensions::default();
                for (k, v) in ext {
                    let _ = extensions.insert(&k, v);
                }
                RdfItem {
                    url,
                    title,
                    modified,
                    size,
                    content_type,
                    etag,
                    delta,
                    extensions,
                }
            },
        )
}

fn safe_rdf(mut doc: RobotsRdf) -> RobotsRdf {
    doc.channel.title = xml_safe(&doc.channel.title);
    doc.channel.description = xml_safe(&doc.channel.description);
    doc.channel.update_frequency = doc.channel.update_frequency.max(1);
    for item in &mut doc.items {
        item.title = xml_safe(&item.title);
        let mut ext = Extensions::default();
        for (k, v) in item.extensions.iter() {
            ext.insert(k, xml_safe(v)).unwrap();
        }
        item.extensions = ext;
    }
    doc
}

fn update_period() -> impl Strategy<Value = UpdatePeriod> {
    prop::sample::select(vec![
        UpdatePeriod::Hourly,
        UpdatePeriod::Daily,
        UpdatePeriod::Weekly,
        UpdatePeriod::Monthly,
        UpdatePeriod::Yearly,
    ])
}

fn channel() -> impl Strategy<Value = Channel> {
    (
        (url(), text(), url(), text(), prop::option::of(time())),
        (update_period(), 1u32..10_000, prop::option::of(time())),
        (
            prop::option::of(url()),
            prop::option::of(url()),
            prop::option::of(url()),
            prop::option::of(any::<u64>()),
        ),
    )
        .prop_map(
            |(
                (about, title, link, description, date),
                (update_period, update_frequency, update_base),
                (changes, hub, snapshot, seq),
            )| Channel {
                about,
                title,
                link,
                description,
                date,
                update_period,
                update_frequency,
                update_base,
                changes,
                hub,
                // Written only beside the snapshot it describes.
                snapshot_max_record: snapshot.as_ref().and(seq).map(|n| n % (64 << 20)),
                complete: seq.is_some_and(|n| n % 2 == 0),
                snapshot,
                seq,
                content_usage: seq
                    .map(|n| format!("search=y, train-ai={}", if n % 2 == 0 { "n" } else { "y" })),
                parts: Vec::new(),
            },
        )
}

fn dedup_by_url(items: Vec<RdfItem>) -> Vec<RdfItem> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|i| seen.insert(i.url.to_string()))
        .collect()
}

fn url_entry() -> impl Strategy<Value = UrlEntry> {
    (
        url().prop_filter("sitemaps hold http(s) URLs under 2,048 characters", |u| {
            u.as_str().chars().count() < 2048
        }),
        prop::option::of(time()),
        prop::option::of(prop::sample::select(vec![
            ChangeFreq::Always,
            ChangeFreq::Hourly,
            ChangeFreq::Daily,
            ChangeFreq::Weekly,
            ChangeFreq::Monthly,
            ChangeFreq::Yearly,
            ChangeFreq::Never,
        ])),
        prop::option::of(0.0f32..=1.0),
    )
        .prop_map(|(loc, lastmod, changefreq, priority)| UrlEntry {
            loc,
            lastmod,
            changefreq,
            priority,
        })
}

fn change_entry() -> impl Strategy<Value = ChangeEntry> {
    (
        any::<u64>(),
        prop::sample::select(vec![
            ChangeKind::Created,
            ChangeKind::Modified,
            ChangeKind::Deleted,
        ]),
        url(),
        time(),
        (
            prop::option::of(etag()),
            prop::option::of(etag()),
            prop::option::of(any::<u64>()),
        ),
        (
            prop::option::of(content_type()),
            prop::option::of(0.0f64..=1.0),
            prop::option::of(0.0f64..=1.0),
        ),
        prop::option::of((
            etag(),
            prop::collection::vec(any::<u8>(), 0..300),
            any::<bool>(),
        )),
    )
        .prop_map(
            |(
                seq,
                kind,
                url,
                time,
                (etag, previous_etag, size),
                (content_type, changed_fraction, popularity),
                delta,
            )| ChangeEntry {
                seq,
                kind,
                url,
                time,
                etag,
                previous_etag,
                size,
                content_type,
                changed_fraction,
                delta: delta.map(|(base, data, dcz)| InlineDelta {
                    encoding: if dcz {
                        DeltaEncoding::Dcz
                    } else {
                        DeltaEncoding::Unified
                    },
                    base,
                    data,
                }),
                popularity,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn robots_rdf_round_trips(channel in channel(), items in prop::collection::vec(rdf_item(), 0..12)) {
        let doc = safe_rdf(RobotsRdf { channel, items: dedup_by_url(items) });
        let xml = robots_rdf::write(&doc);
        let back = robots_rdf::parse(xml.as_bytes(), &RdfLimits::default()).map_err(|e| TestCaseError::fail(format!("{e}\n{xml}")))?;
        prop_assert_eq!(back, doc);
    }

    #[test]
    fn urlset_round_trips(entries in prop::collection::vec(url_entry(), 0..20)) {
        let xml = sitemap::write_urlset(&entries);
        let back = sitemap::parse(xml.as_bytes(), &SitemapLimits::default(), Leniency::Strict).map_err(|e| TestCaseError::fail(format!("{e}\n{xml}")))?;
        prop_assert!(back.problems.is_empty());
        prop_assert_eq!(back.document, SitemapDocument::UrlSet(entries));
    }

    #[test]
    fn sitemap_index_round_trips(refs in prop::collection::vec((url(), prop::option::of(time())), 0..20)) {
        let refs: Vec<SitemapRef> = refs.into_iter()
            .filter(|(u, _)| u.as_str().chars().count() < 2048)
            .map(|(loc, lastmod)| SitemapRef { loc, lastmod }).collect();
        let xml = sitemap::write_index(&refs);
        let back = sitemap::parse(xml.as_bytes(), &SitemapLimits::default(), Leniency::Strict).unwrap();
        prop_assert_eq!(back.document, SitemapDocument::Index(refs));
    }

    #[test]
    fn split_sitemap_sets_keep_every_entry_in_order_within_limits(
        entries in prop::collection::vec(url_entry(), 0..120),
        max_urls in 1usize..30,
        max_bytes in 6_000u64..20_000,
    ) {
        let mut layout = SitemapLayout::new(Url::parse("https://example.org/maps/").unwrap());
        layout.max_urls = max_urls;
        layout.max_bytes = max_bytes;
        let set = sitemap::build(&entries, &layout, Utc::now()).unwrap();
        let limits = SitemapLimits { max_entries: max_urls, max_bytes };
        let root = sitemap::parse(&set.root.bytes, &SitemapLimits::default(), Leniency::Strict).unwrap().document;
        let mut back = Vec::new();
        match root {
            SitemapDocument::UrlSet(urls) => {
                prop_assert!(set.parts.is_empty());
                prop_assert!(set.root.bytes.len() as u64 <= max_bytes);
                back = urls;
            }
            SitemapDocument::Index(refs) => {
                prop_assert_eq!(refs.len(), set.parts.len());
                for (r, part) in refs.iter().zip(&set.parts) {
                    prop_assert_eq!(&r.loc, &part.url);
                    // Each part parses under the layout's own limits, after gunzip.
                    match sitemap::parse(&part.bytes, &limits, Leniency::Strict).unwrap().document {
                        SitemapDocument::UrlSet(urls) => {
                            prop_assert_eq!(r.lastmod.is_some(), true);
                            back.extend(urls)
                        }
                        SitemapDocument::Index(_) => prop_assert!(false, "a part is an index"),
                    }
                }
            }
        }
        prop_assert_eq!(back, entries);
    }

    #[test]
    fn changes_feed_round_trips(
        entries in prop::collection::vec(change_entry(), 0..10),
        (id, title) in ("[a-z:/.]{1,30}", text()),
        updated in time(),
        (self_link, hub, next) in (url(), prop::option::of(url()), prop::option::of(url())),
        head_seq in prop::option::of(any::<u64>()),
        resync in prop::option::of((any::<u64>(), url(), prop::option::of(url()))),
    ) {
        let feed = ChangesFeed {
            id,
            title: xml_safe(&title),
            updated,
            self_link,
            hub,
            next,
            head_seq,
            resync: resync.map(|(since, listing, snapshot)| Resync { since, listing, snapshot }),
            content_usage: None,
            entries,
        };
        let xml = changes_feed::write(&feed);
        let back = changes_feed::parse(xml.as_bytes(), &FeedLimits::default()).map_err(|e| TestCaseError::fail(format!("{e}\n{xml}")))?;
        prop_assert_eq!(back, feed);
    }

    #[test]
    fn dates_round_trip(t in time()) {
        prop_assert_eq!(parse_w3cdtf(&format_w3cdtf(t)).unwrap(), t);
        let whole = Utc.timestamp_opt(t.timestamp(), 0).single().unwrap();
        prop_assert_eq!(parse_http_date(&format_http_date(t)).unwrap(), whole);
    }

    #[test]
    fn entity_tags_round_trip(tag in etag()) {
        prop_assert_eq!(tag.to_string().parse::<EntityTag>().unwrap(), tag);
    }

    #[test]
    fn subscription_requests_round_trip(
        callback in url().prop_filter("no fragment", |u| u.fragment().is_none()),
        topic in url().prop_filter("no fragment", |u| u.fragment().is_none()),
        subscribe in any::<bool>(),
        lease in prop::option::of(1u64..u64::MAX),
        secret in prop::option::of("\\PC{1,60}".prop_filter("< 200 bytes", |s| s.len() < 200)),
    ) {
        let req = SubscriptionRequest {
            mode: if subscribe { Mode::Subscribe } else { Mode::Unsubscribe },
            callback,
            topic,
            lease_seconds: lease,
            secret,
        };
        prop_assert_eq!(SubscriptionRequest::from_form(req.to_form().as_bytes()).unwrap(), req);
    }
}

/// A new version made from an old one by a few edits, as most real changes are.
fn edited() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    (
        prop::collection::vec(any::<u8>(), 0..4000),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::collection::vec(any::<u8>(), 0..20),
                0usize..20,
            ),
            0..5,
        ),
    )
        .prop_map(|(old, edits)| {
            let mut new = old.clone();
            for (at, insert, remove) in edits {
                let pos = if new.is_empty() {
                    0
                } else {
                    at.index(new.len())
                };
                let end = (pos + remove).min(new.len());
                new.splice(pos..end, insert);
            }
            (old, new)
        })
}

/// Line-oriented text edits, including lines without a final newline and CRLF.
fn text_edited() -> impl Strategy<Value = (String, String)> {
    let line = prop_oneof![
        "[a-z ]{0,12}\n",
        "[a-z]{0,12}\r\n",
        Just(String::from("\n")),
        "é[a-z]{0,5}\n"
    ];
    (
        prop::collection::vec(line.clone(), 0..30),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::collection::vec(line, 0..3),
                0usize..3,
            ),
            0..4,
        ),
        "[a-z]{0,5}",
    )
        .prop_map(|(lines, edits, tail)| {
            let mut new = lines.clone();
            for (at, insert, remove) in edits {
                let pos = if new.is_empty() {
                    0
                } else {
                    at.index(new.len())
                };
                let end = (pos + remove).min(new.len());
                new.splice(pos..end, insert);
            }
            (lines.concat() + &tail, new.concat())
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn dcz_decodes_to_the_new_version_and_only_against_its_base((old, new) in edited()) {
        let delta = dcz::encode(&old, &new, 3).unwrap();
        prop_assert_eq!(dcz::dictionary_of(&delta).unwrap(), Sha256Digest::of(&old));
        let expected = Sha256Digest::of(&new).etag();
        prop_assert_eq!(dcz::decode_verified(&old, &delta, &expected, new.len() as u64).unwrap(), new.clone());
        let mut other = old.clone();
        other.push(0);
        let wrong_base = matches!(dcz::decode(&other, &delta, 1 << 20), Err(delta::DeltaError::WrongBase { .. }));
        prop_assert!(wrong_base);
    }

    #[test]
    fn unified_diffs_apply_to_the_new_version((old, new) in text_edited()) {
        let diff = unified::diff(old.as_bytes(), new.as_bytes(), "a/x", "b/x").unwrap();
        let expected = Sha256Digest::of(new.as_bytes()).etag();
        prop_assert_eq!(unified::apply_verified(old.as_bytes(), &diff, &expected).unwrap(), new.into_bytes());
    }

    #[test]
    fn a_planned_delta_is_smaller_than_the_full_body_or_not_sent((old, new) in edited()) {
        match delta::plan(DeltaEncoding::Dcz, &old, &new, 3).unwrap() {
            DeltaPlan::Delta(d) => {
                let full = webcoop_protocol::compression::zstd_compress(&new, 3).len();
                prop_assert!(d.wire_len < full);
                prop_assert_eq!(dcz::decode(&old, &d.body, 1 << 20).unwrap(), new);
            }
            DeltaPlan::NotWorthIt { delta_wire_len, full_wire_len } => prop_assert!(delta_wire_len >= full_wire_len),
        }
    }
}

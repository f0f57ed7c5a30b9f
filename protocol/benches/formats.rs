//! Parse and write throughput of the big documents: a 50,000-item robots.rdf and a
//! 50,000-URL sitemap (the protocol's per-file limit), and delta encoding of a typical page.

use chrono::{TimeZone, Utc};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use url::Url;
use webcoop_protocol::delta::{dcz, summarize, unified};
use webcoop_protocol::robots_rdf::{
    self, Channel, Extensions, RdfItem, RdfLimits, RobotsRdf, UpdatePeriod,
};
use webcoop_protocol::sitemap::{self, Leniency, SitemapLimits, UrlEntry};
use webcoop_protocol::validator::Sha256Digest;

const N: usize = 50_000;

fn rdf_doc() -> RobotsRdf {
    let base = Url::parse("https://docs.example.org/").unwrap();
    let t = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
    RobotsRdf {
        channel: Channel {
            about: base.join("robots.rdf").unwrap(),
            title: "docs.example.org".into(),
            link: base.clone(),
            description: "bench".into(),
            date: Some(t),
            update_period: UpdatePeriod::Hourly,
            update_frequency: 1,
            update_base: None,
            changes: Some(base.join(".well-known/webcoop/changes").unwrap()),
            hub: None,
            snapshot: None,
            snapshot_max_record: None,
            complete: false,
            seq: Some(N as u64),
            content_usage: None,
            parts: Vec::new(),
        },
        items: (0..N)
            .map(|i| {
                let url = base
                    .join(&format!("library/section-{}/page-{i}.html", i % 97))
                    .unwrap();
                RdfItem {
                    title: url.path().to_string(),
                    delta: Some(
                        base.join(&format!(".well-known/webcoop/delta{}", url.path()))
                            .unwrap(),
                    ),
                    url,
                    modified: t + chrono::Duration::seconds(i as i64),
                    size: Some(10_000 + i as u64),
                    content_type: Some("text/html".into()),
                    etag: Some(Sha256Digest::of(&i.to_le_bytes()).etag()),
                    extensions: Extensions::default(),
                }
            })
            .collect(),
    }
}

fn formats(c: &mut Criterion) {
    let doc = rdf_doc();
    let xml = robots_rdf::write(&doc);
    let mut group = c.benchmark_group("robots.rdf 50k items");
    group.sample_size(10);
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("write", |b| {
        b.iter(|| black_box(robots_rdf::write(black_box(&doc))))
    });
    group.bench_function("parse", |b| {
        b.iter(|| {
            black_box(robots_rdf::parse(black_box(xml.as_bytes()), &RdfLimits::default()).unwrap())
        })
    });
    group.finish();

    let entries: Vec<UrlEntry> = doc
        .items
        .iter()
        .map(|i| UrlEntry::new(i.url.clone(), Some(i.modified)))
        .collect();
    let xml = sitemap::write_urlset(&entries);
    let gz = webcoop_protocol::compression::gzip(xml.as_bytes(), 6);
    let mut group = c.benchmark_group("sitemap 50k urls");
    group.sample_size(10);
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("write", |b| {
        b.iter(|| black_box(sitemap::write_urlset(black_box(&entries))))
    });
    group.bench_function("parse", |b| {
        b.iter(|| {
            black_box(
                sitemap::parse(
                    black_box(xml.as_bytes()),
                    &SitemapLimits::default(),
                    Leniency::Strict,
                )
                .unwrap(),
            )
        })
    });
    group.bench_function("parse gzip", |b| {
        b.iter(|| {
            black_box(
                sitemap::parse(black_box(&gz), &SitemapLimits::default(), Leniency::Strict)
                    .unwrap(),
            )
        })
    });
    group.finish();

    // A 100 KB documentation page whose version string changed, as in a minor release.
    let old: String = (0..400)
        .map(|i| format!("<p class=\"para\">Paragraph {i} of the Python 3.11.4 documentation, with a long line of prose that does not change between releases.</p>\n"))
        .collect::<String>();
    let new = old.replace("3.11.4", "3.11.5");
    let mut group = c.benchmark_group("delta 100KB page");
    group.throughput(Throughput::Bytes(new.len() as u64));
    for level in [3, 19] {
        group.bench_function(format!("dcz encode level {level}"), |b| {
            b.iter(|| black_box(dcz::encode(old.as_bytes(), new.as_bytes(), level).unwrap()))
        });
    }
    let delta = dcz::encode(old.as_bytes(), new.as_bytes(), 19).unwrap();
    group.bench_function("dcz decode", |b| {
        b.iter(|| black_box(dcz::decode(old.as_bytes(), &delta, 1 << 24).unwrap()))
    });
    group.bench_function("unified diff", |b| {
        b.iter(|| black_box(unified::diff(old.as_bytes(), new.as_bytes(), "a", "b").unwrap()))
    });
    group.bench_function("summary", |b| {
        b.iter(|| black_box(summarize(old.as_bytes(), new.as_bytes())))
    });
    group.finish();

    // Web Bot Auth: what signing costs the crawler per request, and verifying the agent.
    let mut keys = webcoop_protocol::bot_auth::keys::KeySet::default();
    keys.add([7; 32], 0);
    let key = keys.active(1_800_000_000).unwrap();
    let params = webcoop_protocol::bot_auth::sign::SignParams {
        agent: "https://crawler.example",
        created: 1_800_000_000,
        lifetime: 300,
        nonce: "bm9uY2Ugbm9uY2Ugbm9uY2Ugbm9uY2U=",
    };
    let mut group = c.benchmark_group("web bot auth");
    group.bench_function("sign a request", |b| {
        b.iter(|| {
            black_box(webcoop_protocol::bot_auth::sign::sign(
                &key,
                "docs.example.org",
                params,
            ))
        })
    });
    let headers = webcoop_protocol::bot_auth::sign::sign(&key, "docs.example.org", params).unwrap();
    let dir_text = webcoop_protocol::bot_auth::directory::Directory::write(&keys.public(0));
    let dir = webcoop_protocol::bot_auth::directory::Directory::parse(dir_text.as_bytes()).unwrap();
    group.bench_function("verify a request", |b| {
        b.iter(|| {
            let pairs = headers.pairs();
            let view = webcoop_protocol::bot_auth::verify::RequestView {
                scheme: "https",
                authority: "docs.example.org",
                method: "GET",
                path: "/",
                query: None,
                headers: &pairs,
            };
            match webcoop_protocol::bot_auth::verify::read(
                &view,
                "docs.example.org",
                1_800_000_010,
                false,
            ) {
                webcoop_protocol::bot_auth::verify::Reading::Claim(c) => {
                    black_box(c.verify(&dir, 1_800_000_010).is_ok())
                }
                _ => false,
            }
        })
    });
    group.finish();
}

criterion_group!(benches, formats);
criterion_main!(benches);

//! The per-page work of the crawl path, on the page `shared/research/crates.md` measured link
//! extractors with (about 100 KB of HTML, 300 links with entities in their values): link
//! extraction alone, the whole analysis (decoding, digest, extraction, normalisation, scope
//! checks), and building the compressed WARC record.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use url::Url;
use webcoop_crawler::archives::warc::{self, Exchange};
use webcoop_crawler::parsers::extract_links as extract;
use webcoop_crawler::parsers::{Limits, LinkPolicy, Scope};
use webcoop_crawler::parsers::{Received, analyze};

fn page() -> Vec<u8> {
    let mut s = String::from(
        "<!DOCTYPE html><html><head><title>bench</title><base href=\"/docs/\"></head><body>\n",
    );
    let mut i = 0;
    while s.len() < 100_000 {
        if i < 300 {
            s.push_str(&format!(
                "<p>Paragraph {i} <a href=\"section/{i}.html?a=1&amp;b={i}\" class=\"x\">link {i}</a> and some text that pads the page out.</p>\n"
            ));
        } else {
            s.push_str("<p>Plain text without any links, as most of a real page is, with <em>markup</em> between.</p>\n");
        }
        i += 1;
    }
    s.push_str("</body></html>\n");
    s.into_bytes()
}

fn bench(c: &mut Criterion) {
    let html = page();
    let url = Url::parse("http://bench.example/index.html").unwrap();
    let policy = LinkPolicy::new(Scope::Host, std::slice::from_ref(&url), Limits::default());
    let headers = vec![("Content-Type".to_string(), "text/html".to_string())];
    let mut g = c.benchmark_group("page");
    g.throughput(Throughput::Bytes(html.len() as u64));
    g.bench_function("extract links", |b| {
        b.iter(|| black_box(extract(&url, &html)).links.len())
    });
    g.bench_function("analyze", |b| {
        b.iter(|| {
            let r = Received {
                url: &url,
                status: 200,
                headers: &headers,
                body: &html,
                truncated: false,
            };
            black_box(analyze(r, 1, &policy, 4 << 20)).links.len()
        })
    });
    let digest = warc::digest(&html);
    for level in [1, 6] {
        g.bench_function(format!("warc record, gzip {level}"), |b| {
            b.iter(|| {
                let x = Exchange {
                    uri: url.as_str(),
                    at: chrono::Utc::now(),
                    ip: None,
                    http_head: "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
                    body: &html,
                    payload_digest: &digest,
                    truncated: false,
                    usage: None,
                    encoding: None,
                };
                black_box(warc::response(&x, level)).bytes.len()
            })
        });
    }
    g.finish();
    assert_eq!(extract(&url, &html).links.len(), 300);
}

criterion_group!(benches, bench);
criterion_main!(benches);

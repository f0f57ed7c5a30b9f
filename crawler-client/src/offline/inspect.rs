//! `webcoop-crawl inspect`: read a robots.rdf, sitemap, changes feed or dcz delta with the same
//! parsers the crawler uses, and say what is in it or exactly what is wrong with it.

use chrono::{DateTime, Utc};
use std::fmt::Write;
use webcoop_protocol::changes_feed::{self, ChangeKind, FeedLimits};
use webcoop_protocol::dates::format_w3cdtf;
use webcoop_protocol::delta::dcz;
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_protocol::sitemap::{self, Leniency, SitemapDocument, SitemapLimits};
use webcoop_protocol::sniff::{DocumentKind, sniff};
use webcoop_protocol::validator::Sha256Digest;

/// How to read and report a document.
#[derive(Debug, Clone, Default)]
pub struct InspectOptions {
    /// Refuse sitemap entries with any problem instead of reporting and skipping them.
    pub strict: bool,
    /// How many entries to list (0: none).
    pub list: usize,
    /// For a dcz delta: the version it applies to, to decode and check it.
    pub base: Option<Vec<u8>>,
}

/// Why a document could not be inspected.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// Not one of the formats we know.
    #[error("not a robots.rdf, sitemap, changes feed or dcz delta (unrecognised root element)")]
    Unrecognised,
    /// The document is malformed.
    #[error(transparent)]
    Parse(#[from] webcoop_protocol::ParseError),
    /// The delta does not decode.
    #[error(transparent)]
    Delta(#[from] webcoop_protocol::delta::DeltaError),
}

fn when(t: Option<DateTime<Utc>>) -> String {
    t.map(format_w3cdtf).unwrap_or_else(|| "-".into())
}

/// Reads `bytes` and returns a human-readable report.
pub fn inspect(bytes: &[u8], options: &InspectOptions) -> Result<String, InspectError> {
    let mut out = String::new();
    match sniff(bytes).ok_or(InspectError::Unrecognised)? {
        DocumentKind::RobotsRdf => robots_rdf_summary(&mut out, bytes, options)?,
        DocumentKind::Sitemap => sitemap_summary(&mut out, bytes, options)?,
        DocumentKind::ChangesFeed => changes_summary(&mut out, bytes, options)?,
        DocumentKind::DczDelta => delta_summary(&mut out, bytes, options)?,
    }
    Ok(out)
}

fn robots_rdf_summary(
    out: &mut String,
    bytes: &[u8],
    options: &InspectOptions,
) -> Result<(), InspectError> {
    let doc = robots_rdf::parse(bytes, &RdfLimits::default())?;
    let c = &doc.channel;
    let _ = writeln!(out, "robots.rdf {} for {} ({:?})", c.about, c.link, c.title);
    let _ = writeln!(
        out,
        "  generated {}, regenerated {} x{}",
        when(c.date),
        c.update_period,
        c.update_frequency
    );
    if let Some(changes) = &c.changes {
        let _ = writeln!(
            out,
            "  changes feed {changes} (reflects changes up to seq {})",
            c.seq.map_or("-".into(), |s| s.to_string())
        );
    }
    if let Some(hub) = &c.hub {
        let _ = writeln!(out, "  WebSub hub {hub}");
    }
    let total: u64 = doc.items.iter().filter_map(|i| i.size).sum();
    let newest = doc.items.iter().map(|i| i.modified).max();
    let oldest = doc.items.iter().map(|i| i.modified).min();
    let _ = writeln!(
        out,
        "  {} items, {total} bytes, modified between {} and {}",
        doc.items.len(),
        when(oldest),
        when(newest)
    );
    for item in doc.items.iter().take(options.list) {
        let _ = writeln!(
            out,
            "    {}  {:>10}  {:<24}  {}",
            format_w3cdtf(item.modified),
            item.size.map_or("-".into(), |s| s.to_string()),
            item.content_type.as_deref().unwrap_or("-"),
            item.url
        );
    }
    Ok(())
}

fn sitemap_summary(
    out: &mut String,
    bytes: &[u8],
    options: &InspectOptions,
) -> Result<(), InspectError> {
    let leniency = if options.strict {
        Leniency::Strict
    } else {
        Leniency::SkipBadEntries
    };
    let parsed = sitemap::parse(bytes, &SitemapLimits::default(), leniency)?;
    match &parsed.document {
        SitemapDocument::UrlSet(urls) => {
            let dated = urls.iter().filter(|u| u.lastmod.is_some()).count();
            let _ = writeln!(
                out,
                "sitemap urlset: {} URLs, {dated} with lastmod",
                urls.len()
            );
            for u in urls.iter().take(options.list) {
                let _ = writeln!(out, "    {}  {}", when(u.lastmod), u.loc);
            }
        }
        SitemapDocument::Index(refs) => {
            let _ = writeln!(out, "sitemap index: {} sitemaps", refs.len());
            for r in refs.iter().take(options.list) {
                let _ = writeln!(out, "    {}  {}", when(r.lastmod), r.loc);
            }
        }
    }
    if !parsed.problems.is_empty() {
        let _ = writeln!(out, "  {} entries with problems:", parsed.problems.len());
        for p in parsed.problems.iter().take(options.list.max(5)) {
            let action = if p.entry_dropped {
                "dropped"
            } else {
                "value ignored"
            };
            let _ = writeln!(out, "    entry {}: {} ({action})", p.index, p.error);
        }
    }
    Ok(())
}

fn changes_summary(
    out: &mut String,
    bytes: &[u8],
    options: &InspectOptions,
) -> Result<(), InspectError> {
    let feed = changes_feed::parse(bytes, &FeedLimits::default())?;
    let count = |k: ChangeKind| feed.entries.iter().filter(|e| e.kind == k).count();
    let first = feed.entries.iter().map(|e| e.seq).min();
    let last = feed.entries.iter().map(|e| e.seq).max();
    let _ = writeln!(
        out,
        "changes feed {} ({:?}), updated {}",
        feed.self_link,
        feed.title,
        format_w3cdtf(feed.updated)
    );
    let _ = writeln!(
        out,
        "  {} changes, seq {}..{} ({} created, {} modified, {} deleted), {} with an inline delta",
        feed.entries.len(),
        first.map_or("-".into(), |s| s.to_string()),
        last.map_or("-".into(), |s| s.to_string()),
        count(ChangeKind::Created),
        count(ChangeKind::Modified),
        count(ChangeKind::Deleted),
        feed.entries.iter().filter(|e| e.delta.is_some()).count()
    );
    if let Some(head) = feed.head_seq {
        let _ = writeln!(out, "  newest change at the server: seq {head}");
    }
    if let Some(next) = &feed.next {
        let _ = writeln!(out, "  more changes at {next}");
    }
    if let Some(r) = &feed.resync {
        let _ = writeln!(
            out,
            "  RESYNC: changes after seq {} were not delivered; full listing at {}",
            r.since, r.listing
        );
    }
    for e in feed.entries.iter().take(options.list) {
        let _ = writeln!(
            out,
            "    #{:<8} {:<8} {}  {}",
            e.seq,
            e.kind,
            format_w3cdtf(e.time),
            e.url
        );
    }
    Ok(())
}

fn delta_summary(
    out: &mut String,
    bytes: &[u8],
    options: &InspectOptions,
) -> Result<(), InspectError> {
    let dict = dcz::dictionary_of(bytes)?;
    let _ = writeln!(
        out,
        "dcz delta, {} bytes, made against a version with SHA-256 {}",
        bytes.len(),
        dict.to_hex()
    );
    if let Some(base) = &options.base {
        let decoded = dcz::decode(
            base,
            bytes,
            webcoop_protocol::delta::MAX_VERSION_BYTES as u64,
        )?;
        let _ = writeln!(
            out,
            "  decodes against the given base to {} bytes, validator {}",
            decoded.len(),
            Sha256Digest::of(&decoded).etag()
        );
    }
    Ok(())
}

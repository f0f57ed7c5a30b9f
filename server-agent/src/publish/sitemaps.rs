//! sitemap.xml for standard consumers: one `urlset` while the site fits, otherwise an index of
//! gzip parts cut as every document's parts are ([`super::parting`]): an edit rewrites its part
//! and the index, and a part is written only when its bytes changed.

use super::atomic::{AtomicFile, write_atomic};
use super::part_files::{PartFiles, PartsReport};
use super::parting::Parting;
use super::{SITEMAP, SITEMAP_PART_PREFIX, SITEMAP_PART_SUFFIX};
use crate::inventory::Inventory;
use crate::urls::push_url;
use chrono::{DateTime, Utc};
use flate2::Compression;
use flate2::write::GzEncoder;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;
use url::Url;
use webcoop_protocol::sitemap::{self, SitemapRef, URLSET_HEAD, URLSET_TAIL, write_url};

/// Parts hold this many URLs on average by default: well under the protocol's 50,000, and
/// small enough (about 1 MB of robots.rdf, 40 KB of gzip sitemap) that rewriting the part an
/// edit touches costs a millisecond or two.
pub(crate) const DEFAULT_PART_URLS: usize = 2_000;

/// Rendered XML is handed to the file (or compressor) in pieces of this size.
const FLUSH_AT: usize = 256 << 10;

/// What a publication of the sitemaps did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SitemapReport {
    /// Parts (0 for a single urlset).
    pub(crate) parts: usize,
    /// What was rendered and written of them.
    pub(crate) written: PartsReport,
}

/// The sitemaps' parts between publications.
#[derive(Debug)]
pub(crate) struct SitemapPublisher {
    parts: PartFiles,
    parted: bool,
}

/// Sitemap priorities from shares of reads: each page's share relative to the most read
/// page's, rounded to a power of two (1, 0.5, 0.25...), no lower than 1/128.
fn priorities_of(shares: &HashMap<String, f64>) -> HashMap<String, f32> {
    let top = shares.values().copied().fold(0.0f64, f64::max);
    if top <= 0.0 {
        return HashMap::new();
    }
    shares
        .iter()
        .map(|(p, s)| {
            let relative = (s / top).clamp(1.0 / 128.0, 1.0);
            (p.clone(), 2f64.powi(relative.log2().round() as i32) as f32)
        })
        .collect()
}

impl SitemapPublisher {
    /// Sitemaps written into `dir`.
    pub(crate) fn new(dir: &Path) -> Self {
        SitemapPublisher {
            parts: PartFiles::new(
                dir.to_path_buf(),
                (SITEMAP_PART_PREFIX, SITEMAP_PART_SUFFIX),
                false,
            ),
            parted: true,
        }
    }

    /// Takes the parts' dates from the index in `dir` (at start: the parts a restart finds
    /// unchanged keep them).
    pub(crate) fn recall(&mut self, dir: &Path) {
        let Ok(bytes) = std::fs::read(dir.join(SITEMAP)) else {
            return;
        };
        let parsed = sitemap::parse(&bytes, &Default::default(), sitemap::Leniency::Strict);
        if let Ok(sitemap::ParsedSitemap {
            document: sitemap::SitemapDocument::Index(refs),
            ..
        }) = parsed
        {
            self.parts.recall(
                refs.into_iter()
                    .filter_map(|r| {
                        let name = r.loc.path_segments()?.next_back()?.to_string();
                        Some((name, r.lastmod?))
                    })
                    .collect(),
            );
        }
    }

    /// Forgets what was written (the files may have been changed behind our back).
    pub(crate) fn reset(&mut self) {
        self.parts.reset();
    }

    /// Publishes the sitemaps for `inventory` into `dir`: in the parts of `parting` when
    /// there is one, else as one urlset.
    pub(crate) fn publish(
        &mut self,
        dir: &Path,
        inventory: &Inventory,
        base: &Url,
        (now, parting): (DateTime<Utc>, Option<&Parting>),
        popularity: Option<&HashMap<String, f64>>,
    ) -> io::Result<SitemapReport> {
        let priorities = popularity.map(priorities_of);
        let priority = |path: &str| priorities.as_ref().and_then(|p| p.get(path)).copied();
        let Some(parting) = parting else {
            let mut file = AtomicFile::create(&dir.join(SITEMAP))?;
            let mut buf = String::from(URLSET_HEAD);
            let mut url = String::new();
            for (path, entry) in inventory.iter() {
                url.clear();
                push_url(&mut url, base, path);
                write_url(&mut buf, &url, Some(entry.modified), None, priority(path));
                if buf.len() >= FLUSH_AT {
                    file.write_all(buf.as_bytes())?;
                    buf.clear();
                }
            }
            buf.push_str(URLSET_TAIL);
            file.write_all(buf.as_bytes())?;
            file.commit()?;
            if std::mem::replace(&mut self.parted, false) {
                self.parts.remove_all();
            }
            return Ok(SitemapReport {
                parts: 0,
                written: PartsReport {
                    rendered: 1,
                    written: 1,
                    bytes: 0,
                },
            });
        };
        self.parted = true;
        let (records, written) = self.parts.publish(parting, now, |first, end, _, out| {
            // Parts are capped well under the protocol's 50,000 URLs; their size in bytes
            // (50 MB uncompressed) would take URLs of 1,000 bytes on average.
            let mut gz = GzEncoder::new(out, Compression::new(6));
            let mut xml = String::with_capacity(FLUSH_AT + 4096);
            xml.push_str(URLSET_HEAD);
            let mut url = String::new();
            for (path, entry) in inventory.range(first, end) {
                url.clear();
                push_url(&mut url, base, path);
                write_url(&mut xml, &url, Some(entry.modified), None, priority(path));
                if xml.len() >= FLUSH_AT {
                    gz.write_all(xml.as_bytes())?;
                    xml.clear();
                }
            }
            xml.push_str(URLSET_TAIL);
            gz.write_all(xml.as_bytes())?;
            gz.finish()?;
            Ok(())
        })?;
        let refs: Vec<SitemapRef> = records
            .iter()
            .map(|p| SitemapRef {
                loc: base.join(&p.name).unwrap_or_else(|_| base.clone()),
                lastmod: Some(p.date),
            })
            .collect();
        write_atomic(&dir.join(SITEMAP), sitemap::write_index(&refs).as_bytes())?;
        self.parts.remove_gone(parting);
        Ok(SitemapReport {
            parts: records.len(),
            written,
        })
    }
}

//! sitemap.xml for standard consumers: one `urlset` while the site fits, otherwise an index of
//! gzip parts. Parts are filled by a hash of the path, so a change touches exactly one part, and
//! a part is rewritten only when one of its URLs or dates changed.

use super::atomic::{AtomicFile, write_atomic};
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
use webcoop_protocol::sitemap::{
    self, MAX_BYTES, MAX_URLS, SitemapRef, URLSET_HEAD, URLSET_TAIL, write_url,
};

/// Parts hold this many URLs on average by default: well under the protocol's 50,000, and
/// small enough (about 1 MB) that rewriting the part an edit touches costs milliseconds.
pub(crate) const DEFAULT_PART_URLS: usize = 10_000;

/// Rendered XML is handed to the file (or compressor) in pieces of this size.
const FLUSH_AT: usize = 256 << 10;

/// What a publication of the sitemaps did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SitemapReport {
    /// Parts (0 for a single urlset).
    pub(crate) parts: usize,
    /// Parts rewritten this time.
    pub(crate) rewritten: usize,
}

/// Remembers each part's fingerprint between publications.
#[derive(Debug)]
pub(crate) struct SitemapPublisher {
    part_urls: usize,
    fingerprints: Vec<Option<u64>>,
}

impl Default for SitemapPublisher {
    fn default() -> Self {
        SitemapPublisher::new(DEFAULT_PART_URLS)
    }
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

fn part_of(path: &str, parts: usize) -> usize {
    (xxhash_rust::xxh3::xxh3_64(path.as_bytes()) % parts as u64) as usize
}

impl SitemapPublisher {
    /// Parts of about `part_urls` URLs once the site outgrows one file.
    pub(crate) fn new(part_urls: usize) -> Self {
        SitemapPublisher {
            part_urls: part_urls.max(1),
            fingerprints: Vec::new(),
        }
    }

    /// Forgets what was written (the files may have been changed behind our back).
    pub(crate) fn reset(&mut self) {
        self.fingerprints.clear();
    }

    /// Publishes the sitemaps for `inventory` into `dir`.
    pub(crate) fn publish(
        &mut self,
        dir: &Path,
        inventory: &Inventory,
        base: &Url,
        now: DateTime<Utc>,
        popularity: Option<&HashMap<String, f64>>,
    ) -> io::Result<SitemapReport> {
        let priorities = popularity.map(priorities_of);
        let priority = |path: &str| priorities.as_ref().and_then(|p| p.get(path)).copied();
        if inventory.len() <= self.part_urls {
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
            self.remove_parts_from(dir, 0);
            self.fingerprints.clear();
            return Ok(SitemapReport {
                parts: 0,
                rewritten: 1,
            });
        }

        let mut parts = inventory.len().div_ceil(self.part_urls);
        loop {
            match self.publish_parts(dir, inventory, base, (now, parts), &priority)? {
                Some(report) => return Ok(report),
                // A part would break a limit (very long URLs): spread over more parts.
                None => {
                    parts += parts / 2 + 1;
                    self.fingerprints.clear();
                }
            }
        }
    }

    fn publish_parts(
        &mut self,
        dir: &Path,
        inventory: &Inventory,
        base: &Url,
        (now, parts): (DateTime<Utc>, usize),
        priority: &impl Fn(&str) -> Option<f32>,
    ) -> io::Result<Option<SitemapReport>> {
        // One pass to fingerprint each part by its paths and dates, without rendering.
        let mut hashers: Vec<xxhash_rust::xxh3::Xxh3Default> =
            (0..parts).map(|_| Default::default()).collect();
        let mut counts = vec![0usize; parts];
        let mut newest: Vec<Option<DateTime<Utc>>> = vec![None; parts];
        for (path, entry) in inventory.iter() {
            let p = part_of(path, parts);
            hashers[p].update(path.as_bytes());
            hashers[p].update(&entry.modified.timestamp_millis().to_le_bytes());
            counts[p] += 1;
            newest[p] = newest[p].max(Some(entry.modified));
        }
        if self.fingerprints.len() != parts {
            self.fingerprints = vec![None; parts];
        }
        let mut rewritten = 0;
        for p in 0..parts {
            let fingerprint = hashers[p].digest();
            let name = format!("{SITEMAP_PART_PREFIX}{}{SITEMAP_PART_SUFFIX}", p + 1);
            if self.fingerprints[p] == Some(fingerprint) && dir.join(&name).exists() {
                continue;
            }
            if counts[p] > MAX_URLS {
                return Ok(None);
            }
            // Streamed through the compressor: a part is never held whole in memory.
            let mut file = AtomicFile::create(&dir.join(&name))?;
            let mut gz = GzEncoder::new(&mut file, Compression::new(6));
            let mut xml = String::with_capacity(FLUSH_AT + 4096);
            xml.push_str(URLSET_HEAD);
            let mut raw_len = 0u64;
            let mut url = String::new();
            for (path, entry) in inventory
                .iter()
                .filter(|(path, _)| part_of(path, parts) == p)
            {
                url.clear();
                push_url(&mut url, base, path);
                write_url(&mut xml, &url, Some(entry.modified), None, priority(path));
                if xml.len() >= FLUSH_AT {
                    gz.write_all(xml.as_bytes())?;
                    raw_len += xml.len() as u64;
                    xml.clear();
                }
            }
            xml.push_str(URLSET_TAIL);
            gz.write_all(xml.as_bytes())?;
            raw_len += xml.len() as u64;
            gz.finish()?;
            if raw_len > MAX_BYTES {
                // Dropping the file removes the temporary; the caller spreads over more parts.
                return Ok(None);
            }
            file.commit()?;
            self.fingerprints[p] = Some(fingerprint);
            rewritten += 1;
        }
        let refs: Vec<SitemapRef> = (0..parts)
            .map(|p| SitemapRef {
                loc: base
                    .join(&format!(
                        "{SITEMAP_PART_PREFIX}{}{SITEMAP_PART_SUFFIX}",
                        p + 1
                    ))
                    .unwrap_or_else(|_| base.clone()),
                lastmod: Some(newest[p].unwrap_or(now)),
            })
            .collect();
        write_atomic(&dir.join(SITEMAP), sitemap::write_index(&refs).as_bytes())?;
        self.remove_parts_from(dir, parts);
        Ok(Some(SitemapReport { parts, rewritten }))
    }

    /// Removes parts numbered above `keep` left by a larger site.
    fn remove_parts_from(&self, dir: &Path, keep: usize) {
        let mut n = keep + 1;
        while std::fs::remove_file(
            dir.join(format!("{SITEMAP_PART_PREFIX}{n}{SITEMAP_PART_SUFFIX}")),
        )
        .is_ok()
        {
            n += 1;
        }
    }
}

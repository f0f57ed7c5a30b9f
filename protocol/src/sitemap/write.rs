//! Writing sitemaps: single files, and a whole set split into gzip parts under an index.

use super::{MAX_BYTES, MAX_URLS, SitemapRef, UrlEntry};
use crate::compression::gzip;
use crate::dates::format_w3cdtf;
use crate::xml_write::leaf;
use chrono::{DateTime, Utc};
use url::Url;

/// Everything of a `urlset` file before its entries.
pub const URLSET_HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
/// Everything of a `urlset` file after its entries.
pub const URLSET_TAIL: &str = "</urlset>\n";
/// Everything of a `sitemapindex` file before its entries.
pub const INDEX_HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n";
/// Everything of a `sitemapindex` file after its entries.
pub const INDEX_TAIL: &str = "</sitemapindex>\n";

/// Appends one `<url>` element.
pub fn write_url_entry(out: &mut String, entry: &UrlEntry) {
    out.push_str("  <url>\n");
    leaf(out, "    ", "loc", entry.loc.as_str());
    if let Some(lastmod) = entry.lastmod {
        leaf(out, "    ", "lastmod", &format_w3cdtf(lastmod));
    }
    if let Some(freq) = entry.changefreq {
        leaf(out, "    ", "changefreq", freq.as_str());
    }
    if let Some(priority) = entry.priority {
        let p = if priority.is_finite() {
            priority.clamp(0.0, 1.0)
        } else {
            0.5
        };
        leaf(out, "    ", "priority", &p.to_string());
    }
    out.push_str("  </url>\n");
}

/// Appends one `<sitemap>` element of an index.
pub fn write_index_entry(out: &mut String, entry: &SitemapRef) {
    out.push_str("  <sitemap>\n");
    leaf(out, "    ", "loc", entry.loc.as_str());
    if let Some(lastmod) = entry.lastmod {
        leaf(out, "    ", "lastmod", &format_w3cdtf(lastmod));
    }
    out.push_str("  </sitemap>\n");
}

/// A whole `urlset` document. The caller keeps within the limits; [`build`] splits for you.
pub fn write_urlset(entries: &[UrlEntry]) -> String {
    let mut out = String::with_capacity(URLSET_HEAD.len() + entries.len() * 120);
    out.push_str(URLSET_HEAD);
    for entry in entries {
        write_url_entry(&mut out, entry);
    }
    out.push_str(URLSET_TAIL);
    out
}

/// A whole `sitemapindex` document.
pub fn write_index(entries: &[SitemapRef]) -> String {
    let mut out = String::with_capacity(INDEX_HEAD.len() + entries.len() * 120);
    out.push_str(INDEX_HEAD);
    for entry in entries {
        write_index_entry(&mut out, entry);
    }
    out.push_str(INDEX_TAIL);
    out
}

/// Where and how a set of sitemap files is published.
#[derive(Debug, Clone)]
pub struct SitemapLayout {
    /// The URL of the directory the files are served from (ends with `/`).
    pub dir: Url,
    /// File name of the entry point: a `urlset` when everything fits, else the index.
    pub root_name: String,
    /// Parts are named `{part_prefix}{n}.xml.gz`, n from 1.
    pub part_prefix: String,
    /// URLs per file (at most 50,000).
    pub max_urls: usize,
    /// Uncompressed bytes per file (at most 50 MB).
    pub max_bytes: u64,
    /// gzip level of the parts, 0-9.
    pub gzip_level: u32,
}

impl SitemapLayout {
    /// `sitemap.xml` and `sitemap-N.xml.gz` in `dir`, at the protocol's limits.
    pub fn new(dir: Url) -> Self {
        SitemapLayout {
            dir,
            root_name: "sitemap.xml".into(),
            part_prefix: "sitemap-".into(),
            max_urls: MAX_URLS,
            max_bytes: MAX_BYTES,
            gzip_level: 6,
        }
    }
}

/// One file to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct SitemapFile {
    /// File name within the layout's directory.
    pub name: String,
    /// Where it will be served.
    pub url: Url,
    /// The bytes to write (gzip for parts).
    pub bytes: Vec<u8>,
    /// URLs it lists (sitemaps, for an index).
    pub entries: usize,
}

/// The files of a sitemap set: the entry point, plus parts when it is an index.
#[derive(Debug, Clone, PartialEq)]
pub struct SitemapSet {
    /// `sitemap.xml`: a `urlset` when everything fits in one file, else a `sitemapindex`.
    pub root: SitemapFile,
    /// The gzip `urlset` parts an index lists (empty when the root is a `urlset`).
    pub parts: Vec<SitemapFile>,
}

/// Why a set could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SitemapWriteError {
    /// More parts than one index may list.
    #[error("{parts} sitemap parts exceed the {max} one index may list")]
    TooManyParts {
        /// Parts needed.
        parts: usize,
        /// Most allowed.
        max: usize,
    },
    /// A single entry does not fit in a file under the byte limit.
    #[error("a <url> entry of {bytes} bytes cannot fit in a sitemap of at most {max} bytes")]
    EntryTooLarge {
        /// Size of the entry.
        bytes: usize,
        /// The file limit.
        max: u64,
    },
    /// A part name does not make a URL under the layout's directory.
    #[error("cannot make a URL for sitemap file {0:?}")]
    BadName(String),
}

/// Renders `entries` and splits them as [`assemble`] does.
pub fn build(
    entries: &[UrlEntry],
    layout: &SitemapLayout,
    now: DateTime<Utc>,
) -> Result<SitemapSet, SitemapWriteError> {
    let fragments: Vec<(String, Option<DateTime<Utc>>)> = entries
        .iter()
        .map(|e| {
            let mut s = String::with_capacity(160);
            write_url_entry(&mut s, e);
            (s, e.lastmod)
        })
        .collect();
    assemble(fragments.iter().map(|(s, t)| (s.as_str(), *t)), layout, now)
}

/// Builds a set from already rendered `<url>` fragments (from [`write_url_entry`]) with their
/// lastmod. Everything in one `urlset` when it fits; otherwise consecutive runs of entries go to
/// gzip parts, each within both limits, listed by an index whose `lastmod` per part is the
/// newest of its entries (or `now` when none has one).
pub fn assemble<'a>(
    fragments: impl IntoIterator<Item = (&'a str, Option<DateTime<Utc>>)>,
    layout: &SitemapLayout,
    now: DateTime<Utc>,
) -> Result<SitemapSet, SitemapWriteError> {
    let max_urls = layout.max_urls.clamp(1, MAX_URLS);
    let max_bytes = layout.max_bytes.min(MAX_BYTES) as usize;
    let frame = URLSET_HEAD.len() + URLSET_TAIL.len();
    let url_of = |name: &str| {
        layout
            .dir
            .join(name)
            .map_err(|_| SitemapWriteError::BadName(name.to_string()))
    };

    struct Part {
        xml: String,
        count: usize,
        newest: Option<DateTime<Utc>>,
    }
    let new_part = || Part {
        xml: String::from(URLSET_HEAD),
        count: 0,
        newest: None,
    };
    let mut parts: Vec<Part> = vec![new_part()];
    for (fragment, lastmod) in fragments {
        if frame + fragment.len() > max_bytes {
            return Err(SitemapWriteError::EntryTooLarge {
                bytes: fragment.len(),
                max: max_bytes as u64,
            });
        }
        let full = parts.last().is_some_and(|p| {
            p.count >= max_urls || p.xml.len() + fragment.len() + URLSET_TAIL.len() > max_bytes
        });
        if full {
            parts.push(new_part());
        }
        if let Some(part) = parts.last_mut() {
            part.xml.push_str(fragment);
            part.count += 1;
            part.newest = part.newest.max(lastmod);
        }
    }
    for part in &mut parts {
        part.xml.push_str(URLSET_TAIL);
    }

    if parts.len() == 1 {
        let part = parts.remove(0);
        return Ok(SitemapSet {
            root: SitemapFile {
                url: url_of(&layout.root_name)?,
                name: layout.root_name.clone(),
                bytes: part.xml.into_bytes(),
                entries: part.count,
            },
            parts: Vec::new(),
        });
    }
    if parts.len() > MAX_URLS {
        return Err(SitemapWriteError::TooManyParts {
            parts: parts.len(),
            max: MAX_URLS,
        });
    }
    let mut files = Vec::with_capacity(parts.len());
    let mut refs = Vec::with_capacity(parts.len());
    for (i, part) in parts.into_iter().enumerate() {
        let name = format!("{}{}.xml.gz", layout.part_prefix, i + 1);
        let url = url_of(&name)?;
        refs.push(SitemapRef {
            loc: url.clone(),
            lastmod: Some(part.newest.unwrap_or(now)),
        });
        files.push(SitemapFile {
            name,
            url,
            bytes: gzip(part.xml.as_bytes(), layout.gzip_level),
            entries: part.count,
        });
    }
    Ok(SitemapSet {
        root: SitemapFile {
            url: url_of(&layout.root_name)?,
            name: layout.root_name.clone(),
            bytes: write_index(&refs).into_bytes(),
            entries: refs.len(),
        },
        parts: files,
    })
}

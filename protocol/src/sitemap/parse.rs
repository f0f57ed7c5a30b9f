//! Reading sitemap files within the protocol's limits.

use super::{
    ChangeFreq, MAX_BYTES, MAX_LOC_CHARS, MAX_URLS, SitemapDocument, SitemapRef, UrlEntry,
};
use crate::compression::{DecompressError, gunzip_bounded, is_gzip};
use crate::dates::parse_w3cdtf;
use crate::error::{Format, ParseError, bad_value};
use crate::namespaces::Ns;
use crate::xml_read::{Node, ShapeLimits, XmlCursor};
use chrono::{DateTime, Utc};
use url::Url;

const FORMAT: Format = Format::Sitemap;

/// Bounds on one sitemap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SitemapLimits {
    /// Entries per file.
    pub max_entries: usize,
    /// Bytes per file after decompression.
    pub max_bytes: u64,
}

impl Default for SitemapLimits {
    /// The protocol's: 50,000 entries and 50 MB.
    fn default() -> Self {
        SitemapLimits {
            max_entries: MAX_URLS,
            max_bytes: MAX_BYTES,
        }
    }
}

/// What to do with a bad entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leniency {
    /// Any bad entry or value fails the whole document, and the root must be in the 0.9
    /// namespace: for checking what we write.
    Strict,
    /// Bad entries are dropped and bad optional values cleared, each reported; a root in another
    /// or no namespace is accepted. For third-party sitemaps, which are often sloppy.
    SkipBadEntries,
}

/// A problem with one entry that [`Leniency::SkipBadEntries`] survived.
#[derive(Debug, Clone, PartialEq)]
pub struct EntryProblem {
    /// 1-based position of the entry in the file.
    pub index: usize,
    /// What was wrong.
    pub error: ParseError,
    /// Whether the entry was dropped (bad `<loc>`) or kept without the bad value.
    pub entry_dropped: bool,
}

/// A parsed file and what was wrong with its entries.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedSitemap {
    /// The entries that were read.
    pub document: SitemapDocument,
    /// Problems survived in lenient mode (always empty in strict mode).
    pub problems: Vec<EntryProblem>,
}

fn bad(index: usize, field: &'static str, value: &str, reason: impl ToString) -> ParseError {
    bad_value(FORMAT, &format!("entry {index}"), field, value, reason)
}

#[derive(Default)]
struct Draft {
    loc: Option<String>,
    lastmod: Option<String>,
    changefreq: Option<String>,
    priority: Option<String>,
}

struct Reader {
    leniency: Leniency,
    problems: Vec<EntryProblem>,
}

impl Reader {
    /// Applies `result` to an optional field: strict fails, lenient clears and reports.
    fn optional<T>(
        &mut self,
        index: usize,
        result: Result<T, ParseError>,
    ) -> Result<Option<T>, ParseError> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(e) if self.leniency == Leniency::SkipBadEntries => {
                self.problems.push(EntryProblem {
                    index,
                    error: e,
                    entry_dropped: false,
                });
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn loc(&mut self, index: usize, loc: Option<String>) -> Result<Option<Url>, ParseError> {
        let result = match loc {
            None => Err(ParseError::Missing {
                format: FORMAT,
                context: format!("entry {index}"),
                missing: "<loc>",
            }),
            Some(text) => {
                let text = text.trim();
                if text.chars().count() > MAX_LOC_CHARS {
                    Err(bad(
                        index,
                        "<loc>",
                        text,
                        "longer than the protocol's 2,048 characters",
                    ))
                } else {
                    match Url::parse(text) {
                        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(url),
                        Ok(_) => Err(bad(index, "<loc>", text, "not an http or https URL")),
                        Err(e) => Err(bad(index, "<loc>", text, e)),
                    }
                }
            }
        };
        match result {
            Ok(url) => Ok(Some(url)),
            Err(e) if self.leniency == Leniency::SkipBadEntries => {
                self.problems.push(EntryProblem {
                    index,
                    error: e,
                    entry_dropped: true,
                });
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn lastmod(
        &mut self,
        index: usize,
        text: Option<String>,
    ) -> Result<Option<DateTime<Utc>>, ParseError> {
        match text {
            None => Ok(None),
            Some(t) => self.optional(
                index,
                parse_w3cdtf(&t).map_err(|e| bad(index, "<lastmod>", &t, e)),
            ),
        }
    }

    /// The `index`th `<url>`, its `<changefreq>` and `<priority>` read (each dropped with a
    /// problem noted when bad, if lenient).
    fn url_entry(
        &mut self,
        index: usize,
        (changefreq, priority): (Option<String>, Option<String>),
        loc: Url,
        lastmod: Option<DateTime<Utc>>,
    ) -> Result<UrlEntry, ParseError> {
        let changefreq = match changefreq {
            None => None,
            Some(t) => self.optional(
                index,
                t.parse::<ChangeFreq>()
                    .map_err(|e| bad(index, "<changefreq>", &t, e)),
            )?,
        };
        let priority = match priority {
            None => None,
            Some(t) => {
                let p = t
                    .trim()
                    .parse::<f32>()
                    .map_err(|e| bad(index, "<priority>", &t, e))
                    .and_then(|p| match (0.0..=1.0).contains(&p) {
                        true => Ok(p),
                        false => Err(bad(index, "<priority>", &t, "must be between 0.0 and 1.0")),
                    });
                self.optional(index, p)?
            }
        };
        Ok(UrlEntry {
            loc,
            lastmod,
            changefreq,
            priority,
        })
    }
}

/// The document's XML: gunzipped when it is gzip, within the limit of bytes either way.
fn xml_of<'b>(
    bytes: &'b [u8],
    limits: &SitemapLimits,
) -> Result<std::borrow::Cow<'b, [u8]>, ParseError> {
    if is_gzip(bytes) {
        return gunzip_bounded(bytes, limits.max_bytes)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| match e {
                DecompressError::TooLarge { limit } => ParseError::Limit {
                    format: FORMAT,
                    what: "decompressed size in bytes",
                    limit,
                },
                DecompressError::Corrupt(message) => ParseError::Decompress {
                    format: FORMAT,
                    message,
                },
            });
    }
    if bytes.len() as u64 > limits.max_bytes {
        return Err(ParseError::Limit {
            format: FORMAT,
            what: "size in bytes",
            limit: limits.max_bytes,
        });
    }
    Ok(std::borrow::Cow::Borrowed(bytes))
}

/// Whether the root element is a `sitemapindex` (else a `urlset`); in the sitemaps' namespace
/// unless lenient.
fn index_or_urlset(
    (ns, ns_uri, local): (Ns, &str, &str),
    leniency: Leniency,
) -> Result<bool, ParseError> {
    let ns_ok = ns == Ns::Sitemap || leniency == Leniency::SkipBadEntries;
    match local {
        "urlset" if ns_ok => Ok(false),
        "sitemapindex" if ns_ok => Ok(true),
        _ => Err(ParseError::WrongRoot {
            format: FORMAT,
            found: local.to_string(),
            found_ns: ns_uri.to_string(),
            expected: "<urlset> or <sitemapindex> in http://www.sitemaps.org/schemas/sitemap/0.9",
        }),
    }
}

/// Parses a `urlset` or `sitemapindex`, gzip-compressed or not (detected by its magic bytes).
pub fn parse(
    bytes: &[u8],
    limits: &SitemapLimits,
    leniency: Leniency,
) -> Result<ParsedSitemap, ParseError> {
    let xml = xml_of(bytes, limits)?;
    let mut cursor = XmlCursor::new(
        &xml,
        FORMAT,
        ShapeLimits {
            max_depth: 16,
            max_text: 64 << 10,
        },
    );
    let mut reader = Reader {
        leniency,
        problems: Vec::new(),
    };
    let mut is_index = false;
    let mut root_ns = String::new();
    let mut urls = Vec::new();
    let mut refs = Vec::new();
    let mut draft: Option<Draft> = None;
    let mut count = 0usize;

    loop {
        match cursor.next_node()? {
            Node::End => break,
            Node::Open {
                ns,
                ns_uri,
                local,
                depth,
                ..
            } => match depth {
                1 => {
                    root_ns = ns_uri.to_string();
                    is_index = index_or_urlset((ns, ns_uri, local), leniency)?;
                }
                2 => {
                    let expected = if is_index { "sitemap" } else { "url" };
                    if local == expected && ns_uri == root_ns {
                        count += 1;
                        if count > limits.max_entries {
                            return Err(ParseError::Limit {
                                format: FORMAT,
                                what: "number of entries",
                                limit: limits.max_entries as u64,
                            });
                        }
                        draft = Some(Draft::default());
                    } else {
                        cursor.skip_element()?;
                    }
                }
                3 if draft.is_some() && ns_uri != root_ns => {
                    // Extension elements (image:, news:, xhtml:) carry nothing we use.
                    cursor.skip_element()?;
                }
                _ => {}
            },
            Node::Close {
                local, text, depth, ..
            } => match depth {
                3 => {
                    if let Some(d) = draft.as_mut() {
                        match local {
                            "loc" => d.loc = Some(text.to_string()),
                            "lastmod" => d.lastmod = Some(text.to_string()),
                            "changefreq" => d.changefreq = Some(text.to_string()),
                            "priority" => d.priority = Some(text.to_string()),
                            _ => {}
                        }
                    }
                }
                2 => {
                    let Some(d) = draft.take() else { continue };
                    let Some(loc) = reader.loc(count, d.loc)? else {
                        continue;
                    };
                    let lastmod = reader.lastmod(count, d.lastmod)?;
                    if is_index {
                        refs.push(SitemapRef { loc, lastmod });
                        continue;
                    }
                    urls.push(reader.url_entry(count, (d.changefreq, d.priority), loc, lastmod)?);
                }
                _ => {}
            },
        }
    }
    Ok(ParsedSitemap {
        document: if is_index {
            SitemapDocument::Index(refs)
        } else {
            SitemapDocument::UrlSet(urls)
        },
        problems: reader.problems,
    })
}

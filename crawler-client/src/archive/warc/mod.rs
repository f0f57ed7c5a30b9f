//! WARC 1.1 (ISO 28500) output: each record its own gzip member (`.warc.gz`), files rotated by
//! size, a `warcinfo` record first in each file, `response` records for what was fetched,
//! `revisit` records for 304s and unchanged content, and `resource` records for pages rebuilt
//! from a delta (each referring to the record of the delta as received). Digests are `sha1:` in base32, as
//! Heritrix, wget and warcio write and check them, except a page read from a site's snapshot or
//! batch: its `sha256:` (hex, as the site's record wrote it) is the content's validator, which
//! the crawl computes anyway, and warcio checks it as well.
//!
//! Records are built (and compressed) where pages are fetched; the writer only appends bytes
//! and reports where each record landed, so the crawl state can point into the archive.
//!
//! `record` builds the records, `writer` appends them and rotates files, `reader` reads them
//! back (replay, copies held, the HTTP message inside).

mod reader;
mod record;
#[cfg(test)]
mod tests;
mod writer;

pub use reader::*;
pub use record::*;
pub use writer::*;

//! webcoop's wire contract: every format the agent writes and the crawler reads.
//!
//! Pure formats and logic, no I/O and no async: the agent (`webcoop-agent`) and the crawler
//! (`webcoop-crawler`) share nothing else. Each module is one format:
//!
//! - [`robots_rdf`]: the RSS 1.0 (RDF) listing of every public resource of a site;
//! - [`sitemap`]: sitemaps.org 0.9 `urlset`/`sitemapindex`, split into gzip parts, and a bounded
//!   parser with a depth-limited walker for index trees;
//! - [`changes_feed`]: the Atom feed of changes with sequence numbers, tombstones and inline deltas;
//! - [`snapshot`] and [`batch`]: a whole site, or a page of changes with their content, as WARC;
//! - [`warc`]: WARC 1.1 records, WARC-zstd files and CDXJ lines;
//! - [`resourcesync`]: ResourceSync source description, capability, resource and change lists;
//! - [`delta`]: RFC 9842 `dcz` deltas, unified diffs and change summaries;
//! - [`websub`]: WebSub subscription parameters, verification of intent, `X-Hub-Signature`;
//! - [`validator`] and [`dates`]: entity tags, digests, W3C-DTF and HTTP dates;
//! - [`sniff`]: which of these a document is;
//! - [`clock`]: the time every scheduling component takes (real, scaled or manual).
//!
//! `docs/PROTOCOL.md` describes the same contract for implementers in other languages.

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod batch;
pub mod bot_auth;
pub mod change_rate;
pub mod changes_feed;
pub mod clock;
pub mod compression;
pub mod dates;
pub mod delta;
pub mod error;
pub mod indexnow;
pub mod namespaces;
pub mod ping;
pub mod resourcesync;
pub mod robots_rdf;
pub mod sitemap;
pub mod snapshot;
pub mod sniff;
pub mod usage;
pub mod validator;
pub mod warc;
pub mod web_feed;
pub mod websub;

mod xml_read;
mod xml_write;

pub use error::{Format, ParseError};
pub use xml_write::xml_safe;

//! webcoop-crawler: an incremental crawler that uses a site's cooperation signals (robots.rdf,
//! sitemaps, the changes feed, deltas, WebSub push) and polls everywhere else.
//!
//! The `webcoop-crawl` binary is a thin shell over these modules.

pub mod analyze;
pub mod cash;
pub mod clock;
pub mod config;
pub mod coop;
pub mod copies;
pub mod engine;
pub mod fetch;
pub mod frontier;
pub mod importance;
pub mod inspect;
pub mod links;
pub mod metrics;
pub mod offline;
pub mod politeness;
pub mod progress;
pub mod refresh;
pub mod robots;
pub mod scope;
pub mod store;
pub mod url_norm;
pub mod warc;
pub mod worker;

//! webcoop-crawler: an incremental crawler that uses a site's cooperation signals (robots.rdf,
//! sitemaps, the changes feed, deltas, WebSub push) and polls everywhere else.
//!
//! The `webcoop-crawl` binary is a thin shell over these modules.

pub mod inspect;

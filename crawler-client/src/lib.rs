//! webcoop-crawler: an incremental crawler that uses a site's cooperation signals (robots.rdf,
//! sitemaps, the changes feed, deltas, WebSub push) and polls everywhere else.
//!
//! The folders follow the path a URL takes: [`frontier`] (which URL next, and when) ->
//! `fetch` (the request) -> [`analyze`] (links, digests, what the response says) ->
//! [`archive`] (WARC records) -> [`state`] (the crawl database). [`coop`], `importance` and
//! `refresh` feed the frontier; [`engine`] runs the loop that ties them together; the
//! offline tools (ranking, simulations, `inspect`) live in [`offline`]. The `webcoop-crawl`
//! binary is a thin shell over these modules; a crawl is [`run`] on the [`Settings`] made from
//! [`CrawlArgs`].

pub mod analyze;
pub mod archive;
pub mod clock;
pub mod config;
pub mod console;
pub mod coop;
pub mod engine;
pub(crate) mod fetch;
pub mod frontier;
pub mod ids;
pub(crate) mod importance;
pub(crate) mod metrics;
pub mod offline;
pub mod progress;
pub(crate) mod refresh;
pub mod state;

pub use config::{ConfigError, CrawlArgs, Settings, settings};
pub use engine::{CrawlError, Report, run};
pub use ids::{Fp, HostId};

#[cfg(test)]
mod layers {
    #[test]
    fn imports_follow_the_layers_of_the_architecture_document() {
        webcoop_testkit::layers::assert_layers(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            "crawler-client",
        );
    }
}

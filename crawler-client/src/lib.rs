//! webcoop-crawler: an incremental crawler that uses a site's cooperation signals (robots.rdf,
//! sitemaps, the changes feed, deltas, WebSub push) and polls everywhere else.
//!
//! The folders follow the path a URL takes: `frontier` (which URL next, and when) -> `fetch`
//! (the request) -> `analyze` (links, digests, what the response says) -> `archive` (WARC
//! records) -> `state` (the crawl database). `coop`, `importance` and `refresh` feed the
//! frontier; `engine` runs the loop that ties them together; the offline tools (ranking,
//! simulations, `inspect`) live in `offline`. The modules are private: a crawl is [`run`] on
//! the [`Settings`] made from [`CrawlArgs`], and what the binary, the bench, the tests and the
//! fuzz targets use besides is re-exported below, grouped by what it is for.

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod analyze;
mod archive;
mod clock;
mod config;
mod console;
mod coop;
mod engine;
mod fetch;
mod frontier;
mod ids;
mod importance;
mod metrics;
mod offline;
mod progress;
mod refresh;
mod signing;
mod state;

pub use clock::install as install_clock;
pub use config::{
    ConfigError, ConsoleSettings, CrawlArgs, CrawlOptions, Settings, help_with_defaults,
    read_token_file, settings,
};
pub use console::server::run_offline as run_console;
pub use coop::CoopMode;
pub use coop::site::{CoopConfig, SiteCoop};
pub use engine::{CrawlError, Report, join, run};
pub use ids::{Fp, HostId};
pub use offline::keys::{KeysCommand, run as run_keys};
pub use progress::{ProgressMode, summary};
pub use signing::SignWhen;
pub use state::{COOP_CONFIG_META, Figures, NewUrl, Store, is_running};

/// What a crawl leaves to read: its WARC files, a CDXJ index and WACZ package of them, the
/// copies it holds, and the floor a crawl that keeps nothing costs.
pub mod archives {
    pub use crate::archive::{cdxj, copies, floor, wacz, warc};
}

/// The parsers a crawl runs over what sites send (for the fuzz targets and tests).
pub mod parsers {
    pub use crate::analyze::links::{
        PageLinks, extract as extract_links, extract_served as extract_links_served,
    };
    pub use crate::analyze::scope::{Limits, LinkPolicy, Scope};
    pub use crate::analyze::{Analysis, Link, Received, analyze, decode, robots_tag, url_norm};
    pub use crate::coop::discovery::{link_header, robots_txt_pointers};
    pub use crate::frontier::politeness::{MAX_HONOURED_DELAY, Politeness};
    pub use crate::frontier::robots::Rules;
}

/// The crawl log's notes, to tell requests from pages read from what a site sent.
pub mod crawl_log {
    pub use crate::engine::crawl_log::{FROM_BATCH, FROM_SNAPSHOT, PUSHED_INLINE, is_request};
}

/// WebSub push as a subscriber: the callback server a crawl runs.
pub mod push {
    pub use crate::coop::callback::{CallbackEvent, CallbackServer, Expected, token_for};
}

/// A fleet's shared frontier in Redis.
pub mod fleet {
    pub use crate::frontier::fleet::FleetError;
    pub use crate::frontier::fleet::leases::{Grant, HostLeases};
    pub use crate::frontier::fleet::queue::{Settle, SharedQueue};
    pub use crate::frontier::fleet::shards::owner as shard_of;
    pub use crate::frontier::fleet::status::read as status;
}

/// The offline tools: exact PageRank, OPIC, crawl-order and refresh simulations, `inspect`.
pub mod tools {
    pub use crate::offline::floor_http::with_http as floor_with_http;
    pub use crate::offline::inspect::{InspectOptions, inspect};
    pub use crate::offline::opic_sim::power_law_graph;
    pub use crate::offline::{
        OfflineError, OpicSimArgs, OrderSimArgs, RankArgs, RefreshSimArgs, opic_sim, order_sim,
        rank, refresh_sim,
    };
}

#[cfg(test)]
mod layers {
    #[test]
    fn imports_follow_the_layers_of_the_architecture_document() {
        webcoop_testkit::layers::assert_layers(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            "crawler-client",
        );
    }

    #[test]
    fn no_two_files_import_each_other_even_through_others() {
        webcoop_testkit::circles::assert_no_circles(std::path::Path::new(env!(
            "CARGO_MANIFEST_DIR"
        )));
    }
}

//! webcoop-agent: runs beside Apache or nginx, keeps an exact inventory of a docroot's public
//! files and publishes what changed (robots.rdf, sitemaps, a changes feed).
//!
//! The `webcoop-agent` binary is a thin shell over [`Agent`]. Its modules are private: what
//! the binary, the tests, the examples and the fuzz targets use is re-exported here, and the
//! rest is the crate's own.

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod access_log;
mod activity;
mod agent;
mod check;
mod config;
mod console;
mod content_type;
mod debounce;
mod inventory;
mod judge;
mod notify_client;
mod origin;
mod popularity;
mod privacy;
mod publish;
mod scan;
mod secrets;
mod server_config;
mod service;
mod snapshot;
mod store;
mod urls;
mod watch;
mod web_server;

pub use activity::Activity;
pub use agent::{Agent, AgentError};
pub use check::check;
pub use config::identity::{IdentityPolicy, Subscribers};
pub use config::read_notify_secret;
pub use config::{
    AgentCommand, AgentOptions, ByteSize, Cli, Config, ConfigError, NotifySettings, OriginSettings,
    help_with_defaults,
};
pub use console::server::{Setup as ConsoleSetup, start as start_console};
pub use notify_client::send_notice;
pub use origin::{Notice, OriginAgent, OriginStats};
pub use publish::{ROBOTS_RDF, SITEMAP};
pub use server_config::{JudgeFacts, Site, TextKind, hidden_in_text, local_addresses};
pub use service::indexnow::{Pinging, start_alone as start_indexnow};
pub use service::{Running, start as start_service, start_with as start_service_with};
pub use snapshot::BuiltSnapshot;
pub use store::Store;

#[cfg(test)]
mod layers {
    #[test]
    fn imports_follow_the_layers_of_the_architecture_document() {
        webcoop_testkit::layers::assert_layers(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            "server-agent",
        );
    }

    #[test]
    fn no_two_files_import_each_other_even_through_others() {
        webcoop_testkit::circles::assert_no_circles(std::path::Path::new(env!(
            "CARGO_MANIFEST_DIR"
        )));
    }
}

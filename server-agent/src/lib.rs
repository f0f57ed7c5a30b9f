//! webcoop-agent: runs beside Apache or nginx, keeps an exact inventory of a docroot's public
//! files and publishes what changed (robots.rdf, sitemaps, a changes feed).
//!
//! The `webcoop-agent` binary is a thin shell over [`agent::Agent`].

pub mod activity;
pub mod agent;
pub mod check;
pub mod config;
pub mod console;
pub mod content_type;
pub mod debounce;
pub mod inventory;
pub mod judge;
pub mod privacy;
pub mod publish;
pub mod scan;
pub(crate) mod secrets;
pub mod server_config;
pub mod service;
pub mod store;
pub mod urls;
pub mod watch;

#[cfg(test)]
mod layers {
    #[test]
    fn imports_follow_the_layers_of_the_architecture_document() {
        webcoop_testkit::layers::assert_layers(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            "server-agent",
        );
    }
}

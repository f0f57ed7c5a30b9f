//! Why the crawl's settings are refused: each error names the setting and what was wrong.

use std::path::PathBuf;

/// Why the crawl's settings are refused: each names the setting and what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A duration that is not a non-negative number of seconds.
    #[error("{name} must be a non-negative number of seconds, not {value}")]
    Seconds {
        /// The setting.
        name: &'static str,
        /// As given.
        value: f64,
    },
    /// A `--resolve HOST=ADDR` that is not one.
    #[error("--resolve {entry}: {why}")]
    Resolve {
        /// As given.
        entry: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A seed file that cannot be read.
    #[error("seed file {path}: {source}")]
    SeedFile {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A seed that is not an http(s) URL.
    #[error("seed {at}: {value:?} is not {why}")]
    Seed {
        /// Where it was given (the argument, or file:line).
        at: String,
        /// As given.
        value: String,
        /// What it is not.
        why: String,
    },
    /// The config file cannot be read.
    #[error("config {}: {source}", path.display())]
    FileUnreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is not valid TOML of the known settings.
    #[error("config {}: {source}", path.display())]
    FileInvalid {
        /// The file.
        path: PathBuf,
        /// Why.
        source: toml::de::Error,
    },
    /// `--scope` is not a scope.
    #[error(transparent)]
    Scope(#[from] crate::analyze::scope::ScopeError),
    /// A value outside its range; the message names the setting and the range.
    #[error("{0}")]
    OutOfRange(String),
    /// The console's address or token is refused.
    #[error(transparent)]
    ConsoleBind(#[from] webcoop_daemon::console::access::BindError),
    /// The console's token file could not be read.
    #[error("console token file {path}: {source}")]
    ConsoleTokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

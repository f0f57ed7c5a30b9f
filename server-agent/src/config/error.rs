//! What is wrong with the agent's settings, in words a webmaster can act on.

use std::path::PathBuf;

/// A setting that cannot work, in words a webmaster can act on.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A required setting is missing.
    #[error("{0} is required (give --{1}, set WEBCOOP_{2}, or put {3} in the --config file)")]
    Missing(&'static str, &'static str, &'static str, &'static str),
    /// The config file cannot be read or parsed.
    #[error("config file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The docroot is unusable.
    #[error("docroot {path}: {reason}")]
    Docroot {
        /// The path given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The base URL is unusable.
    #[error(
        "base URL {url:?} {reason} (expected an absolute URL such as https://www.example.org/)"
    )]
    BaseUrl {
        /// The text given.
        url: String,
        /// Why.
        reason: String,
    },
    /// A directory the agent writes to is unusable.
    #[error("{what} directory {path}: {reason}")]
    Directory {
        /// `state` or `output`.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A number out of range.
    #[error("{0}")]
    Value(String),
}

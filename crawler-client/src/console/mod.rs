//! The crawl console: a web page served by the crawler itself (`crawl --console ADDR`), or by
//! `webcoop-crawl console --out DIR` for a crawl that is not running, with the JSON API under
//! the same address.
//!
//! The loop publishes what only it knows (rates, hosts' delays, the schedule) into [`live`]
//! once a second while someone watches; everything saved is read from the crawl's database on
//! its own read-only connection, so a busy console never slows the loop. Actions
//! are appended to `console-actions.jsonl` before the loop is told ([`actions`]), and a start
//! applies them again: a pause, a block or a delay outlives the process.

pub mod actions;
pub mod live;
pub mod server;

use std::net::SocketAddr;

/// Where the console listens and the token that guards it.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    /// The address.
    pub addr: SocketAddr,
    /// The token every request must carry (required off loopback).
    pub token: Option<String>,
}

/// Why a console could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The address or token is refused.
    #[error(transparent)]
    Bind(#[from] webcoop_protocol::console::access::BindError),
    /// The address could not be listened on.
    #[error("console on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The token file could not be read.
    #[error("console token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Reads a token file: its first line, without surrounding blanks.
pub fn read_token_file(path: &std::path::Path) -> Result<String, ConsoleError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConsoleError::TokenFile {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text.lines().next().unwrap_or("").trim().to_string())
}

/// Free bytes on the file system of `dir`.
pub(crate) fn disk_free(dir: &std::path::Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

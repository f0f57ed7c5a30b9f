//! The crawl console: a web page served by the crawler itself (`crawl --console ADDR`), or by
//! `webcoop-crawl console --out DIR` for a crawl that is not running, with the JSON API under
//! the same address.
//!
//! The loop publishes what only it knows (rates, hosts' delays, the schedule) into [`live`]
//! once a second while someone watches; everything saved is read from the crawl's database on
//! its own read-only connection, so a busy console never slows the loop. Actions
//! are appended to `console-actions.jsonl` before the loop is told ([`actions`]), and a start
//! applies them again: a pause, a block or a delay outlives the process.

pub(crate) mod actions;
pub(crate) mod live;
pub(crate) mod server;

use std::net::SocketAddr;

/// Why a console could not start.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// The address or token is refused.
    #[error(transparent)]
    Bind(#[from] webcoop_daemon::console::access::BindError),
    /// The address could not be listened on.
    #[error("console on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// Free bytes on the file system of `dir`.
pub(crate) fn disk_free(dir: &std::path::Path) -> Option<u64> {
    let st = rustix::fs::statvfs(dir).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

//! The `webcoop-agent` binary and its library driven as a webmaster's server drives them: the
//! command line, a site's life from first scan to deletions, and the watch loop. One binary,
//! so the crate links once for all of them.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod indexnow;
mod lifecycle;
mod watch;

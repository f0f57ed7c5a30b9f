//! webcoop: the workspace's root package, and `webcoop-bench`.
//!
//! Its library is the bench ([`bench`]: what it counts on the wire, the site it generates and
//! edits, how it scores freshness) and the real servers it runs on loopback ([`servers`]:
//! nginx). The package also holds the cross-crate integration tests in `tests/` and the
//! runnable `examples/`; the helpers only they use are in `webcoop-testkit` (`testkit/`),
//! a dev-dependency the bench binary never links.

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod bench;
pub mod servers;

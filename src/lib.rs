//! webcoop: the workspace's root package, and `webcoop-bench`.
//!
//! Its library is the bench ([`bench`]: what it counts on the wire, the site it generates and
//! edits, how it scores freshness) and the real servers it runs on loopback ([`servers`]:
//! nginx). The package also holds the cross-crate integration tests in `tests/` and the
//! runnable `examples/`; the helpers only they use are in `webcoop-testkit` (`testkit/`),
//! a dev-dependency the bench binary never links.

pub mod bench;
pub mod servers;

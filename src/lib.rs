//! webcoop: the workspace's root package.
//!
//! It holds what spans the agent and the crawler: the cross-crate integration tests in
//! `tests/`, runnable `examples/`, and [`testkit`], which finds and runs the real outside
//! components those tests use (Python reference clients, GNU patch, zstd), and [`servers`],
//! which runs real servers (nginx) on loopback, and [`testweb`], a web of generated sites
//! with known links and traps for the crawler, and [`bench`], the parts of `webcoop-bench`.

pub mod bench;
pub mod servers;
pub mod testkit;
pub mod testweb;

//! The cross-crate tests that need nothing outside the workspace: the agent's service
//! in-process, the crawler against loopback servers of its own, the bench, WebSub conformance,
//! a full disk, and the fuzz targets' seeds. `cargo test` runs them; one binary, so the
//! workspace links once for all of them.

#[path = "../common/mod.rs"]
mod common;

mod agent_backlog;
mod agent_service;
mod bench_proxy;
mod bench_run;
mod cli_pipes;
mod crawl_dead_hosts;
mod crawl_feeds;
mod crawl_probes;
mod crawl_shape;
mod crawl_web;
mod disk_full;
mod fuzz_corpora;
mod hot_text_layout;
mod snapshot_limits;
mod websub_conformance;

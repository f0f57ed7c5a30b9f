//! The cross-crate tests that run against real outside programs: Debian's nginx, Apache and
//! PHP-FPM, redis-server and a Redis Cluster, headless Chromium, pywb, and the Python reference
//! clients (feedparser, rdflib, warcio, networkx). Built with the `outside-tools` feature, which
//! `scripts/test.sh` turns on after installing them; one binary, so the workspace links once.

#[path = "../common/mod.rs"]
mod common;

mod agent_check;
mod agent_feedparser;
mod agent_nginx;
mod agent_popularity;
mod agent_resourcesync;
mod agent_snapshot;
mod agent_withdrawal;
mod agent_wordpress;
mod archive_replay;
mod console_agent;
mod console_crawl;
mod crawl_coop;
mod crawl_listing_parts;
mod crawl_nginx;
mod crawl_usage;
mod fleet_crawl;
mod fleet_leases;
mod fleet_lost_answers;
mod fleet_names;
mod fleet_queue;
mod fleet_shards;
mod hugo_feeds;
mod importance_cli;
mod indexnow_receiver;
mod links_reference;
#[path = "../common/popularity.rs"]
mod popularity;
mod reference_clients;
mod web_bot_auth;
mod websub_any_hub;
mod wordpress_feeds;
mod wordpress_site;

//! The parts of `webcoop-bench`: what it counts on the wire, the site it generates and
//! edits, and how it scores the crawler's copy against the truth.

pub mod castillo;
pub mod changes;
pub mod config;
pub mod first_crawl;
pub mod freshness;
pub mod hub;
pub mod mode;
pub mod plot;
pub mod popularity;
pub mod proxy;
pub mod reads;
pub mod release;
pub mod run;
pub mod served;
pub mod site;
pub mod site_server;
pub mod web_preset;
pub mod web_side;
pub mod web_signals;

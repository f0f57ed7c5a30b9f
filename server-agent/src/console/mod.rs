//! The agent's console (`--console ADDR`, never on the public listener): what is published and
//! what was left out, the hub's subscribers and deliveries, IndexNow's answers. Served from the
//! binary, guarded like the crawler's (`webcoop_protocol::console::access`).

pub mod activity;
pub mod server;

use std::net::SocketAddr;

/// Where the console listens and the token that guards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSettings {
    /// The address.
    pub addr: SocketAddr,
    /// The token every request must carry (required off loopback).
    pub token: Option<String>,
}

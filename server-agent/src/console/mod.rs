//! The agent's console (`--console ADDR`, never on the public listener): what is published and
//! what was left out, the hub's subscribers and deliveries, IndexNow's answers. Served from the
//! binary, guarded like the crawler's (`webcoop_daemon::console::access`).

pub(crate) mod server;

//! The adversarial suite: every way a hostile site, subscriber or planted file was seen (or
//! could be expected) to make the agent reveal more than the web server would, or to crash,
//! steer or exhaust the crawler, each driven through the real binaries (the agent beside
//! Debian's nginx, the crawler against loopback sites that say whatever the test writes).

#[path = "../common/subscriber.rs"]
#[allow(dead_code)]
mod subscriber;

mod agent;
mod apache;
mod crawler;
mod hub;
mod judge;
mod network;
mod state;
mod support;

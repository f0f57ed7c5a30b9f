//! The adversarial suite: every way a hostile site, subscriber or planted file was seen (or
//! could be expected) to make the agent reveal more than the web server would, or to crash,
//! steer or exhaust the crawler, each driven through the real binaries. The crawler's side runs
//! against loopback sites that say whatever the test writes, in every `cargo test`; the agent's
//! side runs beside Debian's nginx (and Apache), with the `outside-tools` feature.

#[cfg(feature = "outside-tools")]
#[path = "../common/subscriber.rs"]
#[allow(dead_code)]
mod subscriber;

mod absences;
mod access_log;
#[cfg(feature = "outside-tools")]
mod agent;
#[cfg(feature = "outside-tools")]
mod apache;
mod claims;
mod crawler;
#[cfg(feature = "outside-tools")]
mod hub;
#[cfg(feature = "outside-tools")]
mod judge;
mod listing_parts;
mod listing_site;
mod network;
#[cfg(feature = "outside-tools")]
mod nginx_site;
mod origin;
#[path = "../common/popularity.rs"]
mod popularity;
mod snapshots;
#[cfg(feature = "outside-tools")]
mod state;
#[cfg(feature = "outside-tools")]
mod stranger_apache;
#[cfg(feature = "outside-tools")]
mod stranger_nginx;
#[cfg(feature = "outside-tools")]
mod stranger_property;
#[cfg(feature = "outside-tools")]
mod stranger_support;
// Without the agent's scenarios, some helpers have no caller.
#[cfg_attr(not(feature = "outside-tools"), allow(dead_code))]
mod support;

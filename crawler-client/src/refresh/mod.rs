//! Refresh: when a known page is worth fetching again. Change-rate estimates from what visits
//! show, the allocation of a visit budget among pages, the crawler's schedule of due pages. The simulation
//! that compares the policies is in `offline`.

pub(crate) mod allocation;
pub(crate) use webcoop_protocol::change_rate;
pub(crate) mod schedule;

//! Refresh: when a known page is worth fetching again. Change-rate estimates from what visits
//! show, the allocation of a visit budget among pages, the crawler's schedule of due pages, and
//! the simulation that compares the policies.

pub mod allocation;
pub mod change_rate;
pub mod schedule;
pub mod sim;

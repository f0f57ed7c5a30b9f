//! What the web-shaped server saw of a crawl, as the bench prints it.

use std::time::Duration;

/// What the server saw of a crawl.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Requests, all hosts.
    pub requests: u64,
    /// Pages answered with a 200 (robots.txt not counted).
    pub pages_served: u64,
    /// Pages answered with a 200 more than once.
    pub served_twice: u64,
    /// Pages of healthy hosts never requested.
    pub missed: u64,
    /// TCP connections accepted.
    pub connections: u64,
    /// Hosts that were asked anything.
    pub hosts_reached: u64,
    /// DNS questions about hosts, and the hosts asked about.
    pub lookups: u64,
    /// Hosts whose name was looked up.
    pub hosts_looked_up: u64,
    /// The most lookups of one host.
    pub most_lookups: u32,
    /// Requests that arrived while another to the same host was unanswered.
    pub overlaps: u64,
    /// Requests for disallowed paths, or for pages of a host whose robots.txt erred.
    pub forbidden: u64,
    /// The closest a request came after the previous answer of its host, and the delay
    /// required there (the smallest ratio of the two over all hosts).
    pub closest_gap: Option<(Duration, Duration)>,
    /// The politeness floor: the longest any healthy host's answers and required delays take.
    pub floor: Duration,
    /// The healthy host answered last (see [`EndedLast`]).
    pub ended_last: Option<EndedLast>,
    /// Healthy hosts that once waited more than ten seconds past a required delay.
    pub hosts_kept_waiting: u64,
}

/// The healthy host answered last, times from the web's start: what bounds a crawl's wall
/// beyond the politeness floor.
#[derive(Debug, Clone, Copy, Default)]
pub struct EndedLast {
    /// Its first request.
    pub first: Duration,
    /// Its last answer.
    pub last: Duration,
    /// Its answers and the delays required after them, in all; the rest of its span it
    /// waited for the crawler.
    pub own: Duration,
    /// Its longest wait past a required delay, and when the request ending it arrived.
    pub longest_wait: (Duration, Duration),
    /// Its waits past a required delay longer than a second.
    pub waits_over_second: u32,
}

//! What the web-shaped server saw of a crawl, as the bench prints it.

use super::{WebShape, host_name};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    /// When each healthy host reached got its first request, from the web's start, sorted:
    /// how fast discovery across hosts ran.
    pub host_starts: Vec<Duration>,
    /// The most requests one failing host received (what reached it: a refused connection or
    /// a name that does not resolve never does).
    pub most_asked_failing: u32,
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

/// The pages (and robots.txt files) served twice across a kill, by their first answer.
#[derive(Debug, Default)]
pub struct TwiceServed {
    /// Asked first after the kill: the resumed crawl itself asked twice.
    pub asked_after: u64,
    /// Asked before the kill and answered after it: under way when the asker died.
    pub under_way: u64,
    /// Answered within 50 ms before the kill: received, and maybe not written yet.
    pub answered_50ms_before: u64,
    /// Answered 50 ms to 1 s before the kill.
    pub answered_1s_before: u64,
    /// Answered over a second before the kill: written long before, not taken back.
    pub answered_longer_before: u64,
    /// Up to five of the last two kinds and of the first: the URL, and seconds from the kill
    /// to its first answer.
    pub examples: Vec<(String, f64)>,
}

impl WebShape {
    /// What the server saw so far.
    pub fn figures(&self) -> Figures {
        let w = &self.web;
        let pages = w.spec.pages;
        let mut f = Figures::default();
        let mut closest: Option<(i64, u64)> = None;
        for (i, s) in w.seen.iter().enumerate() {
            let requests = s.requests.load(Ordering::Relaxed);
            f.requests += u64::from(requests);
            f.hosts_reached += u64::from(requests > 0);
            f.connections += u64::from(s.connections.load(Ordering::Relaxed));
            let lookups = s.lookups.load(Ordering::Relaxed);
            f.lookups += u64::from(lookups);
            f.hosts_looked_up += u64::from(lookups > 0);
            f.most_lookups = f.most_lookups.max(lookups);
            f.overlaps += u64::from(s.overlaps.load(Ordering::Relaxed));
            f.forbidden += u64::from(s.forbidden.load(Ordering::Relaxed));
            let req = s.gap_required_ns.load(Ordering::Relaxed);
            if req > 0 {
                let gap = s.min_gap_ns.load(Ordering::Relaxed);
                if closest
                    .is_none_or(|(g, r)| (gap as f64) * (r as f64) < (g as f64) * (req as f64))
                {
                    closest = Some((gap, req));
                }
            }
            if !w.kinds[i].serves_pages() {
                f.most_asked_failing = f.most_asked_failing.max(requests);
            }
            if w.kinds[i].serves_pages() {
                let floor = s
                    .floor_ns
                    .load(Ordering::Relaxed)
                    .saturating_sub(s.required_ns.load(Ordering::Relaxed));
                f.floor = f.floor.max(Duration::from_nanos(floor));
                let last = Duration::from_nanos(s.last_answered_ns.load(Ordering::Relaxed));
                f.hosts_kept_waiting +=
                    u64::from(s.longest_wait_ns.load(Ordering::Relaxed) > 10_000_000_000);
                if requests > 0 {
                    f.host_starts.push(Duration::from_nanos(
                        s.first_arrived_ns.load(Ordering::Relaxed),
                    ));
                }
                if f.ended_last.is_none_or(|e| last > e.last) {
                    let ns = |a: &AtomicU64| Duration::from_nanos(a.load(Ordering::Relaxed));
                    f.ended_last = Some(EndedLast {
                        first: ns(&s.first_arrived_ns),
                        last,
                        own: Duration::from_nanos(floor),
                        longest_wait: (ns(&s.longest_wait_ns), ns(&s.longest_wait_until_ns)),
                        waits_over_second: s.waits_over_second.load(Ordering::Relaxed),
                    });
                }
                for j in 0..pages {
                    match w.served[i * (pages + 1) + j].load(Ordering::Relaxed) {
                        0 => f.missed += 1,
                        1 => f.pages_served += 1,
                        _ => {
                            f.pages_served += 1;
                            f.served_twice += 1;
                        }
                    }
                }
            }
        }
        f.host_starts.sort_unstable();
        f.closest_gap = closest.map(|(g, r)| {
            (
                Duration::from_nanos(g.max(0) as u64),
                Duration::from_nanos(r),
            )
        });
        f
    }

    /// The pages served twice, sorted by when their first answer was asked and given against
    /// `kill`: what a kill costs, told apart from what a resumed crawl fetches again.
    pub fn twice_around(&self, kill: Instant) -> TwiceServed {
        let w = &self.web;
        let kill_ns = kill.saturating_duration_since(w.start).as_nanos() as u64;
        let mut t = TwiceServed::default();
        let firsts = w.first_asked_ns.iter().zip(&w.first_answered_ns);
        for (at, (n, (asked, answered))) in w.served.iter().zip(firsts).enumerate() {
            let (asked, answered) = (
                asked.load(Ordering::Relaxed),
                answered.load(Ordering::Relaxed),
            );
            if n.load(Ordering::Relaxed) < 2 || answered == 0 {
                continue;
            }
            let before = kill_ns.saturating_sub(answered);
            let count = if asked >= kill_ns {
                &mut t.asked_after
            } else if answered >= kill_ns {
                &mut t.under_way
            } else if before <= 50_000_000 {
                &mut t.answered_50ms_before
            } else if before <= 1_000_000_000 {
                &mut t.answered_1s_before
            } else {
                &mut t.answered_longer_before
            };
            *count += 1;
            if (asked >= kill_ns || before > 1_000_000_000) && t.examples.len() < 5 {
                let (host, j) = (at / (w.spec.pages + 1), at % (w.spec.pages + 1));
                let page = match j {
                    0 => "/".to_string(),
                    j if j == w.spec.pages => "/robots.txt".to_string(),
                    j => format!("/p/{j}.html"),
                };
                t.examples.push((
                    format!("http://{}{page}", host_name(host)),
                    (answered as f64 - kill_ns as f64) / 1e9,
                ));
            }
        }
        t
    }

    /// Up to `n` healthy hosts with pages never fetched, and how many each.
    pub fn missing_hosts(&self, n: usize) -> Vec<(String, usize)> {
        let w = &self.web;
        let pages = w.spec.pages;
        (0..w.spec.hosts)
            .filter(|&i| w.kinds[i].serves_pages())
            .map(|i| {
                let missed = (0..pages)
                    .filter(|&j| w.served[i * (pages + 1) + j].load(Ordering::Relaxed) == 0)
                    .count();
                (host_name(i), missed)
            })
            .filter(|(_, m)| *m > 0)
            .take(n)
            .collect()
    }
}

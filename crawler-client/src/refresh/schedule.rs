//! The crawler's refresh schedule: every page worth refreshing, when it is next due under the
//! revisit policy, re-planned at each visit as its change-rate estimate and importance move.
//!
//! Cooperation feeds it knowledge through [`Schedule::announce`]: an announced change makes a
//! page due at once; an announcement that it is unchanged counts as a visit that saw nothing.

use super::allocation::{Allocation, Policy};
use crate::ids::{Fp, HostId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// What a site said about a page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Announcement {
    /// It changed at this time (ms since the epoch).
    ChangedAt(i64),
}

/// A page the schedule tracks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tracked {
    /// Host id.
    pub(crate) host: HostId,
    /// The URL.
    pub(crate) url: String,
    /// Links from a seed.
    pub(crate) depth: u32,
    /// Estimated change rate, per second.
    pub(crate) rate: f64,
    /// Importance (OPIC).
    pub(crate) weight: f64,
    /// Last visit (ms).
    pub(crate) last: i64,
    /// When it is due (ms).
    pub(crate) due: i64,
    /// Left to its site's announcements: outside the allocation, due only as a safety net.
    pub(crate) covered: bool,
}

/// Knobs of the schedule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScheduleConfig {
    /// The revisit policy.
    pub(crate) policy: Policy,
    /// Visits per second for refreshing; None: every page once per `cycle_secs` on average.
    pub(crate) budget: Option<f64>,
    /// The average revisit interval when no budget is given, seconds.
    pub(crate) cycle_secs: f64,
    /// No page is revisited sooner than this after a visit, seconds.
    pub(crate) min_interval_secs: f64,
    /// A page the policy gives up on is still looked at after this long, seconds, to notice
    /// that it slowed down.
    pub(crate) max_interval_secs: f64,
    /// The change rate assumed before a page was seen twice, per second.
    pub(crate) prior_rate: f64,
}

/// How fresh the schedule expects the copies to be.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub(crate) struct Freshness {
    /// Expected share of pages whose copy is current, when any is tracked.
    pub(crate) estimate: Option<f64>,
    /// Pages the crawler polls.
    pub(crate) polled: usize,
    /// Of those, due now.
    pub(crate) due: usize,
    /// Pages left to their sites' announcements.
    pub(crate) covered: usize,
}

/// The schedule.
pub(crate) struct Schedule {
    config: ScheduleConfig,
    alloc: Allocation,
    pages: HashMap<Fp, Tracked>,
    heap: BinaryHeap<Reverse<(i64, Fp)>>,
    changes_since_solve: usize,
    covered: usize,
}

impl Schedule {
    /// An empty schedule.
    pub(crate) fn new(config: ScheduleConfig) -> Self {
        Schedule {
            alloc: Allocation::new(config.policy, config.budget.unwrap_or(0.0)),
            config,
            pages: HashMap::new(),
            heap: BinaryHeap::new(),
            changes_since_solve: 0,
            covered: 0,
        }
    }

    /// Pages tracked.
    pub(crate) fn len(&self) -> usize {
        self.pages.len()
    }

    /// The visit budget in use, per second.
    pub(crate) fn budget(&self) -> f64 {
        self.alloc.budget()
    }

    /// A tracked page.
    pub(crate) fn page(&self, fp: Fp) -> Option<&Tracked> {
        self.pages.get(&fp)
    }

    /// Re-solves the allocation for the pages as they are now.
    pub(crate) fn solve(&mut self) {
        if self.config.budget.is_none() {
            // Covered pages are paid for by their sites' announcements, not by the budget.
            let polled = self.pages.len() - self.covered;
            let budget = polled as f64 / self.config.cycle_secs.max(1e-9);
            self.alloc.set_budget(budget);
        }
        self.alloc.solve();
        self.changes_since_solve = 0;
        self.bring_forward();
    }

    /// Plans again, from its last visit, each page the new solution wants back sooner than
    /// planned. A page is planned with the solution of its visit: early in a crawl the budget
    /// (the pages known over the cycle) is small, and a page the few pages known then left
    /// out would otherwise wait the longest interval, however much it weighs once the
    /// crawl knows more. Pages wanted later keep their plan (a visit plans them again), and
    /// so do pages taken for a visit not made yet ([`Schedule::take_due`] holds them at the
    /// longest interval from then, past any plan from their last visit).
    fn bring_forward(&mut self) {
        let margin = (self.config.min_interval_secs * 1000.0) as i64;
        let longest = (self.config.max_interval_secs * 1000.0) as i64;
        let sooner: Vec<(Fp, i64)> = self
            .pages
            .iter()
            .filter(|(_, p)| !p.covered && p.due <= p.last.saturating_add(longest))
            .filter_map(|(fp, p)| {
                let due = p.last.saturating_add(self.interval_ms(p.rate, p.weight));
                (due.saturating_add(margin) < p.due).then_some((*fp, due))
            })
            .collect();
        for (fp, due) in sooner {
            if let Some(p) = self.pages.get_mut(&fp) {
                p.due = due;
            }
            self.heap.push(Reverse((due, fp)));
        }
    }

    /// Takes back pages from an earlier run (their `due` is ignored): counts them all, solves
    /// once, then plans each from its last visit.
    pub(crate) fn restore(&mut self, pages: impl IntoIterator<Item = (Fp, Tracked)>) {
        for (fp, p) in pages {
            let p = Tracked {
                covered: false,
                ..p
            };
            self.alloc.add(p.rate, p.weight);
            if let Some(old) = self.pages.insert(fp, p) {
                self.untrack(&old);
            }
        }
        self.solve();
        let dues: Vec<(Fp, i64)> = self
            .pages
            .iter()
            .map(|(fp, p)| (*fp, p.last + self.interval_ms(p.rate, p.weight)))
            .collect();
        for (fp, due) in dues {
            if let Some(p) = self.pages.get_mut(&fp) {
                p.due = due;
            }
            self.heap.push(Reverse((due, fp)));
        }
    }

    #[allow(clippy::too_many_arguments)]
    /// Records a visit at `at` (ms) of a page (tracked or new) with its current estimates, and
    /// plans the next one.
    pub(crate) fn visited(
        &mut self,
        fp: Fp,
        host: HostId,
        url: &str,
        depth: u32,
        at: i64,
        rate: Option<f64>,
        weight: f64,
    ) {
        let rate = rate.unwrap_or(self.config.prior_rate);
        let covered = self.pages.get(&fp).is_some_and(|p| p.covered);
        if let Some(old) = self.pages.remove(&fp) {
            self.untrack(&old);
        }
        if covered {
            self.covered += 1;
        } else {
            self.alloc.add(rate, weight);
        }
        self.changes_since_solve += 1;
        self.pages.insert(
            fp,
            Tracked {
                host,
                url: url.to_string(),
                depth,
                rate,
                weight,
                last: at,
                due: at,
                covered,
            },
        );
        // Re-solving costs a pass over the histogram: do it once per batch of changes.
        if self.changes_since_solve > 1000 || self.changes_since_solve * 20 > self.pages.len() {
            self.solve();
        }
        let due = if covered {
            at + (self.config.max_interval_secs * 1000.0) as i64
        } else {
            at + self.interval_ms(rate, weight)
        };
        tracing::debug!(url, rate, weight, due, at, covered, "visited");
        if let Some(p) = self.pages.get_mut(&fp) {
            p.due = due;
        }
        self.heap.push(Reverse((due, fp)));
    }

    fn interval_ms(&self, rate: f64, weight: f64) -> i64 {
        let c = &self.config;
        let secs = self
            .alloc
            .interval(rate, weight)
            .unwrap_or(c.max_interval_secs)
            .clamp(
                c.min_interval_secs,
                c.max_interval_secs.max(c.min_interval_secs),
            );
        (secs * 1000.0) as i64
    }

    /// A site's announcement about a page, at `now` (ms). Returns whether the page became due.
    pub(crate) fn announce(&mut self, fp: Fp, what: Announcement, now: i64) -> bool {
        let Some(p) = self.pages.get_mut(&fp) else {
            return false;
        };
        match what {
            Announcement::ChangedAt(t) if t > p.last => {
                p.due = now;
                self.heap.push(Reverse((now, fp)));
                true
            }
            Announcement::ChangedAt(_) => false,
        }
    }

    /// Leaves a page to its site's announcements: it is due only after the longest interval,
    /// as a safety net, unless an announcement makes it due sooner.
    pub(crate) fn cover(&mut self, fp: Fp) {
        let max_ms = (self.config.max_interval_secs * 1000.0) as i64;
        if let Some(p) = self.pages.get_mut(&fp) {
            if !p.covered {
                p.covered = true;
                self.covered += 1;
                self.alloc.remove(p.rate, p.weight);
                self.changes_since_solve += 1;
            }
            let due = p.last + max_ms;
            if due != p.due {
                p.due = due;
                self.heap.push(Reverse((due, fp)));
            }
        }
    }

    /// Takes a page back from its site's announcements (a feed no longer lists it): due by
    /// its own estimate again.
    pub(crate) fn uncover(&mut self, fp: Fp) {
        let Some(p) = self.pages.get_mut(&fp) else {
            return;
        };
        if !p.covered {
            return;
        }
        p.covered = false;
        self.covered -= 1;
        self.alloc.add(p.rate, p.weight);
        self.changes_since_solve += 1;
        let (rate, weight, last) = (p.rate, p.weight, p.last);
        let due = last + self.interval_ms(rate, weight);
        if let Some(p) = self.pages.get_mut(&fp) {
            p.due = due;
        }
        self.heap.push(Reverse((due, fp)));
    }

    /// Covers (or, with `covered` false, plans again by their own estimates) every page of a
    /// host: its site started or stopped answering for them.
    pub(crate) fn set_host_covered(&mut self, host: HostId, covered: bool) {
        let max_ms = (self.config.max_interval_secs * 1000.0) as i64;
        for p in self.pages.values_mut().filter(|p| p.host == host) {
            if p.covered != covered {
                p.covered = covered;
                if covered {
                    self.covered += 1;
                    self.alloc.remove(p.rate, p.weight);
                } else {
                    self.covered -= 1;
                    self.alloc.add(p.rate, p.weight);
                }
            }
        }
        self.solve();
        let dues: Vec<(Fp, i64)> = self
            .pages
            .iter()
            .filter(|(_, p)| p.host == host)
            .map(|(fp, p)| {
                let due = if covered {
                    p.last + max_ms
                } else {
                    p.last + self.interval_ms(p.rate, p.weight)
                };
                (*fp, due)
            })
            .collect();
        for (fp, due) in dues {
            if let Some(p) = self.pages.get_mut(&fp) {
                p.due = due;
            }
            self.heap.push(Reverse((due, fp)));
        }
    }

    /// The pages of a host.
    pub(crate) fn pages_of(&self, host: HostId) -> Vec<Fp> {
        let mut fps: Vec<Fp> = self
            .pages
            .iter()
            .filter(|(_, p)| p.host == host)
            .map(|(fp, _)| *fp)
            .collect();
        fps.sort_unstable();
        fps
    }

    /// The expected share of pages whose copy is current at `now` (ms): for a polled page the
    /// Poisson estimate `e^(-rate * age)` of no change since its visit; a page left to its
    /// site's announcements counts as current (the site tells of each change). With the pages
    /// due and the counts of each kind.
    pub(crate) fn freshness(&self, now: i64) -> Freshness {
        let mut f = Freshness::default();
        let mut sum = 0.0;
        for p in self.pages.values() {
            if p.covered {
                f.covered += 1;
                continue;
            }
            f.polled += 1;
            let age = (now - p.last).max(0) as f64 / 1000.0;
            sum += (-p.rate.max(0.0) * age).exp();
            if p.due <= now {
                f.due += 1;
            }
        }
        let all = f.polled + f.covered;
        f.estimate = (all > 0).then(|| (sum + f.covered as f64) / all as f64);
        f
    }

    /// Pages left to their sites' announcements, by host.
    pub(crate) fn covered_per_host(&self) -> HashMap<HostId, usize> {
        let mut m = HashMap::new();
        for p in self.pages.values().filter(|p| p.covered) {
            *m.entry(p.host).or_insert(0) += 1;
        }
        m
    }

    /// A host's pages with when each is due, soonest first, at most `limit`.
    pub(crate) fn due_of(&self, host: HostId, limit: usize) -> Vec<Tracked> {
        let mut pages: Vec<Tracked> = self
            .pages
            .values()
            .filter(|p| p.host == host)
            .cloned()
            .collect();
        pages.sort_by_key(|p| p.due);
        pages.truncate(limit);
        pages
    }

    /// Stops tracking a page (deleted).
    pub(crate) fn remove(&mut self, fp: Fp) {
        if let Some(old) = self.pages.remove(&fp) {
            self.untrack(&old);
        }
    }

    /// Takes a page that is leaving out of the allocation or the covered count.
    fn untrack(&mut self, old: &Tracked) {
        if old.covered {
            self.covered -= 1;
        } else {
            self.alloc.remove(old.rate, old.weight);
        }
    }

    /// When the next page is due (ms).
    pub(crate) fn next_due(&mut self) -> Option<i64> {
        self.drop_stale();
        self.heap.peek().map(|Reverse((due, _))| *due)
    }

    /// Takes up to `limit` pages due at `now` (ms), earliest first. A taken page is due again
    /// only after its next visit is recorded (or `now + max_interval` if it never is).
    pub(crate) fn take_due(&mut self, now: i64, limit: usize) -> Vec<(Fp, Tracked)> {
        let mut out = Vec::new();
        while out.len() < limit {
            self.drop_stale();
            let Some(Reverse((due, fp))) = self.heap.peek().copied() else {
                break;
            };
            if due > now {
                break;
            }
            self.heap.pop();
            if let Some(p) = self.pages.get_mut(&fp) {
                let later = now + (self.config.max_interval_secs * 1000.0) as i64;
                p.due = later;
                self.heap.push(Reverse((later, fp)));
                out.push((fp, p.clone()));
            }
        }
        out
    }

    /// Drops heap entries that no longer match their page's due time.
    fn drop_stale(&mut self) {
        while let Some(Reverse((due, fp))) = self.heap.peek().copied() {
            if self.pages.get(&fp).is_some_and(|p| p.due == due) {
                return;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(policy: Policy) -> ScheduleConfig {
        ScheduleConfig {
            policy,
            budget: None,
            cycle_secs: 100.0,
            min_interval_secs: 1.0,
            max_interval_secs: 10_000.0,
            prior_rate: 0.01,
        }
    }

    fn tracked(url: &str, rate: f64, last: i64) -> Tracked {
        Tracked {
            host: HostId(1),
            url: url.into(),
            depth: 0,
            rate,
            weight: 1.0,
            last,
            due: 0,
            covered: false,
        }
    }

    #[test]
    fn freshness_is_the_poisson_chance_of_no_change_and_covered_pages_count_current() {
        let mut s = Schedule::new(config(Policy::Sqrt));
        assert_eq!(s.freshness(0).estimate, None);
        // One page changing once per 100 s, visited 100 s ago: e^-1 of being unchanged.
        s.restore([(Fp(1), tracked("http://e/a", 0.01, 0))]);
        let f = s.freshness(100_000);
        assert!((f.estimate.unwrap() - (-1f64).exp()).abs() < 1e-12, "{f:?}");
        assert_eq!((f.polled, f.covered), (1, 0));
        s.restore([(Fp(2), tracked("http://e/b", 0.01, 0))]);
        s.cover(Fp(2));
        let f = s.freshness(100_000);
        assert!((f.estimate.unwrap() - ((-1f64).exp() + 1.0) / 2.0).abs() < 1e-12);
        assert_eq!((f.polled, f.covered), (1, 1));
        assert_eq!(s.due_of(HostId(1), 10).len(), 2);
        assert_eq!(s.covered_per_host().get(&HostId(1)), Some(&1));
    }

    #[test]
    fn a_page_left_out_while_few_pages_were_known_is_brought_back_once_the_budget_grows() {
        let mut s = Schedule::new(config(Policy::Optimal));
        // Two pages known: the budget is two visits per cycle, and the light one is left out.
        s.visited(Fp(1), HostId(1), "http://e/heavy", 0, 0, Some(0.01), 100.0);
        s.visited(Fp(2), HostId(1), "http://e/light", 0, 0, Some(0.01), 1.0);
        let left_out = s.page(Fp(2)).unwrap().due;
        assert_eq!(left_out, 10_000_000, "the longest interval");
        // Forty more pages as light as it: the budget grows forty-fold, and the page is
        // planned again within it, not at its old plan.
        for i in 0..40 {
            let url = format!("http://e/{i}");
            s.visited(Fp(10 + i), HostId(1), &url, 0, 1_000, Some(0.01), 1.0);
        }
        let due = s.page(Fp(2)).unwrap().due;
        assert!(due < left_out / 10, "{due}");
        // A page taken for a visit is not planned again before the visit is made: it would be
        // taken twice.
        let taken = s.take_due(due, 100);
        assert!(taken.iter().any(|(fp, _)| *fp == Fp(2)));
        for i in 0..40 {
            let url = format!("http://e/more{i}");
            s.visited(Fp(100 + i), HostId(1), &url, 0, due, Some(0.01), 1.0);
        }
        let again = s.take_due(due + 1, 1000);
        assert!(
            !again.iter().any(|(fp, _)| *fp == Fp(2)),
            "taken again before its visit"
        );
    }

    #[test]
    fn a_faster_changing_page_comes_back_sooner_within_the_budget() {
        let mut s = Schedule::new(config(Policy::Sqrt));
        s.restore([
            (Fp(1), tracked("http://e/slow", 0.001, 0)),
            (Fp(2), tracked("http://e/fast", 0.016, 0)),
        ]);
        let (slow, fast) = (s.page(Fp(1)).unwrap().due, s.page(Fp(2)).unwrap().due);
        assert!(fast < slow, "{fast} {slow}");
        // Two pages, one visit per 100 s each on average: 0.02 visits/s shared 1:4.
        assert!((s.budget() - 0.02).abs() < 1e-12);
        assert_eq!((slow, fast), (250_000, 62_500));
        assert_eq!(s.next_due(), Some(62_500));
        assert!(s.take_due(62_499, 10).is_empty());
        let due = s.take_due(62_500, 10);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].1.url, "http://e/fast");
        assert_eq!(
            s.next_due(),
            Some(250_000),
            "taken pages wait for their visit"
        );
    }

    #[test]
    fn covered_pages_leave_the_budget_to_the_polled_ones() {
        let mut s = Schedule::new(config(Policy::Uniform));
        let mut other = tracked("http://f/a", 0.01, 0);
        other.host = HostId(2);
        s.restore([
            (Fp(1), tracked("http://e/a", 0.01, 0)),
            (Fp(2), tracked("http://e/b", 0.01, 0)),
            (Fp(3), other),
        ]);
        assert_eq!(s.page(Fp(3)).unwrap().due, 100_000, "one visit per cycle");
        s.set_host_covered(HostId(1), true);
        assert!((s.budget() - 0.01).abs() < 1e-12, "{}", s.budget());
        assert_eq!(
            s.page(Fp(1)).unwrap().due,
            10_000_000,
            "the safety net only"
        );
        // A visit of a covered page keeps it covered.
        s.visited(Fp(1), HostId(1), "http://e/a", 0, 5_000, Some(0.01), 1.0);
        assert!(s.page(Fp(1)).unwrap().covered);
        assert_eq!(s.page(Fp(1)).unwrap().due, 10_005_000);
        s.visited(Fp(3), HostId(2), "http://f/a", 0, 5_000, Some(0.01), 1.0);
        assert_eq!(s.page(Fp(3)).unwrap().due, 105_000);
        s.set_host_covered(HostId(1), false);
        assert!((s.budget() - 0.03).abs() < 1e-12);
        assert_eq!(
            s.page(Fp(2)).unwrap().due,
            100_000,
            "planned from its last visit again"
        );
        s.remove(Fp(1));
        s.solve();
        assert!((s.budget() - 0.02).abs() < 1e-12);
    }

    #[test]
    fn announcements_override_the_estimate() {
        let mut s = Schedule::new(config(Policy::Uniform));
        s.restore([(Fp(1), tracked("http://e/a", 0.01, 1000))]);
        let planned = s.page(Fp(1)).unwrap().due;
        assert!(planned > 1000, "due after the visit");
        assert!(
            !s.announce(Fp(1), Announcement::ChangedAt(500), 2000),
            "old news"
        );
        assert!(s.announce(Fp(1), Announcement::ChangedAt(1500), 2000));
        assert_eq!(s.take_due(2000, 10).len(), 1);
        s.visited(Fp(1), HostId(1), "http://e/a", 0, 2000, None, 1.0);
        assert!(
            !s.announce(Fp(99), Announcement::ChangedAt(1), 1),
            "unknown page"
        );
    }
}

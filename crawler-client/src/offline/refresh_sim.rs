//! The refresh experiment: pages change as Poisson processes with heavy-tailed rates, a crawler
//! with a fixed budget of visits per day learns their rates from what it sees on each visit
//! (content changed or not, and Last-Modified) and revisits them under a policy. Freshness and
//! age are measured exactly (time-averaged over the pages), after a warm-up.

use crate::refresh::allocation::{Allocation, Policy, expected_freshness};
use crate::refresh::change_rate::ChangeHistory;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

const DAY: f64 = 86_400.0;

/// The experiment's parameters.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Pages.
    pub(crate) pages: usize,
    /// Visits per day.
    pub(crate) budget: f64,
    /// Days simulated.
    pub(crate) days: f64,
    /// Days before measuring.
    pub(crate) warmup: f64,
    /// Pareto shape of the change rates (smaller: heavier tail).
    pub(crate) shape: f64,
    /// The smallest change rate, per day.
    pub(crate) min_rate: f64,
    /// The largest change rate, per day.
    pub(crate) max_rate: f64,
    /// Whether pages have unequal importance (Zipf over the pages) that weighs freshness.
    pub(crate) importance: bool,
    /// Whether the crawler sees Last-Modified.
    pub(crate) last_modified: bool,
    /// Random seed.
    pub(crate) seed: u64,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            pages: 2000,
            budget: 200.0,
            days: 240.0,
            warmup: 60.0,
            shape: 1.0,
            min_rate: 1.0 / 60.0,
            max_rate: 48.0,
            importance: false,
            last_modified: true,
            seed: 1,
        }
    }
}

/// What a policy achieved.
#[derive(Debug, Clone, Copy)]
pub struct RefreshResult {
    /// Time-averaged freshness, importance-weighted.
    pub(crate) freshness: f64,
    /// Time-averaged age, in days, importance-weighted.
    pub(crate) age_days: f64,
    /// Visits per day actually spent.
    pub(crate) visits_per_day: f64,
    /// Pages the policy stopped refreshing at the end.
    pub(crate) dropped: usize,
    /// Freshness the policy's final plan gives in expectation with the true rates.
    pub(crate) planned_freshness: f64,
}

/// The pages' true change rates (per second) and importance.
pub(crate) fn pages(setup: &Setup) -> (Vec<f64>, Vec<f64>) {
    let mut rng = StdRng::seed_from_u64(setup.seed);
    let rates = (0..setup.pages)
        .map(|_| {
            let u: f64 = rng.random_range(0.0..1.0);
            (setup.min_rate * (1.0 - u).powf(-1.0 / setup.shape)).min(setup.max_rate) / DAY
        })
        .collect();
    let n = setup.pages as f64;
    let weights = (0..setup.pages)
        .map(|i| {
            if setup.importance {
                n / (i as f64 + 1.0) / harmonic(setup.pages)
            } else {
                1.0
            }
        })
        .collect();
    (rates, weights)
}

/// A wait drawn from the exponential distribution of `rate` (none for a page that never
/// changes).
fn exp(rng: &mut StdRng, rate: f64) -> f64 {
    if rate <= 0.0 {
        f64::INFINITY
    } else {
        -(1.0 - rng.random_range(0.0..1.0f64)).ln() / rate
    }
}

fn harmonic(n: usize) -> f64 {
    (1..=n).map(|i| 1.0 / i as f64).sum()
}

/// Runs one policy; `omniscient` gives it the true rates instead of its estimates.
// One function: the simulation's event loop shares a dozen per-page vectors; split, every
// part would take them all as arguments.
pub fn run(setup: &Setup, policy: Policy, omniscient: bool) -> RefreshResult {
    let (rates, weights) = pages(setup);
    let n = setup.pages;
    let mut rng = StdRng::seed_from_u64(setup.seed ^ 0xc0ffee);
    let budget = setup.budget / DAY;
    // Before any observation every page is assumed to change once a week.
    let prior = 1.0 / (7.0 * DAY);
    let mut history = vec![ChangeHistory::default(); n];
    let mut belief: Vec<f64> = (0..n)
        .map(|i| if omniscient { rates[i] } else { prior })
        .collect();
    let mut plan = Allocation::new(policy, budget);
    for i in 0..n {
        plan.add(belief[i], weights[i]);
    }
    plan.solve();
    // Each page is first visited at a random moment of the first cycle, so visits spread.
    let first_cycle = n as f64 / budget;
    let mut last_visit = vec![0.0; n];
    let mut next_visit: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..first_cycle)).collect();
    // The next change of each page after its last visit (memoryless: drawn afresh).
    let mut next_change: Vec<f64> = (0..n).map(|i| exp(&mut rng, rates[i])).collect();
    let (start, end) = (setup.warmup * DAY, setup.days * DAY);
    // Each copy's fresh time and integrated age.
    let (mut kept, mut visits) = (vec![(0.0, 0.0); n], 0u64);
    let mut seen = vec![false; n];
    let resolve_every = DAY / 4.0;
    let mut next_resolve = resolve_every;
    // Visits in time order; a page's next visit is re-planned when it is visited or the plan
    // is re-solved.
    let mut queue: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> = (0..n)
        .map(|i| std::cmp::Reverse((next_visit[i].to_bits(), i)))
        .collect();
    while let Some(std::cmp::Reverse((bits, i))) = queue.pop() {
        let t = f64::from_bits(bits);
        if bits != next_visit[i].to_bits() {
            continue; // re-planned
        }
        if t >= end {
            break;
        }
        while t >= next_resolve {
            plan.solve();
            next_resolve += resolve_every;
        }
        // Freshness and age of the copy over [last_visit, t].
        if seen[i] {
            account((last_visit[i], t), next_change[i], start, &mut kept[i]);
        }
        let changed = next_change[i] < t;
        let mut last_change = None;
        if changed {
            // The last change before t: memoryless backwards from t, not before the first.
            let back = t - exp(&mut rng, rates[i]);
            last_change = Some(back.max(next_change[i]));
        }
        if seen[i] && !omniscient {
            let ago = setup.last_modified.then(|| match last_change {
                Some(c) => t - c,
                None => t - last_visit[i] + 1.0,
            });
            history[i].observe(t - last_visit[i], changed, ago);
            let old = belief[i];
            belief[i] = history[i].rate(prior);
            plan.remove(old, weights[i]);
            plan.add(belief[i], weights[i]);
        }
        if t >= start {
            visits += 1;
        }
        seen[i] = true;
        last_visit[i] = t;
        next_change[i] = t + exp(&mut rng, rates[i]);
        next_visit[i] = match plan.interval(belief[i], weights[i]) {
            Some(dt) => t + dt,
            // Dropped: looked at again only after a long while, to notice a slowdown.
            None => t + 30.0 * DAY,
        };
        queue.push(std::cmp::Reverse((next_visit[i].to_bits(), i)));
    }
    for i in 0..n {
        if seen[i] {
            account((last_visit[i], end), next_change[i], start, &mut kept[i]);
        }
    }
    let span = end - start;
    let total_w: f64 = weights.iter().sum();
    plan.solve();
    let planned: f64 = (0..n)
        .map(|i| weights[i] * expected_freshness(rates[i], plan.frequency(belief[i], weights[i])))
        .sum::<f64>()
        / total_w;
    RefreshResult {
        freshness: (0..n).map(|i| weights[i] * kept[i].0).sum::<f64>() / total_w / span,
        age_days: (0..n).map(|i| weights[i] * kept[i].1).sum::<f64>() / total_w / span / DAY,
        visits_per_day: visits as f64 / (span / DAY),
        dropped: (0..n)
            .filter(|i| plan.interval(belief[*i], weights[*i]).is_none())
            .count(),
        planned_freshness: planned,
    }
}

/// Adds the fresh time and integrated age of a copy taken at `from` and kept until `to`, whose
/// page next changed at `change`, counting only time after `start`.
fn account((from, to): (f64, f64), change: f64, start: f64, (fresh, age): &mut (f64, f64)) {
    let (a, b) = (from.max(start), to.max(start));
    if b <= a {
        return;
    }
    let stale_from = change.clamp(from, to);
    *fresh += (stale_from.min(b) - a).max(0.0);
    // Age grows from 0 at stale_from; integrate (t - stale_from) over [max(a, stale_from), b].
    let lo = a.max(stale_from);
    if b > lo {
        *age += ((b - stale_from).powi(2) - (lo - stale_from).powi(2)) / 2.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Setup {
        Setup {
            pages: 400,
            budget: 40.0,
            days: 80.0,
            warmup: 30.0,
            ..Setup::default()
        }
    }

    #[test]
    fn periodic_visits_match_the_analytic_freshness() {
        let setup = small();
        let (rates, _) = pages(&setup);
        let out = run(&setup, Policy::Uniform, true);
        let f = setup.budget / setup.pages as f64 / DAY;
        let expected: f64 =
            rates.iter().map(|r| expected_freshness(*r, f)).sum::<f64>() / setup.pages as f64;
        assert!(
            (out.freshness - expected).abs() < 0.02,
            "{out:?} vs {expected}"
        );
        assert!(
            (out.visits_per_day / setup.budget - 1.0).abs() < 0.03,
            "{out:?}"
        );
    }

    #[test]
    fn the_learned_optimum_is_near_the_omniscient_one_and_beats_the_rest() {
        let setup = small();
        let omniscient = run(&setup, Policy::Optimal, true);
        let learned = run(&setup, Policy::Optimal, false);
        let uniform = run(&setup, Policy::Uniform, false);
        let proportional = run(&setup, Policy::Proportional, false);
        assert!(
            learned.freshness > 0.95 * omniscient.freshness,
            "{learned:?} {omniscient:?}"
        );
        assert!(
            learned.freshness > proportional.freshness + 0.1,
            "{learned:?}"
        );
        assert!(
            uniform.freshness > proportional.freshness + 0.1,
            "{uniform:?}"
        );
        // Planned with the rates it learned, the optimum beats uniform's plan in expectation
        // by less than the noise of so short a run; it must at least not fall behind much.
        assert!(learned.planned_freshness > uniform.planned_freshness - 0.01);
        assert!(learned.dropped > 0, "fast pages are given up: {learned:?}");
        for o in [omniscient, learned, uniform, proportional] {
            assert!((o.visits_per_day / setup.budget - 1.0).abs() < 0.1, "{o:?}");
        }
    }

    #[test]
    fn accounting_of_one_interval() {
        let mut kept = (0.0, 0.0);
        account((0.0, 10.0), 4.0, 0.0, &mut kept);
        assert_eq!(kept, (4.0, 18.0));
        let mut kept = (0.0, 0.0);
        account((0.0, 10.0), 4.0, 6.0, &mut kept);
        assert_eq!(kept, (0.0, 16.0));
    }
}

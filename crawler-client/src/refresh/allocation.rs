//! How a refresh budget (visits per second) is shared among known pages, given each page's
//! change rate and importance. Every policy is a closed form in one parameter solved from
//! aggregates over the pages, so the solution is kept up to date incrementally: a page whose
//! estimate changes is taken out and put back, and the parameter is re-solved from the
//! aggregates without visiting the pages.
//!
//! - `uniform`: every page at the same rate.
//! - `proportional`: rate proportional to the change rate.
//! - `sqrt`: Xyleme's rule, rate proportional to the square root of importance times change
//!   rate (eq. 22; it minimises importance-weighted time-averaged obsolescence).
//! - `optimal`: Cho & Garcia-Molina's Lagrangian solution maximising importance-weighted
//!   expected freshness. Each page's rate `f` satisfies `w * dF/df = mu`, with
//!   `F = (f/lambda)(1 - e^{-lambda/f})`; a page with `w/lambda <= mu` changes too fast to be
//!   worth keeping fresh and is not refreshed at all.

use std::collections::HashMap;

/// A revisit policy.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// The same rate for every page.
    Uniform,
    /// Rate proportional to the change rate.
    Proportional,
    /// Xyleme's square-root rule.
    Sqrt,
    /// Maximum importance-weighted freshness (Cho & Garcia-Molina).
    #[default]
    Optimal,
}

/// Buckets per doubling of a rate or an importance in the optimal policy's histogram.
const STEPS_PER_OCTAVE: f64 = 64.0;

/// Distinct (rate, importance) pairs kept exact before the histogram is rounded.
const EXACT_LIMIT: usize = 4096;

/// The aggregates of the pages under a policy and the solved parameter.
#[derive(Debug, Clone)]
pub(crate) struct Allocation {
    policy: Policy,
    budget: f64,
    pages: f64,
    sum_rate: f64,
    sum_sqrt: f64,
    histogram: HashMap<(u64, u64), f64>,
    quantized: bool,
    param: f64,
    /// For the optimal policy: a second multiplier just below `param` and the weight given to
    /// it, so that pages at the edge of being dropped (where a page's rate falls to 0 faster
    /// than any float can resolve) take exactly the budget left.
    param_low: f64,
    blend: f64,
}

impl Allocation {
    /// No pages yet, `budget` visits per second to share.
    pub(crate) fn new(policy: Policy, budget: f64) -> Self {
        Allocation {
            policy,
            budget: budget.max(0.0),
            pages: 0.0,
            sum_rate: 0.0,
            sum_sqrt: 0.0,
            histogram: HashMap::new(),
            quantized: false,
            param: 0.0,
            param_low: 0.0,
            blend: 0.0,
        }
    }

    /// The budget, visits per second.
    pub(crate) fn budget(&self) -> f64 {
        self.budget
    }

    /// Changes the budget (call [`Allocation::solve`] after).
    pub(crate) fn set_budget(&mut self, budget: f64) {
        self.budget = budget.max(0.0);
    }

    /// Counts a page with change rate `rate` and importance `weight`.
    pub(crate) fn add(&mut self, rate: f64, weight: f64) {
        self.shift(rate, weight, 1.0);
    }

    /// Takes a page out, with the rate and importance it was added with.
    pub(crate) fn remove(&mut self, rate: f64, weight: f64) {
        self.shift(rate, weight, -1.0);
    }

    fn shift(&mut self, rate: f64, weight: f64, sign: f64) {
        let (rate, weight) = (rate.max(0.0), weight.max(0.0));
        self.pages += sign;
        self.sum_rate += sign * rate;
        self.sum_sqrt += sign * (rate * weight).sqrt();
        if self.policy == Policy::Optimal && rate > 0.0 && weight > 0.0 {
            if !self.quantized && self.histogram.len() >= EXACT_LIMIT {
                self.quantized = true;
                let old = std::mem::take(&mut self.histogram);
                for ((r, w), count) in old {
                    let key = self.key(f64::from_bits(r), f64::from_bits(w));
                    *self.histogram.entry(key).or_insert(0.0) += count;
                }
            }
            let key = self.key(rate, weight);
            let slot = self.histogram.entry(key).or_insert(0.0);
            *slot += sign;
            if slot.abs() < 0.5 {
                self.histogram.remove(&key);
            }
        }
    }

    /// The histogram slot of a page: its exact values while there are few, else rounded to
    /// 1/64 of an octave.
    fn key(&self, rate: f64, weight: f64) -> (u64, u64) {
        if self.quantized {
            (round(rate).to_bits(), round(weight).to_bits())
        } else {
            (rate.to_bits(), weight.to_bits())
        }
    }

    /// Solves the policy's parameter so that the pages' rates sum to the budget.
    pub(crate) fn solve(&mut self) {
        self.param = match self.policy {
            Policy::Uniform => ratio(self.budget, self.pages),
            Policy::Proportional => ratio(self.budget, self.sum_rate),
            Policy::Sqrt => ratio(self.budget, self.sum_sqrt),
            Policy::Optimal => {
                let (lo, hi, blend) = self.solve_mu();
                self.param_low = lo;
                self.blend = blend;
                hi
            }
        };
    }

    /// The visit rate (per second) of a page with this change rate and importance; 0 means the
    /// page is not refreshed.
    pub(crate) fn frequency(&self, rate: f64, weight: f64) -> f64 {
        let (rate, weight) = (rate.max(0.0), weight.max(0.0));
        match self.policy {
            Policy::Uniform => self.param,
            Policy::Proportional => self.param * rate,
            Policy::Sqrt => self.param * (rate * weight).sqrt(),
            Policy::Optimal => {
                let high = optimal_frequency(rate, weight, self.param);
                if self.blend > 0.0 {
                    let low = optimal_frequency(rate, weight, self.param_low);
                    high + self.blend * (low - high)
                } else {
                    high
                }
            }
        }
    }

    /// Seconds between visits of such a page, None if it is not refreshed.
    pub(crate) fn interval(&self, rate: f64, weight: f64) -> Option<f64> {
        let f = self.frequency(rate, weight);
        (f > 0.0 && f.is_finite()).then(|| 1.0 / f)
    }

    /// Finds mu with sum of f(mu) = budget over the histogram (f falls as mu rises): returns
    /// a bracket (low, high) so tight that only pages at their cut-off differ between its ends,
    /// and the blend towards `low` that spends the budget exactly.
    fn solve_mu(&self) -> (f64, f64, f64) {
        if self.budget <= 0.0 || self.histogram.is_empty() {
            return (f64::INFINITY, f64::INFINITY, 0.0);
        }
        let spent = |mu: f64| -> f64 {
            self.histogram
                .iter()
                .map(|((r, w), count)| {
                    count * optimal_frequency(f64::from_bits(*r), f64::from_bits(*w), mu)
                })
                .sum()
        };
        // The largest useful mu is max w/lambda (above it nothing is refreshed).
        let hi0 = self
            .histogram
            .keys()
            .map(|(r, w)| f64::from_bits(*w) / f64::from_bits(*r))
            .fold(0.0, f64::max);
        let (mut lo, mut hi) = (hi0 * 1e-30, hi0);
        for _ in 0..200 {
            let mid = (lo * hi).sqrt();
            if spent(mid) > self.budget {
                lo = mid;
            } else {
                hi = mid;
            }
            if hi / lo < 1.0 + 1e-14 {
                break;
            }
        }
        let (s_lo, s_hi) = (spent(lo), spent(hi));
        let blend = if s_lo > s_hi {
            ((self.budget - s_hi) / (s_lo - s_hi)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        (lo, hi, blend)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

fn round(v: f64) -> f64 {
    ((v.log2() * STEPS_PER_OCTAVE).round() / STEPS_PER_OCTAVE).exp2()
}

/// The freshness-optimal rate of one page at multiplier `mu`: 0 when `weight/rate <= mu`,
/// else `rate/x` where `g(x) = 1 - (1 + x)e^{-x} = mu * rate / weight`.
pub(crate) fn optimal_frequency(rate: f64, weight: f64, mu: f64) -> f64 {
    if weight <= 0.0 {
        return 0.0;
    }
    if rate <= 0.0 {
        // A page that never changes stays fresh without visits.
        return 0.0;
    }
    let target = mu * rate / weight;
    if target >= 1.0 || !target.is_finite() {
        return 0.0;
    }
    if target <= 0.0 {
        return f64::INFINITY;
    }
    rate / solve_g(target)
}

/// The x > 0 with `1 - (1 + x)e^{-x} = target` (0 < target < 1): Newton steps kept inside a
/// shrinking bracket, from the small- and large-x asymptotes.
fn solve_g(target: f64) -> f64 {
    let g = |x: f64| -> f64 { -(-x).exp_m1() - x * (-x).exp() };
    let (mut lo, mut hi) = (0.0f64, f64::INFINITY);
    // g ~ x^2/2 near 0; 1 - g ~ (1 + x)e^{-x} far out.
    let mut x = if target < 0.5 {
        (2.0 * target).sqrt()
    } else {
        let l = -(1.0 - target).ln();
        l + (1.0 + l).ln()
    };
    for _ in 0..100 {
        let y = g(x) - target;
        if y < 0.0 {
            lo = lo.max(x);
        } else {
            hi = hi.min(x);
        }
        let slope = x * (-x).exp();
        let mut next = if slope > 0.0 { x - y / slope } else { f64::NAN };
        let inside = next > lo && next < hi && next.is_finite();
        if !inside {
            next = if hi.is_finite() {
                (lo + hi) / 2.0
            } else {
                (x * 2.0).max(lo * 2.0)
            };
        }
        if (next - x).abs() <= 1e-13 * x {
            return next;
        }
        x = next;
    }
    x
}

/// Time-averaged freshness of a page with change rate `rate` visited every `1/frequency`.
pub(crate) fn expected_freshness(rate: f64, frequency: f64) -> f64 {
    if rate <= 0.0 {
        return 1.0;
    }
    if frequency <= 0.0 {
        return 0.0;
    }
    let x = rate / frequency;
    -(-x).exp_m1() / x
}

#[cfg(test)]
/// Time-averaged age (time since the first change the copy misses) of such a page.
pub(crate) fn expected_age(rate: f64, frequency: f64) -> f64 {
    if rate <= 0.0 {
        return 0.0;
    }
    if frequency <= 0.0 {
        return f64::INFINITY;
    }
    let i = 1.0 / frequency;
    i / 2.0 - 1.0 / rate + (-(-rate * i).exp_m1()) / (rate * rate * i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(policy: Policy, rates: &[f64], weights: &[f64], budget: f64) -> Vec<f64> {
        let mut a = Allocation::new(policy, budget);
        for (r, w) in rates.iter().zip(weights) {
            a.add(*r, *w);
        }
        a.solve();
        rates
            .iter()
            .zip(weights)
            .map(|(r, w)| a.interval(*r, *w).unwrap_or(f64::INFINITY))
            .collect()
    }

    #[test]
    fn square_root_closed_form_toy_case() {
        let t = plan(Policy::Sqrt, &[1., 4., 9., 16.], &[1.; 4], 5.0);
        for (a, b) in t.iter().zip([2.0, 1.0, 2.0 / 3.0, 0.5]) {
            assert!((a - b).abs() < 1e-12, "{t:?}");
        }
        // Importance variant (22): r = (2, 1, .5, .5).
        let t = plan(Policy::Sqrt, &[1., 4., 9., 16.], &[2., 1., 0.5, 0.5], 5.0);
        for (a, b) in t.iter().zip([1.1828, 0.8364, 0.7886, 0.5914]) {
            assert!((a - b).abs() < 1e-4, "{t:?}");
        }
        // Not the minimiser of the misprinted eq. (17): t ~ lambda^-1/3 would give 1.4375...
        assert!((t[0] - 1.4375).abs() > 0.1);
    }

    #[test]
    fn incremental_updates_equal_a_fresh_solution() {
        let mut a = Allocation::new(Policy::Sqrt, 5.0);
        let w = [2., 1., 0.5, 0.5];
        for (r, w) in [1., 4., 9., 16.].iter().zip(w) {
            a.add(*r, w);
        }
        a.remove(1.0, 2.0);
        a.add(2.25, 2.0);
        a.solve();
        assert!((a.sum_sqrt - 9.0711).abs() < 1e-4, "{}", a.sum_sqrt);
        let fresh = plan(Policy::Sqrt, &[2.25, 4., 9., 16.], &w, 5.0);
        assert!((a.interval(2.25, 2.0).unwrap() - fresh[0]).abs() < 1e-12);
    }

    #[test]
    fn uniform_and_proportional() {
        let t = plan(Policy::Uniform, &[1., 4., 9., 16.], &[1.; 4], 5.0);
        assert!(t.iter().all(|x| (x - 0.8).abs() < 1e-12));
        let t = plan(Policy::Proportional, &[1., 4., 9., 16.], &[1.; 4], 5.0);
        for (a, b) in t.iter().zip([6.0, 1.5, 2.0 / 3.0, 0.375]) {
            assert!((a - b).abs() < 1e-12, "{t:?}");
        }
    }

    #[test]
    fn optimal_drops_the_fastest_page_and_beats_the_others_on_freshness() {
        let rates = [1., 4., 9., 16.];
        let freshness = |policy| -> f64 {
            let t = plan(policy, &rates, &[1.; 4], 5.0);
            let spent: f64 = t.iter().map(|t| 1.0 / t).sum();
            assert!((spent - 5.0).abs() < 0.05, "{policy:?} spends {spent}");
            rates
                .iter()
                .zip(&t)
                .map(|(r, t)| expected_freshness(*r, 1.0 / t))
                .sum::<f64>()
                / 4.0
        };
        let opt = freshness(Policy::Optimal);
        // The digest's toy numbers: 0.336, 0.301, 0.242, 0.166.
        assert!((opt - 0.3361).abs() < 2e-3, "{opt}");
        assert!((freshness(Policy::Uniform) - 0.3013).abs() < 1e-3);
        assert!((freshness(Policy::Sqrt) - 0.2422).abs() < 1e-3);
        assert!((freshness(Policy::Proportional) - 0.1663).abs() < 1e-3);
        let t = plan(Policy::Optimal, &rates, &[1.; 4], 5.0);
        assert!(
            t[3].is_infinite(),
            "the page changing 16 times is dropped: {t:?}"
        );
        // Not monotone in the change rate: faster pages get more visits up to a point, then
        // fewer, then none.
        assert!(t[1] < t[0] && t[2] > t[1], "{t:?}");
    }

    #[test]
    fn optimal_weights_importance() {
        let t = plan(Policy::Optimal, &[1.0, 1.0], &[4.0, 1.0], 1.0);
        assert!(
            t[0] < t[1],
            "the important page is visited more often: {t:?}"
        );
        // A page that never changes, or has no importance, is never refreshed.
        assert_eq!(optimal_frequency(0.0, 1.0, 0.1), 0.0);
        assert_eq!(optimal_frequency(1.0, 0.0, 0.1), 0.0);
    }

    #[test]
    fn freshness_and_age_formulas() {
        assert!((expected_freshness(1.0, 1.0) - (1.0 - (-1f64).exp())).abs() < 1e-12);
        assert_eq!(expected_freshness(0.0, 0.0), 1.0);
        // Age for lambda = 1, I = 1: 1/2 - 1 + (1 - e^-1) = 0.1321.
        assert!((expected_age(1.0, 1.0) - 0.132_120_558_8).abs() < 1e-9);
    }
}

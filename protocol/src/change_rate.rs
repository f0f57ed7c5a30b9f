//! How often a page changes: per-page observations and the Cho & Garcia-Molina estimators of a
//! Poisson change rate, with and without Last-Modified (castillo.md 2.2, with the corrected
//! denominator), made safe where the textbook forms divide by zero or take `ln 0`.
//!
//! Rates are changes per second.

use serde::{Deserialize, Serialize};

/// What the visits of a page have shown. Small and fixed-size: it is stored with the page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ChangeHistory {
    /// Intervals observed (visits after the first): N.
    pub intervals: u32,
    /// Intervals in which the content changed: X.
    pub changed: u32,
    /// Total time observed, seconds: S.
    pub observed: f64,
    /// Intervals with a usable Last-Modified (or an announcement).
    pub dated: u32,
    /// Of those, intervals in which the date showed a change.
    pub dated_changed: u32,
    /// Time the dates show the page unchanged, summed over dated intervals, seconds: T.
    pub unchanged: f64,
    /// Dated intervals whose date contradicted the content (a new date on identical content,
    /// or an old date on changed content).
    pub date_lies: u32,
}

impl ChangeHistory {
    /// Records an interval of `length` seconds between two visits: whether the content changed,
    /// and if the page is dated, how long before the second visit it last changed (its
    /// Last-Modified age, clamped to the interval).
    pub fn observe(&mut self, length: f64, changed: bool, modified_ago: Option<f64>) {
        let length = length.max(0.0);
        self.intervals += 1;
        self.observed += length;
        if changed {
            self.changed += 1;
        }
        if let Some(ago) = modified_ago {
            let ago = ago.max(0.0);
            let date_changed = ago < length;
            self.dated += 1;
            if date_changed {
                self.dated_changed += 1;
                self.unchanged += ago;
            } else {
                self.unchanged += length;
            }
            if date_changed != changed {
                self.date_lies += 1;
            }
        }
    }

    /// Whether the dates can be trusted: every interval was dated, and the dates agreed with
    /// the content at least nine times in ten.
    pub fn dates_reliable(&self) -> bool {
        self.dated > 0 && self.dated == self.intervals && self.date_lies * 10 <= self.dated
    }

    /// The change rate: from the dates where they are reliable, else from the content; `prior`
    /// before anything was observed.
    pub fn rate(&self, prior: f64) -> f64 {
        if self.intervals == 0 || self.observed <= 0.0 {
            return prior;
        }
        if self.dates_reliable() {
            rate_with_dates(
                self.dated,
                self.dated_changed,
                self.unchanged,
                self.observed,
            )
        } else {
            rate_without_dates(self.intervals, self.changed, self.observed)
        }
    }
}

/// Cho & Garcia-Molina's bias-reduced estimator from `n` equal intervals covering `observed`
/// seconds, `x` of which showed a change: `-ln((n - x + 1/2)/(n + 1/2)) / I` with
/// `I = observed/n`. It stays finite when every interval changed; with no change seen it gives
/// the floor, half a change over the time observed.
pub fn rate_without_dates(n: u32, x: u32, observed: f64) -> f64 {
    if n == 0 || observed <= 0.0 {
        return 0.0;
    }
    let (n, x) = (n as f64, x.min(n) as f64);
    let interval = observed / n;
    let r = -((n - x + 0.5) / (n + 0.5)).ln() / interval;
    r.max(floor(observed))
}

/// Cho & Garcia-Molina's estimator with last-modification dates,
/// `((X - 1) - X/(N ln(1 - X/N))) / T`, where T is the time the dates show the page unchanged
/// (the thesis prints `S_p T`: an extraction error for `T_p`). `X = N` is taken as `N - 1/2`
/// so the logarithm stays finite; with no change seen it gives the floor.
pub fn rate_with_dates(n: u32, x: u32, unchanged: f64, observed: f64) -> f64 {
    if n == 0 || x == 0 || unchanged <= 0.0 {
        return floor(observed.max(unchanged));
    }
    let n_f = n as f64;
    let x_f = (x.min(n) as f64).min(n_f - 0.5).max(0.5);
    let r = ((x_f - 1.0) - x_f / (n_f * (1.0 - x_f / n_f).ln())) / unchanged;
    r.max(floor(observed.max(unchanged)))
}

#[cfg(test)]
/// The maximum-likelihood rate from irregular intervals (Xyleme's eq. 9, with the product the
/// digest restores): the lengths of intervals with a change and of those without. Uses Newton
/// steps on the concave log-likelihood; the floor when nothing changed, and a finite cap of
/// ten changes per shortest changed interval when everything did.
pub fn rate_irregular(changed: &[f64], unchanged: &[f64]) -> f64 {
    let total: f64 = changed.iter().chain(unchanged).sum();
    if changed.is_empty() {
        return floor(total);
    }
    let v: f64 = unchanged.iter().sum();
    let shortest = changed
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(1e-9);
    let cap = 10.0 / shortest;
    if v <= 0.0 {
        return cap;
    }
    // d/dx log L = -v + sum c e^{-cx}/(1 - e^{-cx}), decreasing in x; bisect on a log scale.
    let slope = |x: f64| -> f64 {
        -v + changed
            .iter()
            .map(|c| {
                let e = (-c * x).exp();
                c * e / (1.0 - e)
            })
            .sum::<f64>()
    };
    let (mut lo, mut hi) = (floor(total), cap);
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if slope(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo * hi).sqrt()
}

/// The least rate claimed for a page observed this long: half a change over the time.
fn floor(observed: f64) -> f64 {
    if observed > 0.0 { 0.5 / observed } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn irregular_mle_matches_the_digest_vectors() {
        assert!((rate_irregular(&[1.0], &[1.0]) - 2f64.ln()).abs() < 1e-9);
        let r = rate_irregular(&[2.0; 6], &[2.0; 4]);
        assert!((r - (10.0f64 / 4.0).ln() / 2.0).abs() < 1e-9, "{r}");
        // Never changed: the floor; always changed: finite.
        assert!((rate_irregular(&[], &[10.0, 10.0]) - 0.025).abs() < 1e-12);
        assert!(rate_irregular(&[1.0, 2.0], &[]).is_finite());
    }

    #[test]
    fn edge_cases_are_finite_and_positive() {
        for (n, x) in [(1, 0), (1, 1), (10, 0), (10, 10), (10, 5)] {
            let a = rate_without_dates(n, x, 100.0);
            let b = rate_with_dates(n, x, 40.0, 100.0);
            assert!(a.is_finite() && a > 0.0, "{n} {x} {a}");
            assert!(b.is_finite() && b > 0.0, "{n} {x} {b}");
        }
        // More changes seen, higher rate.
        assert!(rate_without_dates(10, 9, 100.0) > rate_without_dates(10, 3, 100.0));
        assert_eq!(ChangeHistory::default().rate(0.25), 0.25);
    }

    /// Pages polled every `interval` with true rate `lambda`, as the crawler would see them.
    fn observe(lambda: f64, interval: f64, visits: usize, seed: u64) -> ChangeHistory {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut h = ChangeHistory::default();
        let exp = |rng: &mut StdRng| -(1.0 - rng.random_range(0.0..1.0f64)).ln() / lambda;
        let mut since_change = exp(&mut rng); // time to the next change after the first visit
        for _ in 0..visits {
            let mut last_change = None;
            let mut t = since_change;
            while t < interval {
                last_change = Some(t);
                t += exp(&mut rng);
            }
            since_change = t - interval;
            let ago = last_change.map_or(interval + 1.0, |c| interval - c);
            h.observe(interval, last_change.is_some(), Some(ago));
        }
        h
    }

    #[test]
    fn estimates_recover_the_true_rate() {
        for (lambda, interval) in [(1.0, 1.0), (0.1, 1.0), (2.0, 1.0), (1.0, 0.25)] {
            let mut with_dates = Vec::new();
            let mut without = Vec::new();
            for seed in 0..41 {
                let h = observe(lambda, interval, 400, seed);
                with_dates.push(h.rate(0.0) / lambda);
                without.push(rate_without_dates(h.intervals, h.changed, h.observed) / lambda);
            }
            with_dates.sort_by(f64::total_cmp);
            without.sort_by(f64::total_cmp);
            let (a, b) = (with_dates[20], without[20]);
            assert!((a - 1.0).abs() < 0.1, "dates: {lambda} {interval} {a}");
            assert!((b - 1.0).abs() < 0.15, "content: {lambda} {interval} {b}");
        }
    }

    #[test]
    fn lying_dates_are_set_aside() {
        let mut h = ChangeHistory::default();
        for _ in 0..20 {
            // A fresh Last-Modified on every visit, content identical.
            h.observe(100.0, false, Some(0.0));
        }
        assert!(!h.dates_reliable());
        assert!(
            (h.rate(1.0) - 0.5 / 2000.0).abs() < 1e-12,
            "{}",
            h.rate(1.0)
        );
    }
}

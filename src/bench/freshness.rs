//! Scoring a crawler's copy against the truth (Cho & Garcia-Molina's measures): the bench
//! knows when every page truly changed and when the crawler's copy caught up, and from those
//! two timelines computes time-averaged freshness (the share of time the copy equals the
//! page), age (how long the copy has been out of date, 0 while fresh) and the latency of each
//! change's detection.
//!
//! Versions are counted: version `k` of a page is the one after its `k`-th change in the
//! measured interval; the copy is assumed current (version 0) at the start.

/// One page's true changes and the crawler's catching up, in seconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PageTimeline {
    /// When the page changed, ascending, within the interval.
    pub changes: Vec<f64>,
    /// When the crawler's copy became which version, ascending by time.
    pub synced: Vec<(f64, usize)>,
}

/// The measures of one page or a whole site over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Score {
    /// Time-averaged freshness, 0..=1.
    pub freshness: f64,
    /// Time-averaged age, seconds.
    pub age: f64,
}

impl PageTimeline {
    /// The version the page truly had at `t`.
    fn truth_at(&self, t: f64) -> usize {
        self.changes.partition_point(|c| *c <= t)
    }

    /// Freshness and age averaged over `[start, end]`.
    pub fn score(&self, start: f64, end: f64) -> Score {
        let span = end - start;
        if span <= 0.0 {
            return Score {
                freshness: 1.0,
                age: 0.0,
            };
        }
        // Between consecutive events both versions are constant: integrate piece by piece.
        let mut events: Vec<f64> = self
            .changes
            .iter()
            .chain(self.synced.iter().map(|(t, _)| t))
            .copied()
            .filter(|t| *t > start && *t < end)
            .collect();
        events.push(end);
        events.sort_by(f64::total_cmp);
        let (mut fresh, mut age) = (0.0, 0.0);
        let mut held = self
            .synced
            .iter()
            .take_while(|(t, _)| *t <= start)
            .last()
            .map_or(0, |(_, v)| *v);
        let mut next_sync = self.synced.partition_point(|(t, _)| *t <= start);
        let mut from = start;
        for to in events {
            if to > from {
                let truth = self.truth_at(from);
                if held >= truth {
                    fresh += to - from;
                } else {
                    // Out of date since the first change the copy lacks.
                    let since = self.changes[held];
                    age += (to - since).powi(2) / 2.0 - (from - since).powi(2) / 2.0;
                }
                from = to;
            }
            while next_sync < self.synced.len() && self.synced[next_sync].0 <= to {
                held = held.max(self.synced[next_sync].1);
                next_sync += 1;
            }
        }
        Score {
            freshness: fresh / span,
            age: age / span,
        }
    }

    /// How long after each change the copy first held it (or a later version); `None` for
    /// changes not caught up with by the end.
    pub fn detection_latencies(&self) -> Vec<Option<f64>> {
        self.changes
            .iter()
            .enumerate()
            .map(|(i, at)| {
                self.synced
                    .iter()
                    .find(|(t, v)| *v > i && *t >= *at)
                    .map(|(t, _)| t - at)
            })
            .collect()
    }
}

/// The mean score of many pages over the same interval.
pub fn mean_score(pages: &[PageTimeline], start: f64, end: f64) -> Score {
    if pages.is_empty() {
        return Score {
            freshness: 1.0,
            age: 0.0,
        };
    }
    let (f, a) = pages.iter().fold((0.0, 0.0), |(f, a), p| {
        let s = p.score(start, end);
        (f + s.freshness, a + s.age)
    });
    Score {
        freshness: f / pages.len() as f64,
        age: a / pages.len() as f64,
    }
}

/// The mean score of many pages over the same interval, page `i` weighing `weights[i]` (its
/// share of reads: freshness as the site's readers would meet it); the plain mean when no
/// page weighs anything.
pub fn weighted_score(pages: &[PageTimeline], weights: &[f64], start: f64, end: f64) -> Score {
    let total: f64 = weights.iter().take(pages.len()).sum();
    if total.is_nan() || total <= 0.0 {
        return mean_score(pages, start, end);
    }
    let (f, a) = pages
        .iter()
        .zip(weights)
        .fold((0.0, 0.0), |(f, a), (p, w)| {
            let s = p.score(start, end);
            (f + w * s.freshness, a + w * s.age)
        });
    Score {
        freshness: f / total,
        age: a / total,
    }
}

/// What the model predicts for a copy never refreshed, of a page changing as a Poisson
/// process of rate `rate` (per second), fresh at the start, averaged over `span` seconds:
/// freshness `(1 - e^{-λT})/(λT)` and age `T/2 - (1 - (1 - e^{-λT})/(λT))/λ`.
pub fn unrefreshed(rate: f64, span: f64) -> Score {
    if rate <= 0.0 || span <= 0.0 {
        return Score {
            freshness: 1.0,
            age: 0.0,
        };
    }
    let x = rate * span;
    let f = -(-x).exp_m1() / x;
    Score {
        freshness: f,
        age: span / 2.0 - (1.0 - f) / rate,
    }
}

/// The `q` quantile (0..=1) of the known values, by nearest rank.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_synced_at_once_is_always_fresh_and_a_late_one_ages() {
        let on_time = PageTimeline {
            changes: vec![10.0, 20.0],
            synced: vec![(10.0, 1), (20.0, 2)],
        };
        assert_eq!(
            on_time.score(0.0, 100.0),
            Score {
                freshness: 1.0,
                age: 0.0
            }
        );
        // Stale from 10 to 30: 20 s of 100, age rising 0..20 over that time.
        let late = PageTimeline {
            changes: vec![10.0],
            synced: vec![(30.0, 1)],
        };
        let s = late.score(0.0, 100.0);
        assert!((s.freshness - 0.8).abs() < 1e-12, "{s:?}");
        assert!((s.age - 200.0 / 100.0).abs() < 1e-12, "{s:?}");
        assert_eq!(late.detection_latencies(), vec![Some(20.0)]);
        // A second change before the sync: age counts from the first missed change.
        let twice = PageTimeline {
            changes: vec![10.0, 20.0],
            synced: vec![(30.0, 2)],
        };
        assert_eq!(twice.score(0.0, 100.0), s);
        assert_eq!(twice.detection_latencies(), vec![Some(20.0), Some(10.0)]);
        // Catching up to an older version is not fresh.
        let behind = PageTimeline {
            changes: vec![10.0, 20.0],
            synced: vec![(25.0, 1)],
        };
        let b = behind.score(0.0, 100.0);
        assert!((b.freshness - 0.1).abs() < 1e-12, "{b:?}");
        assert!((b.age - 33.0).abs() < 1e-9, "{b:?}");
        assert_eq!(behind.detection_latencies(), vec![Some(15.0), None]);
    }

    #[test]
    fn a_copy_never_refreshed_decays_as_the_model_predicts() {
        // Many pages, Poisson changes with λ = 1/3600 s, one simulated day: the measured
        // freshness and age match the closed forms within sampling error.
        let (rate, span) = (1.0 / 3600.0, 86_400.0);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut uniform = || {
            // splitmix64: deterministic and good enough for a sampling check.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        let pages: Vec<PageTimeline> = (0..4000)
            .map(|_| {
                let mut t = 0.0;
                let mut changes = Vec::new();
                loop {
                    t += -(1.0 - uniform()).ln() / rate;
                    if t >= span {
                        break;
                    }
                    changes.push(t);
                }
                PageTimeline {
                    changes,
                    synced: Vec::new(),
                }
            })
            .collect();
        let measured = mean_score(&pages, 0.0, span);
        let model = unrefreshed(rate, span);
        assert!((model.freshness - 3600.0 / 86_400.0 * (1.0 - (-24.0f64).exp())).abs() < 1e-12);
        assert!(
            (measured.freshness - model.freshness).abs() < 0.005,
            "{measured:?} vs {model:?}"
        );
        assert!(
            (measured.age / model.age - 1.0).abs() < 0.02,
            "{measured:?} vs {model:?}"
        );
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 1.0), Some(100.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}

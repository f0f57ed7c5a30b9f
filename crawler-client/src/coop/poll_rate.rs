//! How often a site's metadata is polled. Castillo's lesson from WIRE (thesis §6, L2237-2241):
//! the operator's parameter is the largest acceptable probability that the crawler's picture
//! of the site is outdated, not a minimum revisit period. With the site's changes a Poisson
//! process of rate Λ, the picture taken at a poll is outdated `t` later with probability
//! `1 - exp(-Λ t)`, so the next poll is due after `-ln(1 - p) / Λ`. Λ is measured exactly by
//! the changes feed (its sequence numbers count every change between two polls) or, without
//! one, by the items whose dates moved.

/// The prior: one change per day, weighted as one hour of observation, so a new site is
/// polled at the slow end until it shows its pace.
const PRIOR_CHANGES: f64 = 1.0 / 24.0;
const PRIOR_SECS: f64 = 3_600.0;

/// Changes counted over the time they were counted in.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChangeCount {
    /// Changes seen.
    pub changes: f64,
    /// Seconds they were counted over.
    pub secs: f64,
}

impl ChangeCount {
    /// Counts `changes` seen over `secs` seconds since the previous poll.
    pub fn observe(&mut self, changes: u64, secs: f64) {
        // Beyond a week of history, older counts fade, so a site that speeds up is noticed.
        const HORIZON: f64 = 7.0 * 86_400.0;
        let secs = secs.max(0.0);
        if self.secs + secs > HORIZON && self.secs > 0.0 {
            let keep = ((HORIZON - secs) / self.secs).clamp(0.0, 1.0);
            self.changes *= keep;
            self.secs *= keep;
        }
        self.changes += changes as f64;
        self.secs += secs;
    }

    /// The site's change rate per second.
    pub fn rate(&self) -> f64 {
        (self.changes + PRIOR_CHANGES) / (self.secs + PRIOR_SECS)
    }
}

/// Seconds until the picture of a site changing at `rate` per second is outdated with
/// probability `max_outdated`, within `[min, max]`.
pub fn poll_interval(rate: f64, max_outdated: f64, min: f64, max: f64) -> f64 {
    let p = max_outdated.clamp(1e-9, 1.0 - 1e-9);
    let t = -(1.0 - p).ln() / rate.max(1e-12);
    t.clamp(min, max.max(min))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_keeps_the_outdated_probability_at_the_target() {
        // Ten changes an hour, at most 5% outdated: 18.5 s between polls.
        let rate = 10.0 / 3600.0;
        let t = poll_interval(rate, 0.05, 1.0, 3600.0);
        assert!((t - 18.466).abs() < 0.01, "{t}");
        assert!((1.0 - (-rate * t).exp() - 0.05).abs() < 1e-9);
        // A quiet site is polled at the cap, a frantic one at the floor.
        assert_eq!(poll_interval(1e-9, 0.05, 1.0, 3600.0), 3600.0);
        assert_eq!(poll_interval(100.0, 0.05, 1.0, 3600.0), 1.0);
    }

    #[test]
    fn the_rate_is_learnt_from_counts() {
        let mut c = ChangeCount::default();
        assert!(
            (c.rate() - 1.0 / 86_400.0).abs() < 1e-12,
            "prior: one a day"
        );
        for _ in 0..24 {
            c.observe(10, 3600.0);
        }
        assert!(
            (c.rate() * 3600.0 - 10.0).abs() < 0.5,
            "{}",
            c.rate() * 3600.0
        );
        // A month later at a different pace, the old counts have faded.
        for _ in 0..24 * 30 {
            c.observe(1, 3600.0);
        }
        assert!(
            (c.rate() * 3600.0 - 1.0).abs() < 0.05,
            "{}",
            c.rate() * 3600.0
        );
    }
}

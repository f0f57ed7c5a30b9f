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
pub(crate) struct ChangeCount {
    /// Changes seen.
    pub(crate) changes: f64,
    /// Seconds they were counted over.
    pub(crate) secs: f64,
}

impl ChangeCount {
    /// Counts `changes` seen over `secs` seconds since the previous poll.
    pub(crate) fn observe(&mut self, changes: u64, secs: f64) {
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
    pub(crate) fn rate(&self) -> f64 {
        (self.changes + PRIOR_CHANGES) / (self.secs + PRIOR_SECS)
    }
}

/// How far back a listing's dates are read for a site's pace at first contact.
pub(crate) const PACE_WINDOW_SECS: f64 = 6.0 * 3_600.0;

/// What a listing's modification dates (Unix seconds) say of a site's pace when it is first
/// met: the pages modified within the last [`PACE_WINDOW_SECS`], as changes seen over that
/// time, so the first polls follow the site's pace rather than the prior's one a day. Dates
/// in one burst (a deploy or a restore: more than five in a minute and more than a twentieth
/// of the listing) count as one change. None when the oldest date is younger than the window:
/// a site just set up says nothing yet. A page changed twice counts once, so a busy site is
/// underestimated; the polls that follow measure it exactly.
pub(crate) fn pace_from_dates(dates: &[i64], now: i64) -> Option<(u64, f64)> {
    let window = PACE_WINDOW_SECS as i64;
    let oldest = *dates.iter().min()?;
    if now - oldest < window {
        return None;
    }
    let mut per_minute: std::collections::BTreeMap<i64, u64> = Default::default();
    for t in dates.iter().filter(|t| **t > now - window && **t <= now) {
        *per_minute.entry(t.div_euclid(60)).or_default() += 1;
    }
    let burst = (dates.len() as u64 / 20).max(5);
    let changes = per_minute
        .values()
        .map(|&n| if n > burst { 1 } else { n })
        .sum();
    Some((changes, PACE_WINDOW_SECS))
}

/// Seconds until the picture of a site changing at `rate` per second is outdated with
/// probability `max_outdated`, within `[min, max]`.
pub(crate) fn poll_interval(rate: f64, max_outdated: f64, min: f64, max: f64) -> f64 {
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
    fn a_listing_s_recent_dates_give_the_pace_and_a_deploy_counts_once() {
        let now = 1_000_000_000;
        let hour = 3600;
        // A site with history: 40 pages untouched for days, 6 modified over the last 6 hours.
        let mut dates: Vec<i64> = (0..40).map(|i| now - 3 * 86_400 - i * hour).collect();
        dates.extend((0..6).map(|i| now - i * hour - 60));
        let (n, secs) = pace_from_dates(&dates, now).unwrap();
        assert_eq!((n, secs), (6, PACE_WINDOW_SECS));
        let mut c = ChangeCount::default();
        c.observe(n, secs);
        let t = poll_interval(c.rate(), 0.05, 1.0, 3600.0);
        // About one change an hour: polled every few minutes, not at the prior's hour.
        assert!((200.0..600.0).contains(&t), "{t}");
        // The same site just deployed: 30 files in one second count as one change.
        dates.extend((0..30).map(|_| now - 2 * hour));
        assert_eq!(pace_from_dates(&dates, now).unwrap().0, 7);
        // A site set up within the window says nothing; dates ahead of the clock are ignored.
        assert_eq!(pace_from_dates(&[now - hour, now], now), None);
        assert_eq!(
            pace_from_dates(&[now - 86_400, now + 600], now),
            Some((0, PACE_WINDOW_SECS))
        );
        assert_eq!(pace_from_dates(&[], now), None);
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

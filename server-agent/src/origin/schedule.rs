//! When each page of a generated site is checked again: every page is checked at an interval
//! of half its expected time between changes, by the crawler's own change-rate estimators
//! ([`ChangeHistory`], Cho and Garcia-Molina), kept between a shortest and a longest
//! interval; the page most overdue (by its share of its interval) goes first, and pages never
//! fetched or named by a ping before every other.

use std::collections::HashMap;
use std::time::Duration;
use webcoop_protocol::change_rate::ChangeHistory;

use super::fetch::Validators;

/// What the agent knows of one page of the site, listed or not.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tracked {
    /// Validators of the version listed, for conditional requests.
    pub(crate) validators: Validators,
    /// When it was last asked for (ms since the epoch), if ever.
    pub(crate) checked: Option<i64>,
    /// What the checks have shown.
    pub(crate) history: ChangeHistory,
    /// Why it is not published, when it was refused at its last check.
    pub(crate) refused: Option<String>,
    /// Named by a ping (or found new): checked before every page merely due.
    pub(crate) urgent: bool,
    /// 304 answers in a row: after [`TRUST_304`], the next check asks without validators.
    pub(crate) not_modified_streak: u32,
    /// The server answered 304 for a page that had changed: its validators are not used.
    pub(crate) validators_lie: bool,
    /// The next check asks without validators (a write may have changed it).
    pub(crate) whole: bool,
}

/// 304 answers believed in a row before a page is fetched whole to check them: a server may
/// keep a validator while the page changes (WordPress's feeds keep theirs when a comment
/// changes their counts).
pub(crate) const TRUST_304: u32 = 3;

impl Tracked {
    /// Whether the next check may be conditional.
    pub(crate) fn conditional(&self) -> bool {
        !self.validators_lie && self.not_modified_streak < TRUST_304
    }
}

/// The interval between two checks of a page with this history.
pub(crate) fn interval(history: &ChangeHistory, min: Duration, max: Duration) -> Duration {
    // Before anything is observed: as if it changed once per longest interval.
    let rate = history.rate(1.0 / max.as_secs_f64().max(1.0));
    let secs = if rate > 0.0 && rate.is_finite() {
        0.5 / rate
    } else {
        max.as_secs_f64()
    };
    Duration::from_secs_f64(secs.clamp(min.as_secs_f64(), max.as_secs_f64()))
}

/// The page to check next at `now_ms`, if any is due: urgent ones first, then those never
/// checked, then the most overdue.
pub(crate) fn next_due(
    pages: &HashMap<String, Tracked>,
    now_ms: i64,
    min: Duration,
    max: Duration,
) -> Option<String> {
    let mut best: Option<(&String, f64)> = None;
    for (path, t) in pages {
        let score = if t.urgent {
            f64::INFINITY
        } else {
            match t.checked {
                None => f64::MAX,
                Some(at) => {
                    let age = (now_ms - at).max(0) as f64 / 1000.0;
                    let due = interval(&t.history, min, max).as_secs_f64();
                    if age < due {
                        continue;
                    }
                    age / due.max(0.001)
                }
            }
        };
        // Ties go to the smaller path, so the order does not depend on the map's.
        let better = match best {
            None => true,
            Some((p, s)) => score > s || (score == s && path < p),
        };
        if better {
            best = Some((path, score));
        }
    }
    best.map(|(p, _)| p.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_that_changes_often_is_checked_often_within_the_bounds() {
        let (min, max) = (Duration::from_secs(60), Duration::from_secs(86_400));
        let mut busy = ChangeHistory::default();
        let mut calm = ChangeHistory::default();
        for _ in 0..20 {
            busy.observe(600.0, true, None);
            calm.observe(600.0, false, None);
        }
        let (b, c) = (interval(&busy, min, max), interval(&calm, min, max));
        assert!(b < c, "{b:?} {c:?}");
        assert!(b >= min && c <= max);
        assert_eq!(interval(&ChangeHistory::default(), min, max), max / 2);
    }

    #[test]
    fn urgent_then_new_then_most_overdue() {
        let (min, max) = (Duration::from_secs(1), Duration::from_secs(100));
        let mut pages = HashMap::new();
        let now = 1_000_000;
        let checked = |ago: i64| Tracked {
            checked: Some(now - ago * 1000),
            ..Tracked::default()
        };
        pages.insert("fresh".to_string(), checked(1));
        pages.insert("old".to_string(), checked(90));
        pages.insert("older".to_string(), checked(99));
        assert_eq!(next_due(&pages, now, min, max).as_deref(), Some("older"));
        pages.insert("new".to_string(), Tracked::default());
        assert_eq!(next_due(&pages, now, min, max).as_deref(), Some("new"));
        pages.insert(
            "pinged".to_string(),
            Tracked {
                urgent: true,
                ..checked(0)
            },
        );
        assert_eq!(next_due(&pages, now, min, max).as_deref(), Some("pinged"));
        pages.clear();
        pages.insert("fresh".to_string(), checked(1));
        assert_eq!(next_due(&pages, now, min, max), None);
    }
}

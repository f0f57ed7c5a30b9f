//! How far a site's claims are believed. Every claim that can be checked is evidence: an
//! announced change that a fetch confirms, or an "unchanged" that a check fetch confirms,
//! counts for the site; a change announced for identical content, an "unchanged" page that
//! differs, or a `lastmod` stamped on every URL counts against it. Below the threshold the
//! crawler ignores the site's claims and polls it, and keeps weighing the claims so a site that
//! mends its ways is believed again.

/// Evidence weight of the prior: a new site is believed (0.8) until four claims in a row fail.
const PRIOR_RIGHT: f64 = 4.0;
const PRIOR_WRONG: f64 = 1.0;

/// Old evidence fades: each new observation scales the old by this, so about the last 50
/// claims decide.
const MEMORY: f64 = 0.98;

/// A site's record of claims proved right and wrong.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Trust {
    /// Claims confirmed (decayed count).
    pub(crate) right: f64,
    /// Claims refuted (decayed count).
    pub(crate) wrong: f64,
}

impl Trust {
    /// The share of claims believed right, with the prior: 0.8 for a new site.
    pub fn score(&self) -> f64 {
        (self.right + PRIOR_RIGHT) / (self.right + self.wrong + PRIOR_RIGHT + PRIOR_WRONG)
    }

    /// Whether the site's claims are used at this threshold.
    pub fn believed(&self, threshold: f64) -> bool {
        self.score() >= threshold
    }

    /// A claim proved right.
    pub(crate) fn confirm(&mut self) {
        self.right = self.right * MEMORY + 1.0;
        self.wrong *= MEMORY;
    }

    /// A claim proved wrong, with a weight (a sitemap stamping every URL weighs more than one
    /// false announcement).
    pub(crate) fn refute(&mut self, weight: f64) {
        self.right *= MEMORY;
        self.wrong = self.wrong * MEMORY + weight;
    }
}

/// The one moment a sitemap's `lastmod` values share, if they share one: at least ten
/// entries, nine in ten within a minute of their median. A whole site deployed at once looks
/// like this too, so one such sitemap proves nothing; see [`lastmods_stamped`].
pub(crate) fn shared_moment(lastmods: &[i64]) -> Option<i64> {
    if lastmods.len() < 10 {
        return None;
    }
    let mut sorted = lastmods.to_vec();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    let near = sorted.iter().filter(|t| (*t - median).abs() <= 60).count();
    (near * 10 >= sorted.len() * 9).then_some(median)
}

/// Whether a sitemap stamps every URL with the time it was generated (as some CMSs do): it
/// shares one moment, so did the previous walk, and the moment moved on, while the site
/// cannot have changed every page in between.
pub(crate) fn lastmods_stamped(previous: Option<i64>, current: Option<i64>) -> bool {
    matches!((previous, current), (Some(p), Some(c)) if c > p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_site_is_believed_and_a_lying_one_is_not() {
        let mut t = Trust::default();
        assert!((t.score() - 0.8).abs() < 1e-12);
        assert!(t.believed(0.5));
        for _ in 0..3 {
            t.refute(1.0);
        }
        assert!(t.believed(0.5), "three mistakes: {}", t.score());
        t.refute(1.0);
        assert!(!t.believed(0.5), "four in a row: {}", t.score());
        for _ in 0..10 {
            t.confirm();
        }
        assert!(t.believed(0.5), "mended: {}", t.score());
    }

    #[test]
    fn an_honest_site_with_rare_mistakes_stays_believed() {
        let mut t = Trust::default();
        for i in 0..500 {
            if i % 20 == 0 {
                t.refute(1.0);
            } else {
                t.confirm();
            }
        }
        assert!(t.score() > 0.9, "{}", t.score());
    }

    #[test]
    fn stamped_lastmods_are_recognised_on_the_second_walk() {
        let now = 1_800_000_000;
        let stamped = |at: i64| -> Vec<i64> { (0..50).map(|i| at - 5 + i % 3).collect() };
        let first = shared_moment(&stamped(now));
        assert!(first.is_some());
        assert!(!lastmods_stamped(None, first), "one walk proves nothing");
        let second = shared_moment(&stamped(now + 600));
        assert!(lastmods_stamped(first, second));
        assert!(
            !lastmods_stamped(first, first),
            "a site deployed at once and left alone is honest"
        );
        let real: Vec<i64> = (0..50).map(|i| now - i * 3_600).collect();
        assert_eq!(shared_moment(&real), None);
        assert_eq!(shared_moment(&stamped(now)[..5]), None, "too few to tell");
    }
}

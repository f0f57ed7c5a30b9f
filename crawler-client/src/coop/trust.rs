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

/// The evidence against a site whose pages in bulk proved not to be its live pages: its score
/// falls to 0.16, and it takes about thirteen claims proved right in a row to be believed
/// again at the default threshold (0.5).
const DISPROVED: f64 = 20.0;

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

    /// Pages the site handed over in bulk (a snapshot, a batch) proved not to be its live
    /// pages: whatever it earned is gone, and its claims are not believed until enough prove
    /// right again.
    pub(crate) fn disprove(&mut self) {
        self.right = 0.0;
        self.wrong = self.wrong.max(DISPROVED);
    }

    /// How much of the score is still the prior's: 1 for a site met now, toward 0 as its
    /// claims are weighed. A site is checked more the less is known of it.
    pub(crate) fn doubt(&self) -> f64 {
        (PRIOR_RIGHT + PRIOR_WRONG) / (self.right + self.wrong + PRIOR_RIGHT + PRIOR_WRONG)
    }
}

/// The fewest pages taken from a snapshot that are checked (if it gave that many).
pub(crate) const SNAPSHOT_CHECKS_MIN: usize = 3;

/// Pages taken from a snapshot that are fetched again at once to check it: three for a
/// site whose claims have long proved right, up to six for one met now.
pub(crate) fn snapshot_checks(trust: &Trust, taken: usize) -> usize {
    let k = SNAPSHOT_CHECKS_MIN + (3.0 * trust.doubt()).round() as usize;
    k.min(taken)
}

/// The share of claims of "nothing changed" (and of pages taken from batches) checked by a
/// fetch: the crawl's `--coop-check-share` for a proven site, up to five times it for one
/// met now, never above one.
pub(crate) fn check_share(base: f64, trust: &Trust) -> f64 {
    (base * (1.0 + 4.0 * trust.doubt())).min(1.0)
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
    fn a_disproved_site_falls_at_once_and_earns_its_way_back() {
        let mut t = Trust::default();
        for _ in 0..100 {
            t.confirm();
        }
        assert!(t.score() > 0.95);
        t.disprove();
        assert!(!t.believed(0.5), "{}", t.score());
        let mut n = 0;
        while !t.believed(0.5) {
            t.confirm();
            n += 1;
        }
        assert!(
            (10..=16).contains(&n),
            "{n} claims proved right to be believed again"
        );
    }

    #[test]
    fn the_less_is_known_of_a_site_the_more_it_is_checked() {
        let new = Trust::default();
        assert_eq!(snapshot_checks(&new, 30_000), 6);
        assert_eq!(snapshot_checks(&new, 2), 2);
        let mut proven = Trust::default();
        for _ in 0..200 {
            proven.confirm();
        }
        assert_eq!(snapshot_checks(&proven, 30_000), 3);
        assert!((check_share(0.02, &new) - 0.10).abs() < 1e-9);
        // Evidence fades (about the last 50 claims decide), so some doubt always remains.
        assert!(check_share(0.02, &proven) < 0.03);
        assert_eq!(check_share(0.5, &new), 1.0);
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

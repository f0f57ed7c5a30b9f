//! A site's stated popularity (each page's share of its readers, `wc:popularity`, from its
//! access logs): what no crawler can learn by crawling. It is a claim no fetch can check, so it
//! is bounded rather than believed: it only reorders the site's own pages. A page's weight is
//!
//! `w · p · s · n / max(N, n)`
//!
//! with `p` its stated share, `s` the site's trust score, `n` the URLs the site lists and `N`
//! the URLs the crawl knows, `w` the crawl's `coop_popularity_weight` (1). Over a site the
//! weights sum to at most `w · n/N`: the mass its pages would hold on average, so a site that
//! overstates its pages cannot raise itself above others. The weight is added to a page's
//! OPIC cash where the frontier orders a host's pages. Where the refresh schedule weighs a
//! page of a site that states popularity, the objective becomes freshness weighted by what
//! people read, as far as the site is trusted: the page's link importance counts for `1 - s`,
//! its stated weight beside it (a page the site gives no figure, read by fewer than its
//! minimum of visitors, keeps only the `1 - s`). A site not believed states nothing.
//!
//! This is the owner of the stated weights: the rule above, and which sites state them.

use super::site::{CoopConfig, SiteCoop};
use crate::ids::{Fp, HostId};
use std::collections::{HashMap, HashSet};

/// The stated weights of pages, and the sites that state them.
#[derive(Default)]
pub(crate) struct Popularity {
    weights: HashMap<Fp, f64>,
    stating: HashSet<HostId>,
}

impl Popularity {
    /// `site` (of `host`) states `share` of its readers for page `fp`, with `known` URLs in
    /// the crawl: the page's weight, or `None` when the site states nothing the crawl takes
    /// (not believed, no weight configured, a share that is not a number): then the page's
    /// weight and the site's standing as stating are dropped.
    pub(crate) fn stated(
        &mut self,
        (host, site): (HostId, &SiteCoop),
        fp: Fp,
        share: f64,
        config: &CoopConfig,
        known: usize,
    ) -> Option<f64> {
        let w = config.popularity_weight;
        if w <= 0.0 || !share.is_finite() || !site.trust.believed(config.trust_min) {
            self.weights.remove(&fp);
            self.stating.remove(&host);
            return None;
        }
        self.stating.insert(host);
        let n = site.listed_urls.max(1) as f64;
        let known = (known as f64).max(n);
        let weight = w * share.clamp(0.0, 1.0) * site.trust.score() * n / known;
        self.weights.insert(fp, weight);
        Some(weight)
    }

    /// The weight page `fp`'s stated popularity adds, if its site states one.
    pub(crate) fn of(&self, fp: Fp) -> f64 {
        self.weights.get(&fp).copied().unwrap_or(0.0)
    }

    /// Page `fp`'s weight in the refresh schedule, from its link `importance`: where its
    /// site (`site`, of `host`) states popularity and is believed, importance counts as far
    /// as the site is not trusted and the stated weight (already scaled by the trust) beside
    /// it.
    pub(crate) fn refresh_weight(
        &self,
        (host, site): (HostId, Option<&SiteCoop>),
        fp: Fp,
        importance: f64,
        config: &CoopConfig,
    ) -> f64 {
        let stating = site
            .filter(|_| self.stating.contains(&host))
            .filter(|site| site.trust.believed(config.trust_min));
        match stating {
            Some(site) => (1.0 - site.trust.score()) * importance + self.of(fp),
            None => importance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_weighs_at_most_its_share_of_the_crawl_and_a_doubted_one_nothing() {
        let config = CoopConfig::default();
        let mut p = Popularity::default();
        let mut site = SiteCoop {
            listed_urls: 10,
            ..SiteCoop::default()
        };
        let host = HostId(1);
        let w = p.stated((host, &site), Fp(1), 0.5, &config, 100).unwrap();
        let s = site.trust.score();
        assert!((w - config.popularity_weight * 0.5 * s * 10.0 / 100.0).abs() < 1e-12);
        assert_eq!(p.of(Fp(1)), w);
        // A share above one counts as one; the crawl never knows fewer URLs than the site lists.
        let whole = p.stated((host, &site), Fp(2), 7.0, &config, 3).unwrap();
        assert!((whole - config.popularity_weight * s).abs() < 1e-12);
        let r = p.refresh_weight((host, Some(&site)), Fp(1), 0.2, &config);
        assert!((r - ((1.0 - s) * 0.2 + w)).abs() < 1e-12);
        // Not a number: dropped, and the site no longer states anything.
        assert_eq!(p.stated((host, &site), Fp(1), f64::NAN, &config, 100), None);
        assert_eq!(p.of(Fp(1)), 0.0);
        assert_eq!(
            p.refresh_weight((host, Some(&site)), Fp(2), 0.2, &config),
            0.2
        );
        // A site not believed states nothing.
        site.trust.refute(50.0);
        assert_eq!(p.stated((host, &site), Fp(3), 0.5, &config, 100), None);
    }
}

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

use super::state::{CoopState, Reach};
use crate::ids::{Fp, HostId};

impl CoopState {
    /// Takes `share`, the site's stated popularity of page `fp`, as a weight.
    pub(crate) fn stated_popularity(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        fp: Fp,
        share: f64,
    ) {
        let w = self.config.popularity_weight;
        let Some(site) = self.sites.get(&host) else {
            return;
        };
        if w <= 0.0 || !share.is_finite() || !site.trust.believed(self.config.trust_min) {
            self.popularity.remove(&fp);
            self.popularity_sites.remove(&host);
            return;
        }
        self.popularity_sites.insert(host);
        let n = site.listed_urls.max(1) as f64;
        let known = (r.frontier.seen_len() as f64).max(n);
        let weight = w * share.clamp(0.0, 1.0) * site.trust.score() * n / known;
        self.popularity.insert(fp, weight);
        r.out.boosts.push((host, fp, weight));
    }

    /// The weight page `fp`'s stated popularity adds, if its site states one.
    pub(crate) fn popularity_of(&self, fp: Fp) -> f64 {
        self.popularity.get(&fp).copied().unwrap_or(0.0)
    }

    /// Page `fp`'s weight in the refresh schedule, from its link `importance`: where its site
    /// states popularity and is believed, importance counts as far as the site is not trusted
    /// and the stated weight (already scaled by the trust) beside it.
    pub(crate) fn refresh_weight(&self, host: HostId, fp: Fp, importance: f64) -> f64 {
        let stating = self
            .sites
            .get(&host)
            .filter(|_| self.popularity_sites.contains(&host))
            .filter(|site| site.trust.believed(self.config.trust_min));
        match stating {
            Some(site) => (1.0 - site.trust.score()) * importance + self.popularity_of(fp),
            None => importance,
        }
    }
}

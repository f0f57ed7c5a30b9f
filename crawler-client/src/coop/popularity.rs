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
//! OPIC cash where the frontier orders a host's pages, and to its importance where the refresh
//! schedule weighs it (freshness weighted by what people read). A site not believed states
//! nothing.

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
            return;
        }
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
}

//! Claims weighed: what a site said of a page is checked at the page's next visit, and its
//! trust moves with the result; a site believed has its pages left to its announcements.

use super::requests::DeltaPlan;
use super::state::{Claim, CoopState, Reach};
use crate::analyze::Link;
use crate::fetch::outcome::DeltaUse;
use crate::ids::{Fp, HostId};
use url::Url;

impl CoopState {
    /// Whether a believed site announced a change of the page since its last visit. Such a
    /// visit asks without validators: a server's are often coarser than the announcement (a
    /// `Last-Modified` to the second, nginx's ETag of mtime and size), and a 304 would then
    /// hide a second edit within the same second and count against an honest site. A site not
    /// believed gets conditional visits: its claims must not cost whole bodies.
    pub(crate) fn announced_change(&self, fp: Fp) -> bool {
        self.claims.get(&fp).is_some_and(|(host, c)| {
            *c == Claim::Changed
                && self
                    .sites
                    .get(host)
                    .is_some_and(|s| s.trust.believed(self.config.trust_min))
        })
    }

    /// The delta to fetch for a revisit of a changed page, if one is planned.
    pub(crate) fn delta_plan(&mut self, fp: Fp) -> Option<DeltaPlan> {
        if !self.config.uses_deltas() {
            return None;
        }
        self.plans.remove(&fp)
    }

    /// After a visit: the site's claim about the page is weighed, and a page of a covering
    /// site is left to its announcements.
    pub(crate) fn visited(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        fp: Fp,
        changed: bool,
        delta: Option<&DeltaUse>,
    ) {
        if let Some(d) = delta {
            let site = self.site(host);
            match d {
                DeltaUse::Applied(_) | DeltaUse::Pushed => site.stats.deltas += 1,
                DeltaUse::Whole => {}
                DeltaUse::Fallback(_) => site.stats.delta_fallbacks += 1,
            }
        }
        if let Some((claim_host, claim)) = self.claims.remove(&fp) {
            let before = self.covers(claim_host);
            let right = (claim == Claim::Changed) == changed;
            let site = self.site(claim_host);
            if right {
                site.trust.confirm();
            } else {
                site.trust.refute(1.0);
            }
            let after = self.covers(claim_host);
            if before != after {
                let origin = r.origin(claim_host);
                let score = self.sites.get(&claim_host).map_or(0.0, |s| s.trust.score());
                if after {
                    tracing::info!(
                        "{origin}: claims proved right again (trust {score:.2}); believed"
                    );
                } else {
                    tracing::warn!(
                        "{origin}: claims proved wrong (trust {score:.2}); polling its pages instead"
                    );
                }
                if let Some(s) = r.schedule.as_deref_mut() {
                    s.set_host_covered(claim_host, after);
                }
            }
        }
        if self.covers(host)
            && let Some(s) = r.schedule.as_deref_mut()
        {
            s.cover(fp);
        }
    }

    /// A random page of a site is fetched to check its "nothing changed".
    pub(crate) fn check_one(&mut self, r: &mut Reach<'_>, host: HostId) {
        let Some(schedule) = r.schedule.as_deref() else {
            return;
        };
        let pages = schedule.pages_of(host);
        if pages.is_empty() {
            return;
        }
        let pick = pages[(self.rng as usize) % pages.len()];
        let Some(url) = schedule.page(pick).map(|p| p.url.clone()) else {
            return;
        };
        self.claims.insert(pick, (host, Claim::Unchanged));
        self.site(host).stats.checks += 1;
        let Ok(u) = Url::parse(&url) else {
            return;
        };
        let link = Link::with_fp(&u, pick);
        self.due_now(r, host, &link);
    }
}

//! Claims weighed: what a site said of a page is checked at the page's next visit, and its
//! trust moves with the result; a site believed has its pages left to its announcements.

use super::requests::DeltaPlan;
use super::state::{Claim, CoopState, Reach};
use crate::analyze::Link;
use crate::fetch::outcome::DeltaUse;
use crate::ids::{Fp, HostId};
use url::Url;

impl CoopState {
    /// Whether the page's next visit asks without validators: a believed site announced a
    /// change (a server's validators are often coarser than the announcement, a
    /// `Last-Modified` to the second, nginx's ETag of mtime and size, and a 304 would then hide
    /// a second edit within the same second and count against an honest site), or the visit
    /// checks a claim (a server that answers 304 to what it serves changed must not turn its
    /// own claim into a confirmation). A site not believed gets conditional visits for its
    /// announcements: its claims must not cost whole bodies.
    pub(crate) fn announced_change(&self, fp: Fp) -> bool {
        self.claims.get(&fp).is_some_and(|(host, c)| match c {
            Claim::Unchanged | Claim::Matches(_) | Claim::Absent => true,
            Claim::Changed => self
                .sites
                .get(host)
                .is_some_and(|s| s.trust.believed(self.config.trust_min)),
        })
    }

    /// The delta to fetch for a revisit of a changed page, if one is planned.
    pub(crate) fn delta_plan(&mut self, fp: Fp) -> Option<DeltaPlan> {
        if !self.config.uses_deltas() {
            return None;
        }
        self.plans.remove(&fp)
    }

    /// After a visit: the site's claim about the page is weighed (against its content's
    /// SHA-256 `validator` for a page it handed over), and a page of a covering site is left
    /// to its announcements. A page fetched live is no longer one the site handed over.
    pub(crate) fn visited(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        fp: Fp,
        (changed, validator, cut): (bool, Option<&str>, bool),
        delta: Option<&DeltaUse>,
        live: bool,
    ) {
        if live && let Some(pages) = self.unproven.get_mut(&host) {
            pages.remove(&fp);
        }
        if let Some(d) = delta {
            let site = self.site(host);
            match d {
                DeltaUse::Applied(_) | DeltaUse::Pushed => site.stats.deltas += 1,
                DeltaUse::Whole => {}
                DeltaUse::Fallback(_) => site.stats.delta_fallbacks += 1,
            }
        }
        // A page cut at the page limit cannot show what its whole content is: its claim is
        // dropped unweighed.
        let claimed = live.then(|| self.claims.remove(&fp)).flatten();
        if let Some((claim_host, claim)) = claimed.filter(|_| !cut) {
            let right = match claim {
                Claim::Matches(d) => validator == Some(d.etag().to_string().as_str()),
                Claim::Changed => changed,
                Claim::Unchanged => !changed,
                // Weighed when the response was recorded (`absence_checked`), never here.
                Claim::Absent => true,
            };
            match (right, claim) {
                (false, Claim::Matches(_)) if self.may_explain(r, claim_host) => {
                    self.question(r, claim_host, fp);
                }
                (false, Claim::Matches(_)) => self.handed_over_refuted(r, claim_host, fp),
                (right, _) => {
                    let before = self.covers(claim_host);
                    let site = self.site(claim_host);
                    match right {
                        true => site.trust.confirm(),
                        false => site.trust.refute(1.0),
                    }
                    self.belief_moved(r, claim_host, before);
                }
            }
        }
        if self.covers(host)
            && let Some(s) = r.schedule.as_deref_mut()
        {
            s.cover(fp);
        }
    }

    /// A page `fp` the site handed over proved not to be its live page: the site is not
    /// believed until enough claims prove right again, and what else it handed over goes.
    pub(crate) fn handed_over_refuted(&mut self, r: &mut Reach<'_>, host: HostId, fp: Fp) {
        let before = self.covers(host);
        let site = self.site(host);
        site.trust.disprove();
        site.stats.refuted += 1;
        // The schedule hears first that the site is polled now: taking its pages back from
        // the announcements sets their times again, which would undo the disowned pages'
        // "due now".
        self.belief_moved(r, host, before);
        self.disown(r, host, fp);
    }

    /// Says so, and tells the schedule, when whether `host` is believed changed from `before`.
    fn belief_moved(&mut self, r: &mut Reach<'_>, host: HostId, before: bool) {
        let after = self.covers(host);
        if before == after {
            return;
        }
        let origin = r.origin(host);
        let score = self.sites.get(&host).map_or(0.0, |s| s.trust.score());
        if after {
            tracing::info!("{origin}: claims proved right again (trust {score:.2}); believed");
        } else {
            tracing::warn!(
                "{origin}: claims proved wrong (trust {score:.2}); polling its pages instead"
            );
        }
        if let Some(s) = r.schedule.as_deref_mut() {
            s.set_host_covered(host, after);
        }
    }

    /// A page the site handed over proved not to be its live page: every page it handed over
    /// and that was not fetched live since stops counting as the crawl's copy, and is fetched
    /// again, whole, each a claim to check.
    fn disown(&mut self, r: &mut Reach<'_>, host: HostId, refuted: Fp) {
        let Some(pages) = self.unproven.remove(&host) else {
            return;
        };
        tracing::warn!(
            "{}: a page it handed over is not its live page; its {} other pages handed over are fetched again before they count as copies",
            r.origin(host),
            pages.len()
        );
        let at = crate::clock::now_ms();
        for (fp, (url, digest)) in pages {
            if fp == refuted {
                continue;
            }
            r.out.disowned.push(crate::state::PageRecord {
                url: url.clone(),
                fp,
                host,
                error: Some("handed over by the site in bulk, and the site's live pages refuted it: fetched again".into()),
                fetched_at: at,
                disowned: true,
                ..Default::default()
            });
            // Each page fetched again is one more claim weighed: what the site handed over
            // for it, against what it serves.
            if let Some(d) = digest {
                self.claims.insert(fp, (host, Claim::Matches(d)));
            }
            if let Ok(u) = Url::parse(&url) {
                self.due_now(r, host, &Link::with_fp(&u, fp));
            }
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

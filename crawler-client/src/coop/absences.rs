//! Claims of absence. A site whose robots.rdf states `wc:complete` says its listing names every
//! page it serves, so a link in its snapshot's pages to a URL of its own that the listing does
//! not name is its claim that nothing is there (a broken link, a query string on a static
//! file). Such a link is held unfetched, recorded as held, while the site is believed; when
//! the snapshot ends, a few of those held are fetched as checks, within the snapshot's share
//! of checks (`super::trust::snapshot_checks`). A check answered 404 or 410, or with the
//! content of a page the crawl holds, proves the claim; one answered with a page of its own
//! proves the listing hid it: the site loses its trust at once, and every link it held is
//! fetched. A site not believed, a snapshot that failed, or a listing that does not state
//! completeness holds nothing.

use super::state::{Claim, CoopState, Reach};
use crate::analyze::Link;
use crate::ids::{Fp, HostId};

/// Most links held per site: past them a site's pages link more than a listing could be
/// claimed complete about, and the rest are fetched.
const MAX_HELD: usize = 10_000;

/// A link held, as it was found.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// Its URL.
    pub(crate) url: String,
    /// Its depth in the crawl.
    pub(crate) depth: u32,
}

impl CoopState {
    /// Whether a link to `url` on `host`, found now, is held: the host's snapshot is being
    /// read, its listing states completeness and does not name the URL, and the site is
    /// believed.
    pub(crate) fn claims_absent(&self, host: HostId, url: &str) -> bool {
        let believed = self
            .sites
            .get(&host)
            .is_some_and(|s| s.trust.believed(self.config.trust_min));
        let room = self.held.get(&host).map_or(0, |h| h.len()) < MAX_HELD;
        believed
            && room
            && self
                .snapshots
                .get(&host)
                .is_some_and(|p| p.complete && !p.tags.contains_key(url))
    }

    /// Holds a link [`CoopState::claims_absent`] admitted.
    pub(crate) fn hold(&mut self, host: HostId, link: &Link, depth: u32) {
        self.held.entry(host).or_default().insert(
            link.fp,
            Held {
                url: link.url.clone(),
                depth,
            },
        );
        self.site(host).stats.held += 1;
    }

    /// The snapshot ended: `checks` of the links held are fetched as checks of its claim, the
    /// rest stay held; with no check allowed, a site no longer believed, or a snapshot not used
    /// (`released`), every one is fetched.
    pub(super) fn settle_absences(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        checks: usize,
        released: bool,
    ) {
        let believed = self
            .sites
            .get(&host)
            .is_some_and(|s| s.trust.believed(self.config.trust_min));
        // What cannot be checked is not held.
        if released || !believed || checks == 0 {
            self.release(r, host);
            return;
        }
        let Some(held) = self.held.get_mut(&host) else {
            return;
        };
        let mut fps: Vec<Fp> = held.keys().copied().collect();
        fps.sort_unstable();
        let step = (fps.len() / checks.max(1)).max(1);
        let offset = (self.rng as usize) % step;
        let picked: Vec<(Fp, Held)> = fps
            .iter()
            .skip(offset)
            .step_by(step)
            .take(checks)
            .filter_map(|fp| held.remove(fp).map(|h| (*fp, h)))
            .collect();
        if !picked.is_empty() {
            tracing::info!(
                "{}: {} links its complete listing does not name are held; {} fetched to check",
                r.origin(host),
                fps.len(),
                picked.len()
            );
        }
        for (fp, h) in picked {
            self.claims.insert(fp, (host, Claim::Absent));
            self.site(host).stats.checks += 1;
            r.frontier.push_revisit(host, h.url, fp, h.depth);
        }
    }

    /// Links held of the host, for the share of the snapshot's checks they get.
    pub(super) fn held_count(&self, host: HostId) -> usize {
        self.held.get(&host).map_or(0, |h| h.len())
    }

    /// Whether a response to `fp` answers a claim that nothing is there.
    pub(crate) fn checks_absence(&self, fp: Fp) -> bool {
        matches!(self.claims.get(&fp), Some((_, Claim::Absent)))
    }

    /// A final response to `fp` was recorded (`status`, and whether its content is a page
    /// the crawl holds): the site's claim that nothing was there, if it made one, weighed.
    pub(crate) fn absence_checked(
        &mut self,
        r: &mut Reach<'_>,
        fp: Fp,
        status: u16,
        duplicate: bool,
    ) {
        if !self.checks_absence(fp) {
            return;
        }
        let Some((host, _)) = self.claims.remove(&fp) else {
            return;
        };
        let site = self.site(host);
        match status {
            404 | 410 => site.trust.confirm(),
            200..=299 if duplicate => site.trust.confirm(),
            200..=299 => {
                site.trust.disprove();
                site.stats.refuted += 1;
                tracing::warn!(
                    "{}: a link its complete listing does not name is a page of its own; every link it held is fetched",
                    r.origin(host)
                );
                self.release(r, host);
            }
            // A redirect, an error, a refusal: no answer to the claim either way.
            _ => {}
        }
    }

    /// Every link the host's listing held is fetched.
    fn release(&mut self, r: &mut Reach<'_>, host: HostId) {
        let Some(held) = self.held.remove(&host) else {
            return;
        };
        // Queued whatever the seen-set says: each was marked seen when it was held.
        for (fp, h) in held {
            r.frontier.push_revisit(host, h.url, fp, h.depth);
        }
    }
}

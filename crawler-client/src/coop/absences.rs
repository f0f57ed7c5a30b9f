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
//!
//! This is the owner of the links held: how many a site may hold, which are picked as checks,
//! and that a release gives back every one. The coordinator decides when (`super::claims`).

use crate::analyze::Link;
use crate::ids::{Fp, HostId};
use std::collections::HashMap;

/// Most links held per site: past them a site's pages link more than a listing could be
/// claimed complete about, and the rest are fetched.
const MAX_HELD: usize = 10_000;

/// A link held, as it was found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Held {
    /// Its URL.
    pub(crate) url: String,
    /// Its depth in the crawl.
    pub(crate) depth: u32,
}

/// The links held unfetched, by site.
#[derive(Default)]
pub(crate) struct HeldAbsences {
    held: HashMap<HostId, HashMap<Fp, Held>>,
}

impl HeldAbsences {
    /// Whether `host` may hold one more link.
    pub(crate) fn room(&self, host: HostId) -> bool {
        self.count(host) < MAX_HELD
    }

    /// Holds `link`, found at `depth`.
    pub(crate) fn hold(&mut self, host: HostId, link: &Link, depth: u32) {
        self.held.entry(host).or_default().insert(
            link.fp,
            Held {
                url: link.url.clone(),
                depth,
            },
        );
    }

    /// Links held of `host`.
    pub(crate) fn count(&self, host: HostId) -> usize {
        self.held.get(&host).map_or(0, HashMap::len)
    }

    /// `checks` of the links held of `host`, spread evenly over them in fingerprint order from
    /// `offset` (below the spacing), taken to be fetched as checks; the rest stay held.
    pub(crate) fn pick_checks(
        &mut self,
        host: HostId,
        checks: usize,
        offset: impl FnOnce(usize) -> usize,
    ) -> Vec<(Fp, Held)> {
        let Some(held) = self.held.get_mut(&host) else {
            return Vec::new();
        };
        let mut fps: Vec<Fp> = held.keys().copied().collect();
        fps.sort_unstable();
        let step = (fps.len() / checks.max(1)).max(1);
        let offset = offset(step) % step;
        fps.iter()
            .skip(offset)
            .step_by(step)
            .take(checks)
            .filter_map(|fp| held.remove(fp).map(|h| (*fp, h)))
            .collect()
    }

    /// Every link held of `host`, given back to be fetched.
    pub(crate) fn release(&mut self, host: HostId) -> Vec<(Fp, Held)> {
        let mut out: Vec<(Fp, Held)> = self
            .held
            .remove(&host)
            .unwrap_or_default()
            .into_iter()
            .collect();
        out.sort_unstable_by_key(|(fp, _)| *fp);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(i: u64) -> Link {
        Link::to(&url::Url::parse(&format!("http://a.test/{i}")).unwrap())
    }

    #[test]
    fn checks_are_spread_over_the_links_held_and_a_release_gives_back_the_rest() {
        let mut h = HeldAbsences::default();
        let host = HostId(1);
        for i in 0..10 {
            h.hold(host, &link(i), 2);
        }
        h.hold(HostId(2), &link(99), 1);
        assert_eq!(h.count(host), 10);
        let picked = h.pick_checks(host, 3, |_| 0);
        assert_eq!(picked.len(), 3);
        assert_eq!(h.count(host), 7);
        let mut all: Vec<Fp> = h.held[&host].keys().copied().collect();
        all.extend(picked.iter().map(|(fp, _)| *fp));
        all.sort_unstable();
        // Every third in fingerprint order, from the first.
        let want: Vec<Fp> = all.iter().step_by(3).take(3).copied().collect();
        let got: Vec<Fp> = picked.iter().map(|(fp, _)| *fp).collect();
        assert_eq!(got, want);
        let back = h.release(host);
        assert_eq!(back.len(), 7);
        assert!(back.iter().all(|(_, held)| held.depth == 2));
        assert_eq!(h.count(host), 0);
        assert!(h.release(host).is_empty());
        assert!(h.pick_checks(host, 2, |_| 0).is_empty());
        assert_eq!(h.count(HostId(2)), 1, "another site's links stay held");
    }

    #[test]
    fn a_site_holds_at_most_its_bound() {
        let mut h = HeldAbsences::default();
        let host = HostId(3);
        for i in 0..MAX_HELD as u64 {
            h.hold(host, &link(i), 1);
        }
        assert!(!h.room(host));
        assert!(h.room(HostId(4)));
    }
}

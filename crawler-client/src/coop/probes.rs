//! Blind requests for the well-known places of a site's documents (`/robots.rdf`,
//! `/sitemap.xml`) where nothing named them. The rule it owns: each path is asked of a host at
//! most once a run, and an answer is known for the probe it was, so that a probe's 404 says
//! only that the path is not there (it is no failure of a document the site named). When the
//! probes are served (after the host's pages, never before one) is the frontier's to decide.

use super::MetaKind;
use crate::ids::HostId;
use std::collections::{HashMap, HashSet};
use url::Url;

/// The probes of this run.
#[derive(Default)]
pub(crate) struct Probes {
    /// What each host was probed for this run.
    sent: HashSet<(HostId, MetaKind)>,
    /// Probes not answered yet.
    pending: HashMap<HostId, Vec<Url>>,
}

impl Probes {
    /// Whether `host` may be probed for `kind` at `url` now (never before this run): if so,
    /// the probe is recorded as sent.
    pub(crate) fn send(&mut self, host: HostId, kind: MetaKind, url: &Url) -> bool {
        if !self.sent.insert((host, kind)) {
            return false;
        }
        self.pending.entry(host).or_default().push(url.clone());
        true
    }

    /// A request of `host` for `url` was answered: whether it was a probe.
    pub(crate) fn answered(&mut self, host: HostId, url: &Url) -> bool {
        let Some(urls) = self.pending.get_mut(&host) else {
            return false;
        };
        let Some(i) = urls.iter().position(|u| u == url) else {
            return false;
        };
        urls.swap_remove(i);
        if urls.is_empty() {
            self.pending.remove(&host);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_probed_once_a_run_and_its_answer_known_for_a_probes() {
        let mut p = Probes::default();
        let (a, b) = (HostId(1), HostId(2));
        let rdf = Url::parse("http://a.test/robots.rdf").unwrap();
        let map = Url::parse("http://a.test/sitemap.xml").unwrap();
        assert!(p.send(a, MetaKind::Listing, &rdf));
        assert!(!p.send(a, MetaKind::Listing, &rdf), "once a run");
        assert!(p.send(a, MetaKind::Sitemap, &map));
        assert!(p.send(b, MetaKind::Listing, &rdf), "each host its own");
        assert!(!p.answered(a, &Url::parse("http://a.test/other.rdf").unwrap()));
        assert!(p.answered(a, &rdf));
        assert!(!p.answered(a, &rdf), "answered once");
        assert!(p.answered(a, &map));
        // Answered, it is still not sent again this run.
        assert!(!p.send(a, MetaKind::Sitemap, &map));
    }
}

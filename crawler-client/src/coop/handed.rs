//! The pages a site handed over (a snapshot, a batch) and that were not fetched live since,
//! with the content they were taken with. The rule it owns: a hand-over is proven page by
//! page, by live fetches, and one page that proves false disowns every page the site handed
//! over and that no live fetch has proven since (they are taken all at once).

use crate::ids::{Fp, HostId};
use std::collections::HashMap;
use webcoop_protocol::validator::Sha256Digest;

/// A page a site handed over: its URL, and the digest of the content it was taken with.
pub(crate) type Handed = (String, Option<Sha256Digest>);

/// The pages handed over, by site.
#[derive(Default)]
pub(crate) struct HandedOver {
    unproven: HashMap<HostId, HashMap<Fp, Handed>>,
}

impl HandedOver {
    /// `host` handed page `fp` over, taken with content of SHA-256 `digest`.
    pub(crate) fn hand(&mut self, host: HostId, fp: Fp, url: &str, digest: Option<Sha256Digest>) {
        self.unproven
            .entry(host)
            .or_default()
            .insert(fp, (url.to_string(), digest));
    }

    /// Page `fp` of `host` was fetched live: it is the crawl's copy by its own right now.
    pub(crate) fn proven(&mut self, host: HostId, fp: Fp) {
        if let Some(pages) = self.unproven.get_mut(&host) {
            pages.remove(&fp);
            if pages.is_empty() {
                self.unproven.remove(&host);
            }
        }
    }

    /// A page `host` handed over proved false: every page it handed over that is still
    /// unproven, taken (to be disowned and fetched again).
    pub(crate) fn disown(&mut self, host: HostId) -> HashMap<Fp, Handed> {
        self.unproven.remove(&host).unwrap_or_default()
    }

    /// Pages of `host` handed over and still unproven.
    #[cfg(test)]
    pub(crate) fn count(&self, host: HostId) -> usize {
        self.unproven.get(&host).map_or(0, HashMap::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_fetched_live_is_proven_and_a_false_one_disowns_the_rest_of_its_site() {
        let mut h = HandedOver::default();
        let d = Sha256Digest::of(b"x");
        for i in 1..=3 {
            h.hand(HostId(1), Fp(i), &format!("http://a.test/{i}"), Some(d));
        }
        h.hand(HostId(2), Fp(9), "http://b.test/9", None);
        h.proven(HostId(1), Fp(2));
        assert_eq!(h.count(HostId(1)), 2);
        let gone = h.disown(HostId(1));
        let mut fps: Vec<u64> = gone.keys().map(|f| f.0).collect();
        fps.sort();
        assert_eq!(fps, [1, 3]);
        assert_eq!(gone[&Fp(1)], ("http://a.test/1".to_string(), Some(d)));
        // Taken at once: nothing left to disown again; the other site is untouched.
        assert!(h.disown(HostId(1)).is_empty());
        assert_eq!(h.count(HostId(2)), 1);
    }
}

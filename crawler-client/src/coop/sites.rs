//! Every site's cooperation state, and which of them changed since the last save. The one
//! rule it owns: a site cannot be changed without being saved with the next batch (every
//! mutable access marks it dirty), so a `kill -9` never loses what a decision changed of a
//! site once its batch is committed. A site touched but left as it was is not written again:
//! each save compares a site's JSON with a digest of what was last handed to a save.

use super::site::{CoopConfig, CoopStats, SiteCoop};
use crate::ids::HostId;
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};

/// The sites' cooperation state, with its unsaved set.
#[derive(Default)]
pub(crate) struct Sites {
    /// Boxed: a state is about 800 bytes, and a table of them inline reserves that for every
    /// empty slot too (3.3 MB at 2,000 hosts, against 1.7 boxed).
    map: HashMap<HostId, Box<SiteCoop>>,
    dirty: HashSet<HostId>,
    /// A digest of each site's JSON as last loaded or handed to a save.
    saved: HashMap<HostId, u64>,
}

/// The digest a site's JSON is compared by.
fn digest(json: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    h.write(json);
    h.finish()
}

impl Sites {
    /// Takes the sites' saved state (`(host, origin, json)` rows); an unreadable one is
    /// discovered again (and says so).
    pub(crate) fn load(&mut self, rows: Vec<(HostId, String, String)>) {
        for (id, origin, json) in rows {
            match serde_json::from_str::<SiteCoop>(&json) {
                Ok(site) => {
                    self.saved.insert(id, digest(json.as_bytes()));
                    self.map.insert(id, Box::new(site));
                }
                Err(e) => tracing::warn!(
                    "{origin}: cooperation state unreadable ({e}); discovering again"
                ),
            }
        }
    }

    /// A site's state, if it has any.
    pub(crate) fn get(&self, host: HostId) -> Option<&SiteCoop> {
        self.map.get(&host).map(|s| &**s)
    }

    /// A site's state to change (made if new), marked to be saved.
    pub(crate) fn site(&mut self, host: HostId) -> &mut SiteCoop {
        self.dirty.insert(host);
        self.map.entry(host).or_default()
    }

    /// Every site with its state.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (HostId, &SiteCoop)> {
        self.map.iter().map(|(id, s)| (*id, &**s))
    }

    /// The hosts with a state.
    pub(crate) fn hosts(&self) -> Vec<HostId> {
        self.map.keys().copied().collect()
    }

    /// Whether the site's claims are believed.
    pub(crate) fn believed(&self, host: HostId, config: &CoopConfig) -> bool {
        self.map
            .get(&host)
            .is_some_and(|s| s.trust.believed(config.trust_min))
    }

    /// Whether the site's announcements stand in for polling its pages.
    pub(crate) fn covers(&self, host: HostId, config: &CoopConfig) -> bool {
        self.map.get(&host).is_some_and(|s| s.covers(config))
    }

    /// The sites changed since the last call, as saved (JSON).
    /// Sites touched whose JSON is what was last saved are left out: at thousands of hosts
    /// every host is touched between saves, and most are unchanged.
    pub(crate) fn take_unsaved(&mut self) -> Vec<(HostId, String)> {
        let mut out = Vec::new();
        let mut json = Vec::new();
        for id in self.dirty.drain() {
            let Some(site) = self.map.get(&id) else {
                continue;
            };
            json.clear();
            if serde_json::to_writer(&mut json, site).is_err() {
                continue;
            }
            let d = digest(&json);
            if self.saved.insert(id, d) == Some(d) {
                continue;
            }
            if let Ok(text) = std::str::from_utf8(&json) {
                out.push((id, text.to_owned()));
            }
        }
        out
    }

    /// Every site's figures added up.
    pub(crate) fn totals(&self) -> CoopStats {
        let mut t = CoopStats::default();
        for s in self.map.values() {
            let s = &s.stats;
            t.meta_requests += s.meta_requests;
            t.meta_bytes += s.meta_bytes;
            t.not_modified += s.not_modified;
            t.announced += s.announced;
            t.deltas += s.deltas;
            t.delta_fallbacks += s.delta_fallbacks;
            t.pushes += s.pushes;
            t.bad_signatures += s.bad_signatures;
            t.checks += s.checks;
            t.foreign += s.foreign;
            t.probes += s.probes;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_is_saved_once_and_a_read_saves_nothing() {
        let mut sites = Sites::default();
        assert!(sites.take_unsaved().is_empty());
        sites.site(HostId(1)).stats.checks = 3;
        sites.site(HostId(2));
        let mut saved = sites.take_unsaved();
        saved.sort();
        assert_eq!(saved.len(), 2);
        assert_eq!(saved[0].0, HostId(1));
        let back: SiteCoop = serde_json::from_str(&saved[0].1).unwrap();
        assert_eq!(back.stats.checks, 3);
        // Saved: nothing more until the next change; reads change nothing.
        assert!(sites.take_unsaved().is_empty());
        let _ = sites.get(HostId(1));
        let _ = sites.believed(HostId(1), &CoopConfig::default());
        assert!(sites.take_unsaved().is_empty());
        sites.site(HostId(1)).trust.refute(1.0);
        assert_eq!(sites.take_unsaved().len(), 1);
        // Touched for change but left as it was: not written again (the twin above changed it).
        sites.site(HostId(1));
        let _ = &mut sites.site(HostId(2)).stats;
        assert!(sites.take_unsaved().is_empty());
        sites.site(HostId(2)).stats.checks += 1;
        let saved = sites.take_unsaved();
        assert_eq!(saved.len(), 1);
        assert_eq!(saved[0].0, HostId(2));
    }

    #[test]
    fn a_saved_state_comes_back_and_an_unreadable_one_is_left_to_discovery() {
        let mut sites = Sites::default();
        sites.site(HostId(7)).listed_urls = 40;
        let saved = sites.take_unsaved();
        let mut again = Sites::default();
        again.load(vec![
            (HostId(7), "http://a.test".into(), saved[0].1.clone()),
            (HostId(8), "http://b.test".into(), "{not json".into()),
        ]);
        assert_eq!(again.get(HostId(7)).map(|s| s.listed_urls), Some(40));
        assert!(again.get(HostId(8)).is_none());
        assert_eq!(again.hosts(), vec![HostId(7)]);
        // Loading is not a change, nor is a touch that leaves the loaded state as it was.
        assert!(again.take_unsaved().is_empty());
        again.site(HostId(7));
        assert!(again.take_unsaved().is_empty());
        again.site(HostId(7)).listed_urls = 41;
        assert_eq!(again.take_unsaved().len(), 1);
    }
}

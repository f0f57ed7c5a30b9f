//! A snapshot of the whole site on a first visit: robots.rdf names one, so its list waits,
//! the host's pages are held, and one request fetches every page. Each page read from the
//! snapshot is believed only if robots.rdf lists it with the same SHA-256; what the snapshot
//! lacks or disagrees on is fetched as usual once the list is acted on, and a few pages taken
//! from it are fetched again at once to check it (a mismatch costs the site its trust, as any
//! false claim does).

use super::announcements::{Reading, Said};
use super::state::{Claim, CoopState, Reach};
use super::{CoopJob, MetaKind};
use crate::analyze::Link;
use crate::ids::HostId;
use std::collections::HashMap;
use url::Url;

/// Pages taken from a snapshot that are fetched again to check it (unless checks are off).
pub(crate) const CHECKS: usize = 3;

/// A URL robots.rdf lists, as its list is acted on.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    /// The URL.
    pub(crate) url: Url,
    /// Its modification time (ms).
    pub(crate) modified: i64,
    /// Its entity tag (the SHA-256 of its content, for a webcoop site).
    pub(crate) etag: Option<String>,
    /// Where its delta is.
    pub(crate) delta: Option<Url>,
}

impl Listed {
    /// As an announcement.
    pub(crate) fn said(&self) -> Said<'_> {
        Said {
            url: &self.url,
            modified: Some(self.modified),
            etag: self.etag.clone(),
            delta: self.delta.clone(),
            inline: None,
        }
    }
}

/// A snapshot being fetched, with the list it is checked against.
#[derive(Debug)]
pub(crate) struct PendingSnapshot {
    /// The listed URLs.
    list: Vec<Listed>,
    /// Each listed URL's entity tag, to check a page against.
    tags: HashMap<String, Option<String>>,
    /// URLs taken from the snapshot.
    taken: Vec<Link>,
    /// How the list is read once the snapshot ended: a first visit's, or a resync's (whose
    /// claims are weighed like any update).
    reading: Reading,
}

impl CoopState {
    /// On a first reading of robots.rdf, or one after the changes feed lost the crawl's
    /// cursor: fetches the snapshot it names instead of acting on its list now, if snapshots
    /// are used and the site speaks for it. Gives the list back when it did not.
    pub(crate) fn take_snapshot(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        snapshot: Option<&Url>,
        list: Vec<Listed>,
        reading: Reading,
    ) -> Result<(), Vec<Listed>> {
        let Some(url) = snapshot else {
            return Err(list);
        };
        if !self.config.snapshots
            || r.frontier.is_shared()
            || self.snapshots.contains_key(&host)
            || !self.speaks_for(r, host, url)
        {
            return Err(list);
        }
        let tags = list
            .iter()
            .map(|l| (l.url.as_str().to_string(), l.etag.clone()))
            .collect();
        tracing::info!(
            "{}: robots.rdf lists {} URLs and names a snapshot; fetching it in one request",
            r.origin(host),
            list.len()
        );
        self.snapshots.insert(
            host,
            PendingSnapshot {
                list,
                tags,
                taken: Vec::new(),
                reading,
            },
        );
        r.frontier.hold_pages(host, true);
        r.frontier.push_coop(
            host,
            CoopJob::Fetch {
                kind: MetaKind::Snapshot,
                url: url.clone(),
                etag: None,
                last_modified: None,
            },
        );
        self.polling.insert(host);
        Ok(())
    }

    /// Whether a snapshot of the host is being read whose listing names `url`.
    pub(crate) fn snapshot_lists(&self, host: HostId, url: &str) -> bool {
        self.snapshots
            .get(&host)
            .is_some_and(|p| p.tags.contains_key(url))
    }

    /// Whether a page read from the host's snapshot is taken: robots.rdf lists it with the
    /// SHA-256 its content has.
    pub(crate) fn snapshot_page(
        &mut self,
        host: HostId,
        url: &str,
        validator: Option<&str>,
    ) -> bool {
        let Some(p) = self.snapshots.get_mut(&host) else {
            return false;
        };
        let listed = p.tags.get(url);
        let agrees = matches!((listed, validator), (Some(Some(tag)), Some(v)) if tag == v);
        if agrees && let Ok(u) = Url::parse(url) {
            p.taken.push(Link::to(&u));
            self.site(host).stats.from_snapshot += 1;
        } else if listed.is_some() {
            self.site(host).stats.refuted += 1;
        }
        agrees
    }

    /// The snapshot ended (`pages` taken, or it failed): the list is acted on (what the
    /// snapshot gave is known and unchanged; the rest is queued), a few of its pages are
    /// checked, and the host's pages go again.
    pub(crate) fn snapshot_ended(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        failed: Option<String>,
    ) {
        let Some(p) = self.snapshots.remove(&host) else {
            return;
        };
        let origin = r.origin(host);
        match failed {
            Some(why) => tracing::warn!(
                "{origin}: snapshot not used ({why}); fetching its {} listed pages one by one",
                p.list.len()
            ),
            None => tracing::info!(
                "{origin}: {} of {} listed pages taken from the snapshot; {} to fetch",
                p.taken.len(),
                p.list.len(),
                p.list.len().saturating_sub(p.taken.len())
            ),
        }
        // What was taken is held as the listing says: only the rest is weighed (the pages
        // taken may not be saved yet, so the copies held would look older).
        let taken: std::collections::HashSet<&str> =
            p.taken.iter().map(|l| l.url.as_str()).collect();
        for l in p.list.iter().filter(|l| !taken.contains(l.url.as_str())) {
            self.listed(r, host, l.said(), p.reading);
        }
        let step = (p.taken.len() / CHECKS).max(1);
        let offset = if p.taken.is_empty() {
            0
        } else {
            (self.rng as usize) % step
        };
        // An operator who turned checks off (a share of 0) gets none here either.
        let checks = if self.config.check_share > 0.0 {
            CHECKS
        } else {
            0
        };
        for link in p.taken.iter().skip(offset).step_by(step).take(checks) {
            self.claims.insert(link.fp, (host, Claim::Unchanged));
            self.site(host).stats.checks += 1;
            self.due_now(r, host, link);
        }
        r.frontier.hold_pages(host, false);
    }
}

//! A snapshot of the whole site on a first visit: robots.rdf names one, so its list waits,
//! the host's pages are held, and one request fetches every page. Each page read from the
//! snapshot is believed only if robots.rdf lists it with the same SHA-256; what the snapshot
//! lacks or disagrees on is fetched as usual once the list is acted on. A few pages taken from
//! it (more the less is known of the site) are fetched again at once, whole, and compared with
//! the content the snapshot gave: one that differs costs the site its trust at once, and every
//! page the snapshot gave is disowned and fetched again before it counts as the crawl's copy.

use super::ledger::Claim;
use super::pending::{Listed, PageRead, PendingSnapshot};
use super::shared::{Reach, Reading};
use super::state::CoopState;
use super::{CoopJob, MetaKind};
use crate::analyze::Link;
use crate::ids::HostId;
use url::Url;
use webcoop_protocol::validator::{EntityTag, Sha256Digest};

impl CoopState {
    /// On a first reading of robots.rdf, or one after the changes feed lost the crawl's
    /// cursor: fetches the snapshot it names instead of acting on its list now, if snapshots
    /// are used and the site speaks for it. Gives the list back when it did not.
    pub(crate) fn take_snapshot(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        (snapshot, max_record, complete): (Option<&Url>, Option<u64>, bool),
        list: Vec<Listed>,
        reading: Reading,
    ) -> Result<(), Vec<Listed>> {
        let Some(url) = snapshot else {
            return Err(list);
        };
        if !self.config.snapshots
            || self.config.mode < super::CoopMode::Meta
            || r.frontier.is_shared()
            || self.snapshots.reading(host)
            || !self.speaks_for(r, host, url)
        {
            return Err(list);
        }
        tracing::info!(
            "{}: robots.rdf lists {} URLs and names a snapshot; fetching it in one request",
            r.origin(host),
            list.len()
        );
        self.snapshots.start(
            host,
            PendingSnapshot::new(list, reading, max_record, complete),
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
        self.snapshots.lists(host, url)
    }

    /// Whether a page read from the host's snapshot is taken: robots.rdf lists it with the
    /// SHA-256 its content has. A page taken is handed over until fetched live.
    pub(crate) fn snapshot_page(
        &mut self,
        host: HostId,
        url: &str,
        validator: Option<&str>,
    ) -> bool {
        match self.snapshots.read_page(host, url, validator) {
            PageRead::Taken(link, d) => {
                self.handed.hand(host, link.fp, &link.url, Some(d));
                self.site(host).stats.from_snapshot += 1;
                true
            }
            PageRead::Refused { listed } => {
                if listed {
                    self.site(host).stats.refuted += 1;
                }
                false
            }
        }
    }

    /// The snapshot ended (`pages` taken, or it failed): the list is acted on (what the
    /// snapshot gave is known and unchanged; the rest is queued), a few of its pages are
    /// checked, and the host's pages go again. The pages whose records were above the page
    /// limit (`oversize`) are fetched alone: each is a check of the listing the snapshot
    /// agreed with, so it counts among the checks (three of its own pages are checked still).
    pub(crate) fn snapshot_ended(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        failed: Option<String>,
        oversize: &[String],
    ) {
        let Some(p) = self.snapshots.end(host) else {
            return;
        };
        let origin = r.origin(host);
        let used = failed.is_none();
        match failed {
            Some(why) => tracing::warn!(
                "{origin}: snapshot not used ({why}); fetching its {} listed pages one by one",
                p.list().len()
            ),
            None => tracing::info!(
                "{origin}: {} of {} listed pages taken from the snapshot; {} to fetch",
                p.taken().len(),
                p.list().len(),
                p.list().len().saturating_sub(p.taken().len())
            ),
        }
        // What was taken is held as the listing says: only the rest is weighed (the pages
        // taken may not be saved yet, so the copies held would look older).
        let taken: std::collections::HashSet<&str> =
            p.taken().iter().map(|(l, _)| l.url.as_str()).collect();
        for l in p.list().iter().filter(|l| !taken.contains(l.url.as_str())) {
            self.listed(r, host, l.said(), p.reading());
        }
        // An operator who turned checks off (a share of 0) gets none here either.
        let held = self.absences.count(host);
        let mut checks = if self.config.check_share > 0.0 {
            let trust = self.site(host).trust;
            super::trust::snapshot_checks(&trust, p.taken().len() + oversize.len() + held)
        } else {
            0
        };
        // The links held are the snapshot's other claim (that nothing is there): they get
        // their share of the checks, at least one.
        let absent_checks = if held == 0 || checks == 0 {
            0
        } else {
            let share = checks as f64 * held as f64 / (p.taken().len() + held) as f64;
            (share.round() as usize).clamp(1, held)
        };
        // Pages left out of the snapshot by the site for being above the largest record it
        // states are fetched alone: each checks the listing the snapshot agreed with. (Records
        // above the crawl's own page limit are fetched alone too, but cut: they prove nothing.)
        let left_for_size = |l: &&Listed| {
            !taken.contains(l.url.as_str())
                && !oversize.contains(&l.url.to_string())
                && matches!((l.size, p.max_record()), (Some(s), Some(m)) if s > m)
        };
        let mut alone = 0;
        for l in p.list().iter().filter(|_| checks > 0).filter(left_for_size) {
            let digest = l
                .etag
                .as_deref()
                .and_then(|t| t.parse::<EntityTag>().ok())
                .and_then(|t| Sha256Digest::from_etag(&t));
            if let Some(d) = digest {
                self.ledger
                    .expect(Link::to(&l.url).fp, host, Claim::Matches(d));
                self.site(host).stats.checks += 1;
                alone += 1;
            }
        }
        checks = checks
            .saturating_sub(alone + absent_checks)
            .max(
                checks
                    .min(super::trust::SNAPSHOT_CHECKS_MIN)
                    .saturating_sub(absent_checks),
            )
            .min(p.taken().len());
        let step = (p.taken().len() / checks.max(1)).max(1);
        let offset = if p.taken().is_empty() {
            0
        } else {
            self.sampler.index(step)
        };
        for (link, digest) in p.taken().iter().skip(offset).step_by(step).take(checks) {
            self.ledger.expect(link.fp, host, Claim::Matches(*digest));
            self.site(host).stats.checks += 1;
            self.due_now(r, host, link);
        }
        self.settle_absences(r, host, absent_checks, !used);
        r.frontier.hold_pages(host, false);
    }
}

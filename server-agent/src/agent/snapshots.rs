//! When the agent builds a snapshot of the whole site, and how: a first one as soon as the
//! site is published, then a new one once the files changed since hold a share of the site's
//! bytes or the last one is older than `--snapshot-every`. Built on a thread of its own from a
//! copy of the inventory's digests at one sequence number, so watching and publishing go on;
//! robots.rdf names it once it is complete. The same for a docroot's files and for a site read
//! from its origin ([`SnapshotSite::bodies`] says where the bytes come from).

use super::{Agent, AgentError};
use crate::config::Config;
use crate::inventory::Inventory;
use crate::publish::snapshot::directory;
use crate::publish::{PublishError, Publisher};
use crate::snapshot::{self, Bodies, BuiltSnapshot, Plan};
use crate::store::Store;
use chrono::{DateTime, Utc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// A snapshot being built in the background.
#[derive(Default)]
pub(crate) struct Snapshots {
    building: Option<JoinHandle<std::io::Result<BuiltSnapshot>>>,
    /// When the last build failed, so a full disk is not retried at once.
    failed_at: Option<Instant>,
    /// When it was last asked whether one is due (the change log is read to answer).
    checked_at: Option<Instant>,
    /// The snapshot and the newest change whose bytes in between were last counted and found
    /// short of the share: the log is read again only once a change came.
    counted: Option<(u64, u64)>,
}

/// What deciding on and building a snapshot reads of an agent.
pub(crate) struct SnapshotSite<'a> {
    pub(crate) config: &'a Config,
    pub(crate) store: &'a Store,
    pub(crate) inventory: &'a Inventory,
    pub(crate) publisher: &'a Publisher,
    /// Where the files' bytes come from.
    pub(crate) bodies: Bodies,
    pub(crate) now: DateTime<Utc>,
}

/// Time between two looks at whether a snapshot is due.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// Time after a failed build before the next is tried.
const RETRY: Duration = Duration::from_secs(600);

impl SnapshotSite<'_> {
    /// The snapshot's plan: every listed file's digest, at the sequence number they are at.
    fn plan(&self) -> Result<Plan, AgentError> {
        let frozen = self.store.freeze_files()?;
        Ok(Plan {
            sequence: frozen.sequence(),
            files: crate::snapshot::PlanFiles::Frozen(frozen),
            dump: self.config.resourcesync
                && self
                    .config
                    .snapshots
                    .as_ref()
                    .is_some_and(|s| s.resource_dump),
        })
    }

    fn level(&self) -> i32 {
        self.config
            .snapshots
            .as_ref()
            .map_or(snapshot::DEFAULT_LEVEL, |s| s.level)
    }

    fn error(&self, sequence: u64, source: std::io::Error) -> AgentError {
        let path =
            directory(&self.config.out).join(webcoop_protocol::snapshot::file_name(sequence));
        AgentError::Publish(PublishError::Write { path, source })
    }
}

impl Snapshots {
    /// Whether a new snapshot is due (snapshots configured, none being built).
    pub(crate) fn due(&mut self, site: &SnapshotSite) -> Result<bool, AgentError> {
        let Some(settings) = &site.config.snapshots else {
            return Ok(false);
        };
        if self.building.is_some()
            || site.inventory.is_empty()
            || self.failed_at.is_some_and(|t| t.elapsed() < RETRY)
        {
            return Ok(false);
        }
        let head = site.store.head_seq()?;
        let Some(last) = site.publisher.snapshot() else {
            return Ok(true);
        };
        if last >= head {
            return Ok(false);
        }
        let built = std::fs::metadata(
            directory(&site.config.out).join(webcoop_protocol::snapshot::file_name(last)),
        )
        .and_then(|m| m.modified())
        .ok();
        let age = built
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .unwrap_or(Duration::MAX);
        if age >= settings.every {
            return Ok(true);
        }
        if self.counted == Some((last, head)) {
            return Ok(false);
        }
        let share = settings.share;
        // The bytes of the files changed since, as they are now (a file changed twice counts once).
        let mut changed: Vec<String> = Vec::new();
        let mut since = last;
        loop {
            let page = site.store.changes_since(since, 10_000)?;
            let Some(end) = page.last().map(|c| c.seq) else {
                break;
            };
            changed.extend(page.into_iter().map(|c| c.path));
            since = end;
        }
        changed.sort_unstable();
        changed.dedup();
        let bytes: u64 = changed
            .iter()
            .map(|p| site.inventory.get(p).map_or(0, |e| e.size))
            .sum();
        let total = site.inventory.total_bytes().max(1);
        let due = bytes as f64 >= share * total as f64;
        if !due {
            self.counted = Some((last, head));
        }
        Ok(due)
    }

    /// Builds a snapshot now, on this thread; the caller names it in robots.rdf.
    pub(crate) fn build_now(&mut self, site: &SnapshotSite) -> Result<BuiltSnapshot, AgentError> {
        let plan = site.plan()?;
        let usage = site.config.content_usage.map(|p| p.to_aipref());
        let built = snapshot::build(
            &site.bodies,
            &site.config.out,
            &site.config.base_url,
            &plan,
            (site.level(), usage.as_deref()),
            site.now,
        )
        .map_err(|source| site.error(plan.sequence, source))?;
        self.failed_at = None;
        log_built(&built);
        Ok(built)
    }

    /// Starts building a snapshot on a thread of its own, if one is due.
    pub(crate) fn start_if_due(&mut self, site: &SnapshotSite) -> Result<(), AgentError> {
        if self.checked_at.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return Ok(());
        }
        self.checked_at = Some(Instant::now());
        if !self.due(site)? {
            return Ok(());
        }
        let plan = site.plan()?;
        let (bodies, out, base) = (
            site.bodies.clone(),
            site.config.out.clone(),
            site.config.base_url.clone(),
        );
        let level = site.level();
        let now = site.now;
        let usage = site.config.content_usage.map(|p| p.to_aipref());
        tracing::info!(
            sequence = plan.sequence,
            files = plan.files.len(),
            "building a snapshot"
        );
        self.building = Some(std::thread::spawn(move || {
            snapshot::build(&bodies, &out, &base, &plan, (level, usage.as_deref()), now)
        }));
        Ok(())
    }

    /// A background build that ended with a snapshot, for the caller to name in robots.rdf.
    pub(crate) fn finished(&mut self) -> Option<BuiltSnapshot> {
        if !self.building.as_ref().is_some_and(|h| h.is_finished()) {
            return None;
        }
        let handle = self.building.take()?;
        match handle.join() {
            Ok(Ok(built)) => {
                self.failed_at = None;
                log_built(&built);
                Some(built)
            }
            Ok(Err(e)) => {
                self.failed_at = Some(Instant::now());
                tracing::error!(
                    "building a snapshot failed: {e}; the previous one stays published"
                );
                None
            }
            Err(_) => {
                self.failed_at = Some(Instant::now());
                tracing::error!(
                    "building a snapshot stopped unexpectedly; the previous one stays published"
                );
                None
            }
        }
    }
}

fn log_built(built: &BuiltSnapshot) {
    tracing::info!(
        sequence = built.sequence,
        records = built.records,
        left_out = built.left_out,
        content_bytes = built.content_bytes,
        file_bytes = built.file_bytes,
        seconds = built.elapsed.as_secs_f64(),
        "snapshot published"
    );
}

impl Agent {
    /// Whether a new snapshot is due (snapshots configured, none being built).
    pub fn snapshot_due(&mut self) -> Result<bool, AgentError> {
        self.core.snapshot_due()
    }

    /// Builds a snapshot now, on this thread, and republishes robots.rdf naming it.
    pub fn build_snapshot(&mut self) -> Result<BuiltSnapshot, AgentError> {
        let built = self.core.build_snapshot()?;
        self.publish()?;
        Ok(built)
    }

    /// Starts building a snapshot on a thread of its own, if one is due.
    pub(crate) fn start_snapshot_if_due(&mut self) -> Result<(), AgentError> {
        self.core.start_snapshot_if_due()
    }

    /// Takes a background build that ended: robots.rdf names the new snapshot.
    pub(crate) fn finish_snapshot(&mut self) -> Result<(), AgentError> {
        if let Some(built) = self.core.finished_snapshot() {
            self.core.publisher.set_snapshot(Some(built.sequence));
            self.publish()?;
        }
        Ok(())
    }
}

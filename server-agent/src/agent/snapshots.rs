//! When the agent builds a snapshot of the whole site, and how: a first one as soon as the
//! site is published, then a new one once the files changed since hold a share of the site's
//! bytes or the last one is older than `--snapshot-every`. Built on a thread of its own from a
//! copy of the inventory's digests at one sequence number, so watching and publishing go on;
//! robots.rdf names it once it is complete.

use super::{Agent, AgentError};
use crate::publish::PublishError;
use crate::publish::snapshot::directory;
use crate::snapshot::{self, BuiltSnapshot, Plan};
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

/// Time between two looks at whether a snapshot is due.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// Time after a failed build before the next is tried.
const RETRY: Duration = Duration::from_secs(600);

impl Agent {
    /// The snapshot's plan: every listed file's digest, at the sequence number they are at.
    fn snapshot_plan(&self) -> Result<Plan, AgentError> {
        Ok(Plan {
            sequence: self.store.head_seq()?,
            files: self
                .inventory
                .iter()
                .map(|(p, e)| (p.to_string(), e.sha256, e.size, e.modified))
                .collect(),
            dump: self.config.resourcesync
                && self
                    .config
                    .snapshots
                    .as_ref()
                    .is_some_and(|s| s.resource_dump),
        })
    }

    /// Whether a new snapshot is due (snapshots configured, none being built).
    pub fn snapshot_due(&mut self) -> Result<bool, AgentError> {
        let Some(settings) = &self.config.snapshots else {
            return Ok(false);
        };
        if self.snapshots.building.is_some()
            || self.inventory.is_empty()
            || self
                .snapshots
                .failed_at
                .is_some_and(|t| t.elapsed() < RETRY)
        {
            return Ok(false);
        }
        let head = self.store.head_seq()?;
        let Some(last) = self.publisher.snapshot() else {
            return Ok(true);
        };
        if last >= head {
            return Ok(false);
        }
        let built = std::fs::metadata(
            directory(&self.config.out).join(webcoop_protocol::snapshot::file_name(last)),
        )
        .and_then(|m| m.modified())
        .ok();
        let age = built
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .unwrap_or(Duration::MAX);
        if age >= settings.every {
            return Ok(true);
        }
        if self.snapshots.counted == Some((last, head)) {
            return Ok(false);
        }
        let share = settings.share;
        // The bytes of the files changed since, as they are now (a file changed twice counts once).
        let mut changed: Vec<String> = Vec::new();
        let mut since = last;
        loop {
            let page = self.store.changes_since(since, 10_000)?;
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
            .map(|p| self.inventory.get(p).map_or(0, |e| e.size))
            .sum();
        let total = self.inventory.total_bytes().max(1);
        let due = bytes as f64 >= share * total as f64;
        if !due {
            self.snapshots.counted = Some((last, head));
        }
        Ok(due)
    }

    /// Builds a snapshot now, on this thread, and republishes robots.rdf naming it.
    pub fn build_snapshot(&mut self) -> Result<BuiltSnapshot, AgentError> {
        let level = self
            .config
            .snapshots
            .as_ref()
            .map_or(snapshot::DEFAULT_LEVEL, |s| s.level);
        let plan = self.snapshot_plan()?;
        let now = self.clock.now();
        let usage = self.config.content_usage.map(|p| p.to_aipref());
        let built = snapshot::build(
            &self.config.docroot,
            &self.config.out,
            &self.config.base_url,
            &plan,
            (level, usage.as_deref()),
            now,
        )
        .map_err(|source| self.snapshot_error(plan.sequence, source))?;
        self.snapshot_built(&built)?;
        Ok(built)
    }

    /// Starts building a snapshot on a thread of its own, if one is due.
    pub(crate) fn start_snapshot_if_due(&mut self) -> Result<(), AgentError> {
        if self
            .snapshots
            .checked_at
            .is_some_and(|t| t.elapsed() < CHECK_EVERY)
        {
            return Ok(());
        }
        self.snapshots.checked_at = Some(Instant::now());
        if !self.snapshot_due()? {
            return Ok(());
        }
        let plan = self.snapshot_plan()?;
        let (docroot, out, base) = (
            self.config.docroot.clone(),
            self.config.out.clone(),
            self.config.base_url.clone(),
        );
        let level = self
            .config
            .snapshots
            .as_ref()
            .map_or(snapshot::DEFAULT_LEVEL, |s| s.level);
        let now = self.clock.now();
        let usage = self.config.content_usage.map(|p| p.to_aipref());
        tracing::info!(
            sequence = plan.sequence,
            files = plan.files.len(),
            "building a snapshot"
        );
        self.snapshots.building = Some(std::thread::spawn(move || {
            snapshot::build(&docroot, &out, &base, &plan, (level, usage.as_deref()), now)
        }));
        Ok(())
    }

    /// Takes a background build that ended: robots.rdf names the new snapshot.
    pub(crate) fn finish_snapshot(&mut self) -> Result<(), AgentError> {
        if !self
            .snapshots
            .building
            .as_ref()
            .is_some_and(|h| h.is_finished())
        {
            return Ok(());
        }
        let Some(handle) = self.snapshots.building.take() else {
            return Ok(());
        };
        match handle.join() {
            Ok(Ok(built)) => self.snapshot_built(&built),
            Ok(Err(e)) => {
                self.snapshots.failed_at = Some(Instant::now());
                tracing::error!(
                    "building a snapshot failed: {e}; the previous one stays published"
                );
                Ok(())
            }
            Err(_) => {
                self.snapshots.failed_at = Some(Instant::now());
                tracing::error!(
                    "building a snapshot stopped unexpectedly; the previous one stays published"
                );
                Ok(())
            }
        }
    }

    fn snapshot_built(&mut self, built: &BuiltSnapshot) -> Result<(), AgentError> {
        tracing::info!(
            sequence = built.sequence,
            records = built.records,
            left_out = built.left_out,
            content_bytes = built.content_bytes,
            file_bytes = built.file_bytes,
            seconds = built.elapsed.as_secs_f64(),
            "snapshot published"
        );
        self.snapshots.failed_at = None;
        self.publisher.set_snapshot(Some(built.sequence));
        self.publish()?;
        Ok(())
    }

    fn snapshot_error(&self, sequence: u64, source: std::io::Error) -> AgentError {
        let path =
            directory(&self.config.out).join(webcoop_protocol::snapshot::file_name(sequence));
        AgentError::Publish(PublishError::Write { path, source })
    }
}

//! What the agent's two modes (a docroot's files, a site read from its origin) share: the
//! configuration and clock, the state and its inventory, the publisher and the hub's observer,
//! the public filter, the access logs' counts and the console's activity; and the two steps
//! both take the same way: committing a batch (the state, then the inventory, the publisher and
//! the hub, in that order) and building snapshots of the site.

use super::AgentError;
use super::snapshots::{SnapshotSite, Snapshots};
use crate::activity::Activity;
use crate::config::Config;
use crate::inventory::Inventory;
use crate::privacy::PublicFilter;
use crate::publish::Publisher;
use crate::snapshot::{Bodies, BuiltSnapshot};
use crate::store::{Batch, ChangeObserver, Retention, Store};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use webcoop_protocol::clock::Clock;

/// The state both agents compose.
pub(crate) struct SiteCore {
    pub(crate) config: Config,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) store: Store,
    pub(crate) inventory: Inventory,
    pub(crate) publisher: Publisher,
    /// Told of every committed change (the hub).
    pub(crate) observer: Option<ChangeObserver>,
    pub(crate) filter: Arc<PublicFilter>,
    /// What visitors read, counted from the access logs.
    pub(crate) popularity: Option<crate::popularity::Popularity>,
    pub(crate) activity: Option<Arc<Activity>>,
    /// Every file has been judged and listed once (recorded in the state).
    pub(crate) baseline_done: bool,
    retention: Retention,
    snapshots: Snapshots,
    /// Where the snapshots' bytes come from: the docroot, or the versions kept in the state.
    bodies: Bodies,
}

/// What opening a mode found, to compose its core from.
pub(crate) struct Opened {
    pub(crate) config: Config,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) store: Store,
    pub(crate) inventory: Inventory,
    pub(crate) publisher: Publisher,
    pub(crate) filter: Arc<PublicFilter>,
    pub(crate) baseline_done: bool,
    pub(crate) bodies: Bodies,
}

impl SiteCore {
    /// The core of a mode just opened.
    pub(crate) fn new(o: Opened) -> SiteCore {
        SiteCore {
            retention: super::retention_of(&o.config),
            config: o.config,
            clock: o.clock,
            store: o.store,
            inventory: o.inventory,
            publisher: o.publisher,
            observer: None,
            filter: o.filter,
            popularity: None,
            activity: None,
            baseline_done: o.baseline_done,
            snapshots: Snapshots::default(),
            bodies: o.bodies,
        }
    }

    /// Commits a batch, then brings the inventory in line with the state, tells the publisher
    /// of the changes and the observer (the hub) of them; returns the batch with sequence
    /// numbers.
    pub(crate) fn commit(&mut self, batch: Batch, now: DateTime<Utc>) -> Result<Batch, AgentError> {
        let mut saved = self.store.commit(batch, now, &self.retention)?;
        for path in &saved.deletions {
            self.inventory.remove(path);
        }
        for (path, entry, _) in &saved.upserts {
            self.inventory.insert(path, entry.clone());
        }
        saved.versions.clear();
        self.publisher.note_changes(&saved.changes);
        if let Some(observer) = self.observer.as_mut()
            && !saved.changes.is_empty()
        {
            observer(&saved.changes, &self.inventory);
        }
        Ok(saved)
    }

    fn snapshot_site(&self) -> SnapshotSite<'_> {
        SnapshotSite {
            config: &self.config,
            store: &self.store,
            inventory: &self.inventory,
            publisher: &self.publisher,
            bodies: self.bodies.clone(),
            now: self.clock.now(),
        }
    }

    /// Whether a new snapshot is due (snapshots configured, none being built).
    pub(crate) fn snapshot_due(&mut self) -> Result<bool, AgentError> {
        let mut snapshots = std::mem::take(&mut self.snapshots);
        let due = snapshots.due(&self.snapshot_site());
        self.snapshots = snapshots;
        due
    }

    /// Builds a snapshot now, on this thread; the publisher names it (the caller publishes).
    pub(crate) fn build_snapshot(&mut self) -> Result<BuiltSnapshot, AgentError> {
        let mut snapshots = std::mem::take(&mut self.snapshots);
        let built = snapshots.build_now(&self.snapshot_site());
        self.snapshots = snapshots;
        let built = built?;
        self.publisher.set_snapshot(Some(built.sequence));
        Ok(built)
    }

    /// Starts building a snapshot on a thread of its own, if one is due.
    pub(crate) fn start_snapshot_if_due(&mut self) -> Result<(), AgentError> {
        let mut snapshots = std::mem::take(&mut self.snapshots);
        let started = snapshots.start_if_due(&self.snapshot_site());
        self.snapshots = snapshots;
        started
    }

    /// A background build that ended, if one did (the caller decides whether to name it).
    pub(crate) fn finished_snapshot(&mut self) -> Option<BuiltSnapshot> {
        self.snapshots.finished()
    }
}

//! The agent: keeps the inventory exact and the published documents current.
//!
//! Every look at the docroot, whether a full scan at start, a periodic rescan or the paths a
//! watcher event names, goes through one reconciliation: compare what is on disk with the
//! inventory, read only files whose size, modification or status change time moved, ask the
//! web server whether each is public ([`crate::judge`]), decide by content whether it changed,
//! and commit the result in bounded chunks. Files are judged again on a rolling schedule and
//! when the server's rules change ([`judging`]); [`watch_loop`] drives it all while watching.

mod held_marks;
mod judging;
mod judging_pace;
mod outcome;
mod reads;
mod server_look;
mod setup;
mod site_core;
pub(crate) mod snapshots;
mod watch_loop;

pub use outcome::AgentError;
pub(crate) use outcome::Reconciled;
use server_look::indexnow_key_file;
pub(crate) use server_look::{filter_of, log_view, look_at_server};
pub(crate) use setup::{open_state, publisher_for, retention_of};
pub(crate) use site_core::{Opened, SiteCore};

use crate::activity::{Activity, Exclusions, Publication};
use crate::config::Config;
use crate::content_type;
use crate::inventory::{FileEntry, Inventory};
use crate::judge::{Ask, Judge, Refusal, Verdict};
use crate::publish::{PublishError, PublishReport};
use crate::scan::{self, ReadError, Stat};
use crate::store::{Batch, LoggedChange, NewVersion, RefusedFile, Store, truncate_ms};
use crate::watch::Watcher;
use crate::web_server::ServerView;
use chrono::{DateTime, Utc};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::clock::Clock;
use webcoop_protocol::delta::summarize;
use webcoop_protocol::validator::Sha256Digest;

/// Files read per chunk: bounds memory (contents are held until the chunk commits).
const CHUNK_FILES: usize = 512;
const CHUNK_BYTES: u64 = 64 << 20;

/// One reconciliation under way: files found so far that need reading, and what was decided.
struct Pass {
    now: DateTime<Utc>,
    live: bool,
    /// Read and judge every file found, even unchanged ones (the rules that govern them
    /// changed: a directory's permissions, a configuration).
    force: bool,
    chunk: Vec<String>,
    chunk_bytes: u64,
    /// Refused files found again (the others are gone).
    refused_seen: HashSet<String>,
    /// What the web server refused, for the console.
    excluded: Exclusions,
    /// The chunk read last, while the web server judges it.
    judging: Option<Chunk>,
    result: Reconciled,
}

/// Files read and digested, and the web server's verdicts on them once they come.
#[derive(Default)]
struct Chunk {
    reads: Vec<Read>,
    verdicts: Option<crate::judge::Pending>,
}

/// A file read and digested by a worker thread, with its version compressed for keeping.
struct Read {
    path: String,
    content: Result<scan::Content, ReadError>,
    version: Option<NewVersion>,
}

pub(crate) use crate::store::ChangeObserver;

/// The agent for one docroot.
pub struct Agent {
    /// What both modes share: state, inventory, publisher, snapshots.
    core: SiteCore,
    watcher: Option<Watcher>,
    watch_error: Option<String>,
    judge: Judge,
    /// The web server as last looked at.
    view: ServerView,
    /// Files the web server refused, as last judged.
    refused: HashMap<Box<str>, RefusedFile>,
    /// Listed files never judged (a state from before the judge): judged at the next look.
    unjudged: HashSet<Box<str>>,
    /// Files wait to be judged again before the rest (the rules that govern them changed).
    forced_pending: bool,
    /// Files judged again and found as they were, their record waiting to be saved.
    held: held_marks::HeldMarks,
    /// Files the web server could not be asked about, to look at again when it answers.
    waiting: BTreeSet<String>,
    /// Files with more than one hard link, found by the scans.
    linked: BTreeSet<String>,
}

impl Agent {
    /// Opens the state, loads the inventory and checks the output directory.
    pub fn open(config: Config, clock: Arc<dyn Clock>) -> Result<Agent, AgentError> {
        if let Some(mode) = webcoop_daemon::private::open_to_others(&config.state) {
            tracing::warn!(
                "state directory {} can be read by other users (mode {mode:o}): it holds the hub's subscriber secrets and kept copies of files; chmod 700 it",
                config.state.display()
            );
        }
        let identity = format!("{} at {}", config.docroot.display(), config.base_url);
        let store = open_state(&config, &identity)?;
        let baseline_done = store.meta("baseline")?.as_deref() == Some("done");
        let inventory = store.load_inventory()?;
        let refused = store.load_refused()?;
        let unjudged: HashSet<Box<str>> = store
            .unjudged()?
            .into_iter()
            .map(String::into_boxed_str)
            .collect();
        if !unjudged.is_empty() {
            tracing::warn!(
                "{} listed files wait for the web server's word (never judged, or their rules changed before the agent last stopped): each is asked now",
                unjudged.len()
            );
        }
        let (view, rules) = look_at_server(&config, true)?;
        let Some(view) = view else {
            return Err(AgentError::Origin(
                "the web server could not be looked at".into(),
            ));
        };
        log_view(&view);
        let judge = Judge::new(
            &config.base_url,
            &config.judge,
            &view.server_url,
            view.judge.source,
        )?;
        let filter = filter_of(&config, rules)?;
        let publisher = publisher_for(&config)?;
        if let (Some(name), Some(indexnow)) = (indexnow_key_file(&config), &config.indexnow) {
            // IndexNow checks the key at the site: the file holds the key and nothing else.
            let path = config.out.join(&name);
            crate::publish::atomic::write_atomic(&path, indexnow.key.as_bytes())
                .map_err(|source| AgentError::Publish(PublishError::Write { path, source }))?;
        }
        let popularity = if config.access_logs.is_empty() {
            None
        } else {
            Some(crate::popularity::Popularity::open(
                config.popularity,
                &config.access_logs,
                &store,
            )?)
        };
        let bodies = crate::snapshot::Bodies::Docroot(config.docroot.clone());
        let mut core = SiteCore::new(Opened {
            config,
            clock,
            store,
            inventory,
            publisher,
            filter,
            baseline_done,
            bodies,
        });
        core.popularity = popularity;
        Ok(Agent {
            core,
            watcher: None,
            watch_error: None,
            judge,
            view,
            refused,
            unjudged,
            forced_pending: false,
            held: held_marks::HeldMarks::default(),
            waiting: BTreeSet::new(),
            linked: BTreeSet::new(),
        })
    }

    /// Starts watching the docroot now, so nothing changed during a following start-up scan is
    /// missed: events queue until [`Agent::watch`] takes them.
    pub fn start_watching(&mut self) {
        match Watcher::start(&self.core.config.docroot) {
            Ok(w) => self.watcher = Some(w),
            Err(e) => self.watch_error = Some(e.to_string()),
        }
    }

    /// Notes publications and exclusions in `activity`, for the console.
    pub fn record_activity(&mut self, activity: Arc<Activity>) {
        activity.server_config(self.view.unread_note());
        self.core.activity = Some(activity);
    }

    /// Notes a publication for the console.
    fn note_publication(
        &self,
        what: &'static str,
        took: Duration,
        result: Result<Option<u64>, String>,
    ) {
        if let Some(a) = &self.core.activity {
            let (listing_bytes, error) = match result {
                Ok(b) => (b, None),
                Err(e) => (None, Some(e)),
            };
            a.published(Publication {
                at: crate::store::to_ms(self.core.clock.now()),
                what,
                ms: took.as_secs_f64() * 1000.0,
                listing_bytes,
                head: self.core.store.head_seq().ok(),
                error,
            });
        }
    }

    /// Calls `observer` with every batch of changes once it is saved.
    pub fn observe(&mut self, observer: ChangeObserver) {
        self.core.observer = Some(observer);
    }

    /// The inventory.
    pub fn inventory(&self) -> &Inventory {
        &self.core.inventory
    }

    /// The state database.
    pub fn store(&self) -> &Store {
        &self.core.store
    }

    fn begin(&self, live: bool) -> Pass {
        Pass {
            now: truncate_ms(self.core.clock.now()),
            live,
            force: false,
            chunk: Vec::new(),
            chunk_bytes: 0,
            refused_seen: HashSet::new(),
            excluded: Exclusions::default(),
            judging: None,
            result: Reconciled {
                baseline: !self.core.baseline_done,
                ..Reconciled::default()
            },
        }
    }

    /// Compares the whole docroot with the inventory. `live` says the changes happen now
    /// (a watcher noticed); otherwise (at start) a plausible file time is a better guess of
    /// when a change happened than the time it was noticed.
    pub fn full_scan(&mut self, live: bool) -> Result<Reconciled, AgentError> {
        self.scan_all(live, false)
    }

    /// A full scan that reads and judges every file again, changed or not.
    pub(crate) fn full_scan_judging_all(&mut self, live: bool) -> Result<Reconciled, AgentError> {
        self.scan_all(live, true)
    }

    fn scan_all(&mut self, live: bool, force: bool) -> Result<Reconciled, AgentError> {
        let mut pass = self.begin(live);
        pass.force = force;
        self.core.inventory.clear_seen();
        let mut walker = scan::Walker::new(&self.core.config.docroot, "", self.core.filter.clone());
        for found in walker.by_ref() {
            self.found(found, &mut pass)?;
        }
        pass.result.excluded += walker.excluded();
        let gone: Vec<String> = self
            .core
            .inventory
            .iter()
            .filter(|(_, e)| !e.seen)
            .map(|(p, _)| p.to_string())
            .collect();
        let gone_refused: Vec<String> = self
            .refused
            .keys()
            .filter(|p| !pass.refused_seen.contains(p.as_ref()))
            .map(|p| p.to_string())
            .collect();
        let mut exclusions = walker.exclusions();
        let result = self.finish(pass, gone, gone_refused, Some(&mut exclusions))?;
        if let Some(a) = &self.core.activity {
            a.scanned(exclusions);
        }
        if !self.core.baseline_done {
            self.core.store.set_meta("baseline", "done")?;
            self.core.baseline_done = true;
        }
        Ok(result)
    }

    /// Looks again at the given docroot-relative paths (files or directories, present or gone).
    pub fn reconcile_paths(&mut self, paths: &BTreeSet<String>) -> Result<Reconciled, AgentError> {
        self.look_again(paths, false)
    }

    /// Looks at every file under a directory named by an event, each at most once a batch
    /// (`looked`), judged again whatever its stat says: the directory's permissions may be
    /// what changed.
    fn look_under(
        &mut self,
        rel: &str,
        pass: &mut Pass,
        looked: &mut BTreeSet<String>,
    ) -> Result<(), AgentError> {
        let root = &self.core.config.docroot;
        let visible = rel.split('/').all(|s| !s.starts_with('.'))
            && self.core.filter.check_dir(rel).is_ok()
            && inside(root, &root.join(rel));
        if !visible {
            return Ok(());
        }
        // Its permissions may be what changed: nothing under it is taken as is.
        let was = std::mem::replace(&mut pass.force, true);
        let mut walker =
            scan::Walker::new(&self.core.config.docroot, rel, self.core.filter.clone());
        for found in walker.by_ref() {
            if let scan::Found::File(p, _) = &found
                && !looked.insert(p.clone())
            {
                continue;
            }
            self.found(found, pass)?;
        }
        pass.force = was;
        pass.result.excluded += walker.excluded();
        if let Some(a) = &self.core.activity {
            a.scanned_some(walker.exclusions());
        }
        Ok(())
    }

    /// Looks again at `paths`; with `force`, reads and judges them even if unchanged. A
    /// directory named by an event (created, moved, its permissions changed) has every file
    /// under it judged again.
    pub(crate) fn look_again(
        &mut self,
        paths: &BTreeSet<String>,
        force: bool,
    ) -> Result<Reconciled, AgentError> {
        let names = self.view.access_file_names();
        let htaccess: Vec<&str> = paths
            .iter()
            .filter(|p| {
                let name = p.rsplit('/').next().unwrap_or(p);
                names.iter().any(|n| n == name)
            })
            .map(|p| p.rsplit_once('/').map_or("", |(dir, _)| dir))
            .collect();
        let robots_changed = paths
            .iter()
            .any(|p| p == "robots.txt" && !self.core.config.ignore_robots_txt);
        if robots_changed || !htaccess.is_empty() {
            // What is public may have changed anywhere; what an .htaccess governs is judged
            // again by the server too.
            for dir in &htaccess {
                self.judge_first_under(dir)?;
            }
            self.forced_pending |= !htaccess.is_empty();
            self.core.filter = filter_of(&self.core.config, self.view.rules(&self.core.config))?;
            return self.full_scan(true);
        }
        let mut pass = self.begin(true);
        pass.force = force;
        // Whatever the inventory has at or under these paths must be found again to stay.
        let mut in_scope: BTreeSet<String> = BTreeSet::new();
        let mut refused_in_scope: Vec<String> = Vec::new();
        for rel in paths {
            if self.core.inventory.get(rel).is_some() {
                in_scope.insert(rel.clone());
            }
            in_scope.extend(self.core.inventory.paths_under(rel).map(str::to_string));
            let prefix = format!("{rel}/");
            refused_in_scope.extend(
                self.refused
                    .keys()
                    .filter(|p| p.as_ref() == rel || p.starts_with(&prefix))
                    .map(|p| p.to_string()),
            );
        }
        for p in &in_scope {
            self.core.inventory.clear_seen_of(p);
        }
        // A new directory and files inside it can be in one batch: each file is looked at once.
        let mut looked: BTreeSet<String> = BTreeSet::new();
        for rel in paths {
            let full = self.core.config.docroot.join(rel);
            match std::fs::metadata(&full) {
                Ok(meta) if meta.is_dir() => self.look_under(rel, &mut pass, &mut looked)?,
                Ok(meta) if meta.is_file() => {
                    // Judged by what it resolves to: a file under a symlinked directory that
                    // leaves the docroot is outside, whatever its own name says.
                    let why = match self.core.filter.check_file(rel) {
                        Err(why) => Some(why.to_string()),
                        Ok(()) if !inside(&self.core.config.docroot, &full) => {
                            Some("symlink out of the docroot".to_string())
                        }
                        Ok(()) => None,
                    };
                    if let Some(why) = why {
                        pass.result.excluded += 1;
                        if let Some(a) = &self.core.activity {
                            let mut e = Exclusions::default();
                            e.add(rel, &why);
                            a.scanned_some(e);
                        }
                    } else if looked.insert(rel.clone()) {
                        self.found(scan::Found::File(rel.clone(), Stat::of(&meta)), &mut pass)?;
                    }
                }
                // Gone, or not a regular file: the sweep below removes what was there.
                _ => {}
            }
        }
        let gone: Vec<String> = in_scope
            .into_iter()
            .filter(|p| self.core.inventory.get(p).is_some_and(|e| !e.seen))
            .collect();
        let gone_refused: Vec<String> = refused_in_scope
            .into_iter()
            .filter(|p| !pass.refused_seen.contains(p))
            .collect();
        let mut exclusions = Exclusions::default();
        let result = self.finish(pass, gone, gone_refused, Some(&mut exclusions))?;
        if let Some(a) = &self.core.activity {
            a.scanned_some(exclusions);
        }
        Ok(result)
    }

    /// Takes one thing a walk found: an unchanged file (public or refused) is only marked as
    /// seen, anything else waits in the chunk to be read and judged.
    fn found(&mut self, found: scan::Found, pass: &mut Pass) -> Result<(), AgentError> {
        let (path, stat) = match found {
            scan::Found::File(p, s) => (p, s),
            scan::Found::Problem(p) => {
                pass.result.problems.push(p);
                return Ok(());
            }
        };
        let force = pass.force || self.unjudged.contains(path.as_str());
        // Written through another link, a file changes without an event in the docroot: the
        // watch loop watches such files themselves.
        if stat.links > 1 && !self.linked.contains(path.as_str()) {
            self.linked.insert(path.clone());
        }
        let same = |size: u64, mtime_ns: i64, ctime_ns: i64| {
            (size, mtime_ns, ctime_ns) == (stat.size, stat.mtime_ns, stat.ctime_ns)
        };
        if let Some(r) = self.refused.get(path.as_str()) {
            pass.refused_seen.insert(path.clone());
            if !force && same(r.size, r.mtime_ns, r.ctime_ns) {
                pass.result.excluded += 1;
                pass.excluded.add(&path, &r.reason);
                return Ok(());
            }
        }
        pass.result.files_seen += 1;
        if let Some(e) = self.core.inventory.mark_seen(&path)
            && !force
            && same(e.size, e.mtime_ns, e.ctime_ns)
        {
            return Ok(());
        }
        // A file modified too recently may still be being written: look again later.
        let settle = self.core.config.debounce;
        let file_time = std::time::UNIX_EPOCH + Duration::from_nanos(stat.mtime_ns.max(0) as u64);
        let settled = match std::time::SystemTime::now().duration_since(file_time) {
            Ok(age) => age >= settle,
            // Dated well ahead of this clock: another clock's date (an unpacked archive, a
            // skewed file server), not a write under way; waiting for it would wait forever.
            Err(ahead) => ahead.duration() > settle,
        };
        if pass.live && !settled {
            pass.result.unstable.push(path);
            return Ok(());
        }
        pass.chunk_bytes += stat.size;
        pass.chunk.push(path);
        if pass.chunk.len() >= CHUNK_FILES || pass.chunk_bytes >= CHUNK_BYTES {
            self.flush(pass)?;
        }
        Ok(())
    }

    /// Ends a pass: reads what is left, records `gone` as deletions and forgets the refusals
    /// of `gone_refused`; the web server's refusals go into `exclusions`.
    fn finish(
        &mut self,
        mut pass: Pass,
        gone: Vec<String>,
        gone_refused: Vec<String>,
        exclusions: Option<&mut Exclusions>,
    ) -> Result<Reconciled, AgentError> {
        self.flush(&mut pass)?;
        let asked = pass.result.judged;
        if let Some(last) = pass.judging.take() {
            self.settle(last, &mut pass, gone, gone_refused)?;
        } else {
            self.settle(Chunk::default(), &mut pass, gone, gone_refused)?;
        }
        self.waiting.extend(pass.result.deferred.iter().cloned());
        self.note_judging(asked, pass.result.unreachable.as_deref());
        if let Some(why) = pass.result.unreachable.as_ref().filter(|_| !pass.live) {
            tracing::error!(
                "{why}: {} files wait to be judged, and nothing new is published until the server answers (what was judged stays)",
                pass.result.deferred.len()
            );
        }
        if let Some(e) = exclusions {
            e.merge(std::mem::take(&mut pass.excluded));
        }
        Ok(pass.result)
    }

    /// Reads and digests the chunk in parallel (compressing text versions on the way) and
    /// starts asking the web server about each file read; meanwhile settles the chunk before
    /// it, whose verdicts have come in while this one was read.
    fn flush(&mut self, pass: &mut Pass) -> Result<(), AgentError> {
        let root = &self.core.config.docroot;
        let reads: Vec<Read> = std::mem::take(&mut pass.chunk)
            .into_par_iter()
            .map(|path| {
                let content = scan::read(root, &path);
                let version = match &content {
                    Ok(c) if content_type::is_text(content_type::of_path(&path)) => c
                        .bytes
                        .as_deref()
                        .map(|b| NewVersion::of(&path, c.sha256, b)),
                    _ => None,
                };
                Read {
                    path,
                    content,
                    version,
                }
            })
            .collect();
        pass.chunk_bytes = 0;
        // Nothing read goes further without the web server's word on it.
        let asks: Vec<Ask> = reads
            .iter()
            .filter_map(|r| {
                r.content.as_ref().ok().map(|c| Ask {
                    path: r.path.clone(),
                    sha256: c.sha256,
                    size: c.stat.size,
                })
            })
            .collect();
        pass.result.judged += asks.len();
        let verdicts = (!asks.is_empty()).then(|| self.judge.start(asks));
        if let Some(before) = pass.judging.replace(Chunk { reads, verdicts }) {
            self.settle(before, pass, Vec::new(), Vec::new())?;
        }
        Ok(())
    }

    /// Decides what each file of a judged chunk means, and commits it together with `gone`
    /// (deletions) and `gone_refused` (refusals of files no longer there).
    fn settle(
        &mut self,
        chunk: Chunk,
        pass: &mut Pass,
        gone: Vec<String>,
        gone_refused: Vec<String>,
    ) -> Result<(), AgentError> {
        let mut verdicts = match chunk.verdicts {
            Some(p) => self.judge.finish(p),
            None => Vec::new(),
        }
        .into_iter();
        let mut batch = Batch::default();
        for path in gone {
            self.delete(&path, pass.now, &mut batch);
        }
        batch.unrefused.extend(gone_refused);
        for read in chunk.reads {
            match read.content {
                Ok(content) => {
                    let verdict = verdicts
                        .next()
                        .unwrap_or_else(|| Verdict::Unknown("no verdict".into()));
                    match verdict {
                        Verdict::Public => {
                            if self.refused.contains_key(read.path.as_str()) {
                                tracing::info!("{}: the web server serves it now", read.path);
                                batch.unrefused.push(read.path.clone());
                            }
                            self.classify(&read.path, content, read.version, pass, &mut batch)?
                        }
                        Verdict::Refused(why) => self.refuse(
                            &read.path,
                            content.stat,
                            content.sha256,
                            why,
                            pass,
                            &mut batch,
                        ),
                        Verdict::Unknown(why) => {
                            pass.result.unreachable.get_or_insert(why);
                            pass.result.deferred.push(read.path);
                        }
                    }
                }
                Err(ReadError::Unstable) => pass.result.unstable.push(read.path),
                // Vanished between the walk and the read: the next event or scan settles it.
                Err(ReadError::Gone) => {}
                // Swapped for a link out or a special file after it was looked at: the retry
                // finds it excluded and removes it.
                Err(ReadError::NotPublic(why)) => {
                    pass.result.problems.push(why);
                    pass.result.unstable.push(read.path);
                }
                Err(ReadError::Io(e)) => pass.result.problems.push(format!("{}: {e}", read.path)),
            }
        }
        let changes = self.save(batch, pass.now)?;
        pass.result.changes.extend(changes);
        Ok(())
    }

    /// Records that `path` left the listing (gone, or no longer public).
    fn delete(&self, path: &str, now: DateTime<Utc>, batch: &mut Batch) {
        if let Some(old) = self.core.inventory.get(path) {
            batch.delete(path, old.sha256, now);
        }
    }

    /// The web server refused a file read now: it leaves the listing (its kept versions with
    /// it), and the refusal is kept with what was judged, so it is not asked again until the
    /// file changes or its turn comes.
    fn refuse(
        &mut self,
        path: &str,
        stat: Stat,
        sha256: Sha256Digest,
        why: Refusal,
        pass: &mut Pass,
        batch: &mut Batch,
    ) {
        let reason = why.reason();
        let known = self.refused.get(path).is_some_and(|r| r.reason == reason);
        if !known {
            tracing::info!("not published, {reason}: {path}");
        }
        self.delete(path, pass.now, batch);
        self.unjudged.remove(path);
        batch.refusals.push((
            path.to_string(),
            RefusedFile {
                size: stat.size,
                mtime_ns: stat.mtime_ns,
                ctime_ns: stat.ctime_ns,
                sha256,
                reason: reason.clone(),
            },
        ));
        pass.refused_seen.insert(path.to_string());
        pass.result.refused += 1;
        pass.result.excluded += 1;
        pass.excluded.add(path, &reason);
    }

    /// Commits a batch and brings the memory in line with the state once it is safe; returns
    /// the changes logged, with their sequence numbers, after telling the observer.
    fn save(&mut self, batch: Batch, now: DateTime<Utc>) -> Result<Vec<LoggedChange>, AgentError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let saved = self.core.commit(batch, now)?;
        for (path, _, _) in &saved.upserts {
            self.unjudged.remove(path.as_str());
        }
        for path in &saved.unrefused {
            self.refused.remove(path.as_str());
        }
        for (path, r) in saved.refusals {
            self.refused.insert(path.into_boxed_str(), r);
        }
        Ok(saved.changes)
    }

    /// Decides what a freshly read file means: new, changed, touched or unchanged.
    fn classify(
        &self,
        path: &str,
        content: scan::Content,
        version: Option<NewVersion>,
        pass: &mut Pass,
        batch: &mut Batch,
    ) -> Result<(), AgentError> {
        let now = pass.now;
        let file_time = truncate_ms(DateTime::from_timestamp_nanos(content.stat.mtime_ns));
        let previous = self.core.inventory.get(path);
        if let Some(prev) = previous
            && prev.fast == content.fast
            && prev.size == content.stat.size
        {
            pass.result.touched += 1;
            let entry = FileEntry {
                mtime_ns: content.stat.mtime_ns,
                ctime_ns: content.stat.ctime_ns,
                ..prev.clone()
            };
            batch.upserts.push((path.to_string(), entry, None));
            return Ok(());
        }
        // When the change happened: now if it is being watched; at start, the file's time if it
        // is plausible (after the last known change, not in the future).
        let modified = match previous {
            _ if pass.live => now,
            Some(prev) if file_time > prev.modified && file_time <= now => file_time,
            None if file_time <= now => file_time,
            _ => now,
        };
        let changed = match (previous, &content.bytes, &version) {
            (Some(prev), Some(new), Some(_)) => self
                .core
                .store
                .version(path, &prev.sha256)?
                .map(|old| summarize(&old, new).changed_fraction),
            _ => None,
        };
        let entry = FileEntry {
            size: content.stat.size,
            mtime_ns: content.stat.mtime_ns,
            ctime_ns: content.stat.ctime_ns,
            sha256: content.sha256,
            fast: content.fast,
            modified,
            seen: true,
        };
        let announce = self.core.baseline_done;
        batch
            .upserts
            .push((path.to_string(), entry, announce.then_some(modified)));
        if announce {
            batch.changes.push(LoggedChange {
                seq: 0,
                kind: if previous.is_some() {
                    ChangeKind::Modified
                } else {
                    ChangeKind::Created
                },
                path: path.to_string(),
                time: now,
                sha256: Some(content.sha256),
                prev_sha256: previous.map(|p| p.sha256),
                size: Some(content.stat.size),
                content_type: Some(content_type::of_path(path).to_string()),
                changed,
            });
        }
        batch.versions.extend(version);
        Ok(())
    }

    /// Publishes the documents for the current state.
    pub fn publish(&mut self) -> Result<PublishReport, AgentError> {
        self.count_reads()?;
        let now = truncate_ms(self.core.clock.now());
        let started = Instant::now();
        let result = self
            .core
            .publisher
            .publish(&self.core.inventory, &self.core.store, now);
        let noted = match &result {
            Ok(r) => Ok(Some(r.listing_bytes)),
            Err(e) => Err(e.to_string()),
        };
        self.note_publication("all", started.elapsed(), noted);
        Ok(result?)
    }
}

fn inside(root: &Path, path: &Path) -> bool {
    path.canonicalize().is_ok_and(|t| t.starts_with(root))
}

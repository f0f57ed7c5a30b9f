//! The agent: keeps the inventory exact and the published documents current.
//!
//! Every look at the docroot, whether a full scan at start, a periodic rescan or the paths a
//! watcher event names, goes through one reconciliation: compare what is on disk with the
//! inventory, read only files whose size or modification time moved, decide by content whether
//! they changed, and commit the result in bounded chunks.

use crate::access::{AccessRules, ServerConfigError};
use crate::config::Config;
use crate::console::activity::{Activity, Exclusions, Publication};
use crate::content_type;
use crate::debounce::EventQueue;
use crate::inventory::{FileEntry, Inventory};
use crate::privacy::{FilterRules, PatternError, PublicFilter, RobotsTxt};
use crate::publish::{PublishError, PublishReport, Publisher};
use crate::scan::{self, ReadError, Stat};
use crate::store::{Batch, LoggedChange, NewVersion, Retention, Store, StoreError, truncate_ms};
use crate::watch::{Signal, Watcher};
use chrono::{DateTime, Utc};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::clock::Clock;
use webcoop_protocol::delta::summarize;

/// Why the agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The state database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Publishing failed.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// A bad include/exclude pattern.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// A web server configuration the agent cannot safely understand.
    #[error(transparent)]
    ServerConfig(#[from] ServerConfigError),
    /// The state directory belongs to another site.
    #[error(
        "state directory {state} belongs to {other}, not {this}; give this site its own --state"
    )]
    StateOfAnotherSite {
        /// The state directory.
        state: String,
        /// The docroot and base URL recorded there.
        other: String,
        /// This run's.
        this: String,
    },
}

/// What one reconciliation did.
#[derive(Debug, Default)]
pub struct Reconciled {
    /// Public files seen (full scans) or looked at (partial ones).
    pub files_seen: usize,
    /// Files and directories left out by the privacy rules.
    pub excluded: usize,
    /// Changes logged, with sequence numbers.
    pub changes: Vec<LoggedChange>,
    /// Files whose timestamp moved but whose content did not.
    pub touched: usize,
    /// Files still being written, to look at again later.
    pub unstable: Vec<String>,
    /// Problems worth a log line.
    pub problems: Vec<String>,
    /// Whether this run only recorded the baseline (first run ever: nothing is announced).
    pub baseline: bool,
}

/// Files read per chunk: bounds memory (contents are held until the chunk commits).
const CHUNK_FILES: usize = 512;
const CHUNK_BYTES: u64 = 64 << 20;

/// One reconciliation under way: files found so far that need reading, and what was decided.
struct Pass {
    now: DateTime<Utc>,
    live: bool,
    chunk: Vec<String>,
    chunk_bytes: u64,
    result: Reconciled,
}

/// A file read and digested by a worker thread, with its version compressed for keeping.
struct Read {
    path: String,
    content: Result<scan::Content, ReadError>,
    version: Option<NewVersion>,
}

/// Told of every batch of changes once it is saved (the service's hub and IndexNow listen).
pub type ChangeObserver = Box<dyn FnMut(&[LoggedChange], &Inventory) + Send>;

/// The agent for one docroot.
pub struct Agent {
    observer: Option<ChangeObserver>,
    activity: Option<Arc<Activity>>,
    watcher: Option<Watcher>,
    watch_error: Option<String>,
    config: Config,
    clock: Arc<dyn Clock>,
    filter: Arc<PublicFilter>,
    inventory: Inventory,
    store: Store,
    publisher: Publisher,
    retention: Retention,
    baseline_done: bool,
}

fn own_dir_within(docroot: &Path, out: &Path) -> Option<String> {
    out.strip_prefix(docroot)
        .ok()
        .map(|rel| rel.to_string_lossy().trim_matches('/').to_string())
}

/// The site's robots.txt as the listing must obey it: a file that exists but cannot be read
/// is not the same as no file (the listing then fails closed). Read as any public file is
/// (a FIFO or a link out of the docroot is not read), and no further than crawlers read.
fn robots_txt_of(config: &Config) -> Result<Option<Vec<u8>>, String> {
    if config.ignore_robots_txt {
        return Ok(None);
    }
    let (file, _) = match scan::open_confined(&config.docroot, "robots.txt") {
        Ok(f) => f,
        Err(ReadError::Gone) => return Ok(None),
        Err(ReadError::NotPublic(why)) => return Err(why),
        Err(ReadError::Io(e)) => return Err(e.to_string()),
        Err(ReadError::Unstable) => return Err("changing".into()),
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, 500 << 10), &mut bytes)
        .map_err(|e| e.to_string())?;
    Ok(Some(bytes))
}

/// The IndexNow key file the agent publishes, if configured.
fn indexnow_key_file(config: &Config) -> Option<String> {
    config.indexnow.as_ref().map(|i| format!("{}.txt", i.key))
}

fn filter_of(config: &Config) -> Result<Arc<PublicFilter>, AgentError> {
    let mut access = AccessRules::none();
    for file in &config.server_config {
        access.add_server_config(file, &config.docroot, config.base_url.path())?;
    }
    access.add_htaccess_files(&config.docroot);
    let robots = robots_txt_of(config);
    let own_dir = own_dir_within(&config.docroot, &config.out);
    let own_files: Vec<String> = indexnow_key_file(config).into_iter().collect();
    let filter = PublicFilter::from_rules(FilterRules {
        include: &config.include,
        exclude: &config.exclude,
        publish_ext: &config.publish_ext,
        robots_txt: Some(match &robots {
            Ok(Some(bytes)) => RobotsTxt::Bytes(bytes),
            Ok(None) => RobotsTxt::Absent,
            Err(why) => RobotsTxt::Unreadable(why.clone()),
        }),
        own_dir: own_dir.as_deref(),
        own_files: &own_files,
        access,
    })?;
    for p in filter.access().protected() {
        tracing::info!("not published, the web server protects it: {p}");
    }
    if let Some(why) = filter.robots_unreadable() {
        tracing::error!(
            "{}/robots.txt cannot be read or parsed ({why}): nothing is published until it can be",
            config.docroot.display()
        );
    }
    Ok(Arc::new(filter))
}

impl Agent {
    /// Opens the state, loads the inventory and checks the output directory.
    pub fn open(config: Config, clock: Arc<dyn Clock>) -> Result<Agent, AgentError> {
        let store = Store::open(&config.state)?;
        let identity = format!("{} at {}", config.docroot.display(), config.base_url);
        match store.meta("site")? {
            Some(recorded) if recorded != identity => {
                return Err(AgentError::StateOfAnotherSite {
                    state: config.state.display().to_string(),
                    other: recorded,
                    this: identity,
                });
            }
            Some(_) => {}
            None => store.set_meta("site", &identity)?,
        }
        let baseline_done = store.meta("baseline")?.as_deref() == Some("done");
        let inventory = store.load_inventory()?;
        let filter = filter_of(&config)?;
        let links = config
            .service
            .as_ref()
            .map(|s| crate::publish::ServiceLinks::at(&s.public_url));
        let mut publisher = Publisher::new(
            &config.out,
            &config.base_url,
            config.feed_entries,
            config.sitemap_part_urls,
            links,
        );
        let stale = publisher.prepare(config.replace_existing)?;
        if let (Some(name), Some(indexnow)) = (indexnow_key_file(&config), &config.indexnow) {
            // IndexNow checks the key at the site: the file holds the key and nothing else.
            let path = config.out.join(&name);
            crate::publish::atomic::write_atomic(&path, indexnow.key.as_bytes())
                .map_err(|source| AgentError::Publish(PublishError::Write { path, source }))?;
        }
        if stale > 0 {
            tracing::info!(stale, "removed temporary files left by an interrupted run");
        }
        let retention = Retention {
            versions_per_file: config.versions,
            versions_budget: config.versions_budget,
            changes: config.retain_changes,
        };
        Ok(Agent {
            observer: None,
            activity: None,
            watcher: None,
            watch_error: None,
            config,
            clock,
            filter,
            inventory,
            store,
            publisher,
            retention,
            baseline_done,
        })
    }

    /// Starts watching the docroot now, so nothing changed during a following start-up scan is
    /// missed: events queue until [`Agent::watch`] takes them.
    pub fn start_watching(&mut self) {
        match Watcher::start(&self.config.docroot) {
            Ok(w) => self.watcher = Some(w),
            Err(e) => self.watch_error = Some(e.to_string()),
        }
    }

    /// Notes publications and exclusions in `activity`, for the console.
    pub fn record_activity(&mut self, activity: Arc<Activity>) {
        self.activity = Some(activity);
    }

    /// Notes a publication for the console.
    fn note_publication(
        &self,
        what: &'static str,
        took: Duration,
        result: Result<Option<u64>, String>,
    ) {
        if let Some(a) = &self.activity {
            let (listing_bytes, error) = match result {
                Ok(b) => (b, None),
                Err(e) => (None, Some(e)),
            };
            a.published(Publication {
                at: crate::store::to_ms(self.clock.now()),
                what,
                ms: took.as_secs_f64() * 1000.0,
                listing_bytes,
                head: self.store.head_seq().ok(),
                error,
            });
        }
    }

    /// Calls `observer` with every batch of changes once it is saved.
    pub fn observe(&mut self, observer: ChangeObserver) {
        self.observer = Some(observer);
    }

    /// The inventory.
    pub fn inventory(&self) -> &Inventory {
        &self.inventory
    }

    /// The state database.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn begin(&self, live: bool) -> Pass {
        Pass {
            now: truncate_ms(self.clock.now()),
            live,
            chunk: Vec::new(),
            chunk_bytes: 0,
            result: Reconciled {
                baseline: !self.baseline_done,
                ..Reconciled::default()
            },
        }
    }

    /// Compares the whole docroot with the inventory. `live` says the changes happen now
    /// (a watcher noticed); otherwise (at start) a plausible file time is a better guess of
    /// when a change happened than the time it was noticed.
    pub fn full_scan(&mut self, live: bool) -> Result<Reconciled, AgentError> {
        let mut pass = self.begin(live);
        self.inventory.clear_seen();
        let mut walker = scan::Walker::new(&self.config.docroot, "", self.filter.clone());
        for found in walker.by_ref() {
            self.found(found, &mut pass)?;
        }
        pass.result.excluded = walker.excluded();
        if let Some(a) = &self.activity {
            a.scanned(walker.exclusions());
        }
        let gone: Vec<String> = self
            .inventory
            .iter()
            .filter(|(_, e)| !e.seen)
            .map(|(p, _)| p.to_string())
            .collect();
        let result = self.finish(pass, gone)?;
        if !self.baseline_done {
            self.store.set_meta("baseline", "done")?;
            self.baseline_done = true;
        }
        Ok(result)
    }

    /// Looks again at the given docroot-relative paths (files or directories, present or gone).
    pub fn reconcile_paths(&mut self, paths: &BTreeSet<String>) -> Result<Reconciled, AgentError> {
        let rules_changed = paths.iter().any(|p| {
            (p == "robots.txt" && !self.config.ignore_robots_txt)
                || p == ".htaccess"
                || p.ends_with("/.htaccess")
        });
        if rules_changed {
            // What is public may have changed anywhere.
            self.filter = filter_of(&self.config)?;
            return self.full_scan(true);
        }
        let mut pass = self.begin(true);
        // Whatever the inventory has at or under these paths must be found again to stay.
        let mut in_scope: BTreeSet<String> = BTreeSet::new();
        for rel in paths {
            if self.inventory.get(rel).is_some() {
                in_scope.insert(rel.clone());
            }
            in_scope.extend(self.inventory.paths_under(rel).map(str::to_string));
        }
        for p in &in_scope {
            self.inventory.clear_seen_of(p);
        }
        // A new directory and files inside it can be in one batch: each file is looked at once.
        let mut looked: BTreeSet<String> = BTreeSet::new();
        for rel in paths {
            let full = self.config.docroot.join(rel);
            match std::fs::metadata(&full) {
                Ok(meta) if meta.is_dir() => {
                    let visible = rel.split('/').all(|s| !s.starts_with('.'))
                        && self.filter.check_dir(rel).is_ok()
                        && inside(&self.config.docroot, &full);
                    if !visible {
                        continue;
                    }
                    let mut walker =
                        scan::Walker::new(&self.config.docroot, rel, self.filter.clone());
                    for found in walker.by_ref() {
                        if let scan::Found::File(p, _) = &found
                            && !looked.insert(p.clone())
                        {
                            continue;
                        }
                        self.found(found, &mut pass)?;
                    }
                    pass.result.excluded += walker.excluded();
                    if let Some(a) = &self.activity {
                        a.scanned_some(walker.exclusions());
                    }
                }
                Ok(meta) if meta.is_file() => {
                    // Judged by what it resolves to: a file under a symlinked directory that
                    // leaves the docroot is outside, whatever its own name says.
                    let why = match self.filter.check_file(rel) {
                        Err(why) => Some(why.to_string()),
                        Ok(()) if !inside(&self.config.docroot, &full) => {
                            Some("symlink out of the docroot".to_string())
                        }
                        Ok(()) => None,
                    };
                    if let Some(why) = why {
                        pass.result.excluded += 1;
                        if let Some(a) = &self.activity {
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
            .filter(|p| self.inventory.get(p).is_some_and(|e| !e.seen))
            .collect();
        self.finish(pass, gone)
    }

    /// Takes one thing a walk found: an unchanged file is only marked as seen, anything else
    /// waits in the chunk to be read.
    fn found(&mut self, found: scan::Found, pass: &mut Pass) -> Result<(), AgentError> {
        let (path, stat) = match found {
            scan::Found::File(p, s) => (p, s),
            scan::Found::Problem(p) => {
                pass.result.problems.push(p);
                return Ok(());
            }
        };
        pass.result.files_seen += 1;
        if let Some(e) = self.inventory.mark_seen(&path)
            && e.size == stat.size
            && e.mtime_ns == stat.mtime_ns
        {
            return Ok(());
        }
        // A file modified too recently may still be being written: look again later.
        let settle = self.config.debounce;
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
            self.flush(pass, Vec::new())?;
        }
        Ok(())
    }

    /// Ends a pass: reads what is left and records `gone` as deletions.
    fn finish(&mut self, mut pass: Pass, gone: Vec<String>) -> Result<Reconciled, AgentError> {
        self.flush(&mut pass, gone)?;
        Ok(pass.result)
    }

    /// Reads and digests the chunk in parallel (compressing text versions on the way), decides
    /// what each file means, and commits it together with `gone`.
    fn flush(&mut self, pass: &mut Pass, gone: Vec<String>) -> Result<(), AgentError> {
        let root = &self.config.docroot;
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
        let mut batch = Batch::default();
        for path in gone {
            if let Some(old) = self.inventory.get(&path) {
                batch.changes.push(LoggedChange {
                    seq: 0,
                    kind: ChangeKind::Deleted,
                    path: path.clone(),
                    time: pass.now,
                    sha256: None,
                    prev_sha256: Some(old.sha256),
                    size: None,
                    content_type: None,
                    changed: None,
                });
                batch.deletions.push(path);
            }
        }
        for read in reads {
            match read.content {
                Ok(content) => {
                    self.classify(&read.path, content, read.version, pass, &mut batch)?
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
        if batch.is_empty() {
            return Ok(());
        }
        let saved = self.store.commit(batch, pass.now, &self.retention)?;
        // The inventory follows the state only once the state is safe.
        for path in &saved.deletions {
            self.inventory.remove(path);
        }
        for (path, entry, _) in saved.upserts {
            self.inventory.insert(&path, entry);
        }
        self.publisher.note_changes(&saved.changes);
        if let Some(observer) = self.observer.as_mut()
            && !saved.changes.is_empty()
        {
            observer(&saved.changes, &self.inventory);
        }
        pass.result.changes.extend(saved.changes);
        Ok(())
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
        let previous = self.inventory.get(path);
        if let Some(prev) = previous
            && prev.fast == content.fast
            && prev.size == content.stat.size
        {
            pass.result.touched += 1;
            let entry = FileEntry {
                mtime_ns: content.stat.mtime_ns,
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
                .store
                .version(path, &prev.sha256)?
                .map(|old| summarize(&old, new).changed_fraction),
            _ => None,
        };
        let entry = FileEntry {
            size: content.stat.size,
            mtime_ns: content.stat.mtime_ns,
            sha256: content.sha256,
            fast: content.fast,
            modified,
            seen: true,
        };
        let announce = self.baseline_done;
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
        let now = truncate_ms(self.clock.now());
        let started = Instant::now();
        let result = self.publisher.publish(&self.inventory, &self.store, now);
        let noted = match &result {
            Ok(r) => Ok(Some(r.listing_bytes)),
            Err(e) => Err(e.to_string()),
        };
        self.note_publication("all", started.elapsed(), noted);
        Ok(result?)
    }

    /// Watches the docroot and publishes within about a second of every change, until `stop`.
    ///
    /// robots.rdf and the changes feed are published as soon as a batch is saved; the sitemaps,
    /// which standard consumers poll rarely, follow once no event is waiting (at most a second
    /// later), so their gzip work never delays the next change.
    pub fn watch(&mut self, stop: &AtomicBool) -> Result<(), AgentError> {
        // Without a watcher started before the last scan, changes since that scan are unseen.
        let catch_up = self.watcher.is_none() && self.watch_error.is_none();
        if catch_up {
            self.start_watching();
        }
        let watcher = self.watcher.take();
        if let Some(e) = self.watch_error.take() {
            tracing::error!("{e}; rescanning every 30 s instead of watching");
        }
        let rescan_every = if watcher.is_some() {
            self.config.rescan_interval
        } else {
            self.config.rescan_interval.min(Duration::from_secs(30))
        };
        let mut queue = EventQueue::new(self.config.debounce);
        let mut next_rescan = Instant::now() + rescan_every;
        let mut rescan_reason: Option<String> =
            catch_up.then(|| "catching up with changes made before watching began".to_string());
        if catch_up {
            next_rescan = Instant::now();
        }
        let mut backoff = Duration::ZERO;
        let mut sitemaps_stale: Option<Instant> = None;
        // Documents that could not be written (a full disk) are tried again on their own, not
        // only with the next change, which may not come for days: when, and the pause after.
        let mut republish: Option<(Instant, Duration)> = None;

        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            let mut deadline = queue
                .deadline()
                .unwrap_or(now + Duration::from_millis(500))
                .min(next_rescan)
                .min(republish.map_or(next_rescan, |(at, _)| at));
            if sitemaps_stale.is_some() {
                // Only take what is already waiting, then do the sitemaps.
                deadline = now;
            }
            let received = match &watcher {
                Some(w) => w
                    .signals()
                    .recv_timeout(deadline.saturating_duration_since(now))
                    .ok(),
                None => {
                    std::thread::sleep(deadline.saturating_duration_since(now));
                    None
                }
            };
            if let Some((at, signal)) = received {
                let root = &self.config.docroot;
                let rel = |paths: Vec<std::path::PathBuf>| {
                    paths
                        .iter()
                        .filter_map(|p| scan::relative(root, p))
                        .collect::<Vec<_>>()
                };
                match signal {
                    Signal::Paths(paths) => {
                        let paths = rel(paths);
                        if paths.iter().any(String::is_empty) {
                            rescan_reason
                                .get_or_insert_with(|| "the docroot itself changed".into());
                        }
                        queue.touched(paths, false, at);
                    }
                    Signal::Written(paths) => queue.touched(rel(paths), true, at),
                    Signal::Closed(paths) => queue.closed(rel(paths), at),
                    Signal::Rescan(reason) => {
                        rescan_reason = Some(reason);
                        queue.touched(Vec::new(), false, at);
                    }
                }
                // Keep taking events, unless the sitemaps have waited a second already.
                if sitemaps_stale.is_none_or(|since| since.elapsed() < Duration::from_secs(1)) {
                    continue;
                }
            }
            let now = Instant::now();
            if now >= next_rescan {
                rescan_reason.get_or_insert_with(|| "periodic rescan".into());
            }
            let rescan_due = rescan_reason.is_some() && (now >= next_rescan || queue.ready(now));
            let paths = if rescan_due {
                BTreeSet::new()
            } else {
                queue.take_ready(now)
            };
            if !rescan_due && paths.is_empty() {
                if let Some((at, pause)) = republish
                    && now >= at
                {
                    let at = truncate_ms(self.clock.now());
                    let done = self
                        .publisher
                        .publish_listing_and_feed(&self.inventory, &self.store, at)
                        .and_then(|_| self.publisher.publish_sitemaps(&self.inventory, at));
                    republish = match done {
                        Ok(_) => {
                            tracing::info!("published the documents that could not be written");
                            sitemaps_stale = None;
                            None
                        }
                        Err(e) => Some(publish_failed(&e, Some(pause))),
                    };
                } else if sitemaps_stale.take().is_some() {
                    let started = Instant::now();
                    let done = self
                        .publisher
                        .publish_sitemaps(&self.inventory, truncate_ms(self.clock.now()));
                    let noted = done.as_ref().map(|_| None).map_err(|e| e.to_string());
                    self.note_publication("sitemaps", started.elapsed(), noted);
                    if let Err(e) = done {
                        republish = Some(publish_failed(&e, republish.map(|(_, p)| p)));
                    }
                }
                continue;
            }
            let outcome = match rescan_reason.take().filter(|_| rescan_due) {
                Some(reason) => {
                    tracing::warn!("rescanning the whole docroot: {reason}");
                    next_rescan = now + rescan_every;
                    queue.clear();
                    self.full_scan(true)
                }
                None => self.reconcile_paths(&paths),
            };
            match outcome {
                Ok(result) => {
                    backoff = Duration::ZERO;
                    for p in &result.problems {
                        tracing::warn!("{p}");
                    }
                    queue.retry(result.unstable);
                    if !result.changes.is_empty() {
                        for c in &result.changes {
                            tracing::debug!(seq = c.seq, kind = %c.kind, path = %c.path, "change");
                        }
                        let started = Instant::now();
                        let done = self.publisher.publish_listing_and_feed(
                            &self.inventory,
                            &self.store,
                            truncate_ms(self.clock.now()),
                        );
                        let noted = match &done {
                            Ok(r) => Ok(Some(r.listing_bytes)),
                            Err(e) => Err(e.to_string()),
                        };
                        self.note_publication("listing and feed", started.elapsed(), noted);
                        match done {
                            Ok(report) => {
                                tracing::info!(
                                    changes = result.changes.len(),
                                    head = result.changes.last().map_or(0, |c| c.seq),
                                    listing_ms = report.listing_time.as_millis() as u64,
                                    spliced = report.spliced,
                                    "published"
                                );
                                // The listing is current; the sitemaps follow as usual.
                                republish = None;
                            }
                            Err(e) => {
                                republish = Some(publish_failed(&e, republish.map(|(_, p)| p)))
                            }
                        }
                        sitemaps_stale.get_or_insert_with(Instant::now);
                    }
                }
                Err(e) => {
                    // Nothing was committed: look at everything again after a pause.
                    backoff = (backoff * 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
                    tracing::error!("{e}; retrying in {} s", backoff.as_secs());
                    rescan_reason = Some("retrying after an error".into());
                    next_rescan = Instant::now() + backoff;
                }
            }
        }
        Ok(())
    }
}

/// Logs a failed publication; returns when to try again and the pause (doubling from 1 s to
/// a minute).
fn publish_failed(e: &PublishError, pause: Option<Duration>) -> (Instant, Duration) {
    let pause = pause.map_or(Duration::from_secs(1), |p| {
        (p * 2).min(Duration::from_secs(60))
    });
    tracing::error!("{e}; publishing again in {} s", pause.as_secs());
    (Instant::now() + pause, pause)
}

fn inside(root: &Path, path: &Path) -> bool {
    path.canonicalize().is_ok_and(|t| t.starts_with(root))
}

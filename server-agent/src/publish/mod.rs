//! Publishing: robots.rdf, the sitemaps and the static changes feed, each written atomically
//! into the output directory (the docroot by default) so the web server serves them as files.

pub(crate) mod atomic;
pub(crate) mod feed;
pub(crate) mod listing;
pub(crate) mod listing_parts;
pub(crate) mod part_files;
pub(crate) mod parting;
pub(crate) mod resource_dump;
pub(crate) mod resourcesync;
pub(crate) mod sitemaps;
pub(crate) mod snapshot;

use crate::inventory::Inventory;
use crate::store::{Store, StoreError};
use atomic::AtomicFile;
use chrono::{DateTime, Utc};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use url::Url;

/// File name of the listing.
pub const ROBOTS_RDF: &str = "robots.rdf";
/// File name of the sitemap (urlset or index).
pub const SITEMAP: &str = "sitemap.xml";
/// Sitemap parts are `sitemap-N.xml.gz`.
pub(crate) const SITEMAP_PART_PREFIX: &str = "sitemap-";
/// See [`SITEMAP_PART_PREFIX`].
pub(crate) const SITEMAP_PART_SUFFIX: &str = ".xml.gz";
/// The ResourceSync notification topic, under the service prefix.
pub(crate) const RESOURCESYNC_TOPIC: &str = "resourcesync-notifications";
/// Where the static changes feed goes, relative to the output directory.
pub(crate) const FEED_PATH: &str = ".well-known/webcoop/changes.atom";

/// Why publishing failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// Writing a document failed; the previous one is still in place.
    #[error("cannot write {path}: {source}{}", full_disk_hint(.source))]
    Write {
        /// The document.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Reading the change log failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A document of the same name exists and is not ours.
    #[error(
        "{0} already exists and was not written by webcoop-agent; move it away, publish elsewhere with --out, or replace it with --replace-existing"
    )]
    Foreign(PathBuf),
}

/// What a full disk means for a document that could not be written.
fn full_disk_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::StorageFull {
        " (disk full: the previous document stays published; it is brought up to date once there is space)"
    } else {
        ""
    }
}

/// How long each document took, and how big it is.
#[derive(Debug, Default, Clone, Copy)]
pub struct PublishReport {
    /// Bytes of robots.rdf.
    pub listing_bytes: u64,
    /// Whether robots.rdf was spliced from the previous one (rather than rendered in full).
    pub(crate) spliced: bool,
    /// What became of robots.rdf's parts, when it is in parts.
    pub(crate) parts: part_files::PartsReport,
    /// Time until robots.rdf was in place.
    pub(crate) listing_time: Duration,
    /// Total time.
    pub(crate) total_time: Duration,
    /// Sitemap parts (0: a single urlset) and how many were rewritten.
    pub(crate) sitemaps: sitemaps::SitemapReport,
}

/// Where the agent's own service answers, when it runs.
#[derive(Debug, Clone)]
pub(crate) struct ServiceLinks {
    /// The changes endpoint (`changes?since=`), also the WebSub topic.
    pub(crate) changes: Url,
    /// The WebSub hub.
    pub(crate) hub: Url,
    /// Prefix of delta links (`delta/`).
    pub(crate) delta: Url,
    /// The topic of ResourceSync Change Notifications, pushed by the same hub.
    pub(crate) resourcesync_topic: Url,
}

impl ServiceLinks {
    /// The endpoints under a service prefix such as `https://www.example.org/.well-known/webcoop/`.
    pub(crate) fn at(prefix: &Url) -> ServiceLinks {
        let join = |p: &str| prefix.join(p).unwrap_or_else(|_| prefix.clone());
        ServiceLinks {
            changes: join("changes"),
            hub: join("hub"),
            delta: join("delta/"),
            resourcesync_topic: join(RESOURCESYNC_TOPIC),
        }
    }
}

/// Publishes the documents of one site.
pub(crate) struct Publisher {
    out: PathBuf,
    base: Url,
    links: Option<ServiceLinks>,
    feed_entries: usize,
    listing: listing::ListingWriter,
    sitemaps: sitemaps::SitemapPublisher,
    /// The sequence number of the snapshot robots.rdf advertises, and the largest content it
    /// holds.
    snapshot: Option<(u64, Option<u64>)>,
    /// Whether the ResourceSync documents are published, and a Resource Dump with them.
    resourcesync: (bool, bool),
    /// The site's usage preferences (aipref form), stated in robots.rdf and the feed.
    content_usage: Option<String>,
    /// Whether robots.rdf states that it names every page the site serves.
    complete: bool,
    /// Each page's published share of reads (`--publish-popularity`), if published.
    popularity: Option<std::sync::Arc<std::collections::HashMap<String, f64>>>,
    /// The cut of the site into parts, and whether the documents are in parts.
    parting: parting::Parting,
    /// None until the first publication, which removes the parts a previous run left.
    parted: Option<bool>,
    part_urls: usize,
    /// The parts of robots.rdf and of the ResourceSync resource list.
    rdf_parts: part_files::PartFiles,
    list_parts: part_files::PartFiles,
}

/// A site of more than this many parts' worth of files has its documents in parts; one of
/// less than half as many goes back to single documents (no flapping at the threshold).
const PARTS_FROM: usize = 5;

/// Whether the file at `path` was written by us: robots.rdf declares our namespace, sitemaps
/// carry our generator comment (gzip parts are looked into). `None` when there is no file.
pub(crate) fn written_by_us(path: &Path) -> std::io::Result<Option<bool>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut head = Vec::with_capacity(2048);
    file.take(2048).read_to_end(&mut head)?;
    if webcoop_protocol::compression::is_gzip(&head) {
        // A sitemap part: its generator comment is inside the compressed stream.
        head = webcoop_protocol::compression::gunzip_bounded(
            &std::fs::read(path)?,
            webcoop_protocol::sitemap::MAX_BYTES,
        )
        .unwrap_or_default();
        head.truncate(2048);
    }
    let text = String::from_utf8_lossy(&head);
    Ok(Some(
        text.contains(webcoop_protocol::namespaces::WEBCOOP)
            || text.contains(webcoop_protocol::sitemap::GENERATOR_COMMENT),
    ))
}

impl Publisher {
    /// A publisher writing into `out` for the site at `base`.
    pub(crate) fn new(
        out: &Path,
        base: &Url,
        feed_entries: usize,
        part_urls: usize,
        links: Option<ServiceLinks>,
    ) -> Publisher {
        let part_urls = part_urls.clamp(1, webcoop_protocol::sitemap::MAX_URLS);
        // Parts past three times the size are halved: the parts an edit lands in (the larger
        // ones, as it is a file that picks them) stay within a few megabytes.
        let cap = (part_urls * 3).min(webcoop_protocol::sitemap::MAX_URLS);
        Publisher {
            out: out.to_path_buf(),
            base: base.clone(),
            links,
            feed_entries,
            listing: listing::ListingWriter::default(),
            sitemaps: sitemaps::SitemapPublisher::new(out),
            snapshot: snapshot::newest(out).map(|seq| (seq, snapshot::max_record_of(out, seq))),
            resourcesync: (false, false),
            content_usage: None,
            complete: false,
            popularity: None,
            parting: parting::Parting::new(part_urls, cap),
            parted: None,
            part_urls,
            rdf_parts: part_files::PartFiles::new(
                out.to_path_buf(),
                listing_parts::PART_NAME,
                false,
            ),
            list_parts: part_files::PartFiles::new(
                resourcesync::directory(out),
                resourcesync::PART_NAME,
                true,
            ),
        }
    }

    /// Whether the documents go in parts for a site of this size.
    fn parted_for(&mut self, inventory: &Inventory) -> bool {
        let n = inventory.len();
        let parted = if self.parted == Some(true) {
            n * 2 >= self.part_urls * PARTS_FROM
        } else {
            n > self.part_urls * PARTS_FROM
        };
        self.parted = Some(parted);
        parted
    }

    /// Forgets what every document's parts hold: all are rendered again.
    fn reset_parts(&mut self) {
        self.listing.reset();
        self.sitemaps.reset();
        self.rdf_parts.reset();
        self.list_parts.reset();
    }

    /// States the site's usage preferences in robots.rdf and the changes feed.
    pub(crate) fn set_content_usage(&mut self, usage: Option<String>) {
        self.content_usage = usage;
    }

    /// States in robots.rdf that it names every page the site serves (`wc:complete`).
    pub(crate) fn set_complete(&mut self, complete: bool) {
        self.complete = complete;
    }

    /// Refuses to start over documents someone else wrote (unless told to replace them) and
    /// removes temporary files a killed run left.
    pub(crate) fn prepare(&mut self, replace_existing: bool) -> Result<usize, PublishError> {
        if !replace_existing {
            let mut candidates = vec![self.out.join(ROBOTS_RDF), self.out.join(SITEMAP)];
            candidates.push(
                self.out
                    .join(format!("{SITEMAP_PART_PREFIX}1{SITEMAP_PART_SUFFIX}")),
            );
            for path in candidates {
                let ours = written_by_us(&path).map_err(|source| PublishError::Write {
                    path: path.clone(),
                    source,
                })?;
                if ours == Some(false) {
                    return Err(PublishError::Foreign(path));
                }
            }
        }
        self.reset_parts();
        self.parting.reset();
        self.rdf_parts
            .recall(listing_parts::dates_in_index(&self.out.join(ROBOTS_RDF)));
        self.sitemaps.recall(&self.out);
        let feed_dir = self.out.join(FEED_PATH);
        let feed_dir = feed_dir.parent().unwrap_or(&self.out);
        Ok(atomic::clean_stale(&self.out)
            + atomic::clean_stale(feed_dir)
            + atomic::clean_stale(&snapshot::directory(&self.out)))
    }

    /// Publishes these shares of reads from the next publication on; whether they differ from
    /// those published (every listing entry and sitemap part is then written again).
    pub(crate) fn set_popularity(
        &mut self,
        shares: Option<std::collections::HashMap<String, f64>>,
    ) -> bool {
        if self.popularity.as_deref() == shares.as_ref() {
            return false;
        }
        self.popularity = shares.map(std::sync::Arc::new);
        self.reset_parts();
        true
    }

    /// The shares of reads published, if any.
    pub(crate) fn popularity(
        &self,
    ) -> Option<std::sync::Arc<std::collections::HashMap<String, f64>>> {
        self.popularity.clone()
    }

    /// Advertises the snapshot at `sequence` from the next publication on.
    pub(crate) fn set_snapshot(&mut self, sequence: Option<u64>) {
        self.snapshot = sequence.map(|seq| (seq, snapshot::max_record_of(&self.out, seq)));
    }

    /// Publishes the ResourceSync documents too (or no longer), and names the Resource Dump
    /// built beside the snapshots (`dump`) once there is one.
    pub(crate) fn set_resourcesync(&mut self, on: bool, dump: bool) {
        self.resourcesync = (on, dump);
    }

    /// The sequence number of the snapshot advertised.
    pub(crate) fn snapshot(&self) -> Option<u64> {
        self.snapshot.map(|(seq, _)| seq)
    }

    /// The URL robots.rdf is served at.
    pub(crate) fn listing_url(&self) -> Url {
        self.base
            .join(ROBOTS_RDF)
            .unwrap_or_else(|_| self.base.clone())
    }

    /// The URL of the static changes feed.
    pub(crate) fn static_feed_url(&self) -> Url {
        self.base
            .join(FEED_PATH)
            .unwrap_or_else(|_| self.base.clone())
    }

    /// Notes changes committed since the last publication, so robots.rdf is spliced rather
    /// than rendered in full.
    pub(crate) fn note_changes(&mut self, changes: &[crate::store::LoggedChange]) {
        for c in changes {
            let existed = c.kind != webcoop_protocol::changes_feed::ChangeKind::Created;
            self.listing.note(&c.path, existed);
            self.parting.note(&c.path, existed);
        }
    }

    /// Publishes everything for the current inventory and change log.
    pub(crate) fn publish(
        &mut self,
        inventory: &Inventory,
        store: &Store,
        now: DateTime<Utc>,
    ) -> Result<PublishReport, PublishError> {
        let start = Instant::now();
        let mut report = self.publish_listing_and_feed(inventory, store, now)?;
        report.sitemaps = self.publish_sitemaps(inventory, store, now)?;
        report.total_time = start.elapsed();
        Ok(report)
    }

    /// Publishes the documents of the whole site that may wait a little behind robots.rdf:
    /// the sitemaps and the ResourceSync lists.
    pub(crate) fn publish_sitemaps(
        &mut self,
        inventory: &Inventory,
        store: &Store,
        now: DateTime<Utc>,
    ) -> Result<sitemaps::SitemapReport, PublishError> {
        let path = self.out.join(SITEMAP);
        let parted = self.parted == Some(true) || self.parted_for(inventory);
        if parted {
            self.parting.sync(inventory);
        }
        let parting = parted.then_some(&self.parting);
        let report = self
            .sitemaps
            .publish(
                &self.out,
                inventory,
                &self.base,
                (now, parting),
                self.popularity.as_deref(),
            )
            .map_err(|source| PublishError::Write { path, source })?;
        if let (true, dump_wanted) = self.resourcesync {
            let push = self.links.as_ref().map(|l| (&l.hub, &l.resourcesync_topic));
            let dump = dump_wanted
                && resourcesync::directory(&self.out)
                    .join(webcoop_protocol::resourcesync::RESOURCE_DUMP)
                    .exists();
            let lists = resourcesync::Lists {
                base: &self.base,
                inventory,
                parts: parting.map(|p| (p, &mut self.list_parts)),
                now,
            };
            resourcesync::publish(&self.out, push, dump, lists, store).map_err(|e| match e {
                resourcesync::ResourceSyncError::Write(path, source) => {
                    PublishError::Write { path, source }
                }
                resourcesync::ResourceSyncError::Store(e) => PublishError::Store(e),
            })?;
        }
        Ok(report)
    }

    /// Publishes robots.rdf, then the changes feed: what cooperating crawlers watch.
    pub(crate) fn publish_listing_and_feed(
        &mut self,
        inventory: &Inventory,
        store: &Store,
        now: DateTime<Utc>,
    ) -> Result<PublishReport, PublishError> {
        let start = Instant::now();
        let head_seq = store.head_seq()?;
        let path = self.out.join(ROBOTS_RDF);
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| PublishError::Write { path, source }
        };
        let was_parted = self.parted != Some(false);
        let parted = self.parted_for(inventory);
        if was_parted && !parted {
            self.rdf_parts.remove_all();
            self.list_parts.remove_all();
        }
        let ctx = listing::ListingContext {
            base: &self.base,
            about: self.listing_url(),
            changes: Some(
                self.links
                    .as_ref()
                    .map_or_else(|| self.static_feed_url(), |l| l.changes.clone()),
            ),
            hub: self.links.as_ref().map(|l| l.hub.clone()),
            snapshot: self
                .snapshot
                .map(|(s, max)| (snapshot::url_of(&self.base, s), max)),
            delta_base: self.links.as_ref().map(|l| l.delta.clone()),
            seq: head_seq,
            date: now,
            content_usage: self.content_usage.clone(),
            complete: self.complete,
            popularity: self.popularity.as_deref(),
        };
        let (listing_bytes, spliced, parts) = if parted {
            // The splice layout is of the single document: it no longer applies.
            self.listing.reset();
            self.parting.sync(inventory);
            let (records, report) = self
                .rdf_parts
                .publish(&self.parting, now, |first, end, name, out| {
                    let url = ctx.base.join(name).unwrap_or_else(|_| ctx.base.clone());
                    listing_parts::render_part(out, &ctx, inventory, (first, end), &url);
                    Ok(())
                })
                .map_err(err(&path))?;
            let bytes = listing_parts::write_index(&path, &ctx, &records).map_err(err(&path))?;
            self.rdf_parts.remove_gone(&self.parting);
            (bytes, false, report)
        } else {
            let (bytes, spliced) = write_single_listing(&mut self.listing, &path, inventory, &ctx)?;
            (bytes, spliced, part_files::PartsReport::default())
        };
        let listing_time = start.elapsed();

        let feed_path = self.out.join(FEED_PATH);
        let changes = store.recent_changes(self.feed_entries)?;
        let hub = self.links.as_ref().map(|l| l.hub.clone());
        feed::write_feed(
            &feed_path,
            &self.base,
            (self.static_feed_url(), hub),
            &changes,
            (head_seq, self.content_usage.clone()),
            self.popularity.as_deref(),
            now,
        )
        .map_err(err(&feed_path))?;

        Ok(PublishReport {
            listing_bytes,
            spliced,
            parts,
            listing_time,
            total_time: start.elapsed(),
            sitemaps: sitemaps::SitemapReport::default(),
        })
    }
}

/// Writes robots.rdf as one document, spliced from the previous one where it can be.
fn write_single_listing(
    listing: &mut listing::ListingWriter,
    path: &Path,
    inventory: &Inventory,
    ctx: &listing::ListingContext<'_>,
) -> Result<(u64, bool), PublishError> {
    let err = |source| PublishError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut file = AtomicFile::create(path).map_err(err)?;
    let previous = std::fs::File::open(path).ok();
    let written = listing
        .write(&mut file, previous.as_ref(), inventory, ctx)
        .and_then(|w| file.commit().map(|()| w));
    match written {
        Ok(w) => {
            listing.committed(path);
            Ok(w)
        }
        Err(e) => {
            // Whatever went wrong, the next attempt starts from scratch.
            listing.reset();
            Err(err(e))
        }
    }
}

//! robots.rdf, written from the inventory without holding the document in memory.
//!
//! The first publication renders every item, streaming. It remembers where each `rdf:li` and
//! each `item` starts in the file (two 32-bit offsets per file). Later publications render the
//! channel head and the changed items only, and copy every unchanged run of entries from the
//! previous file with `copy_file_range`: the user-space work is proportional to the change,
//! the kernel's to the size of the document. A previous file that is not exactly what was
//! written (edited, replaced, or over 4 GiB) is never spliced: the listing is rendered in full.

use super::atomic::AtomicFile;
use crate::inventory::Inventory;
use crate::urls::push_url;
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use url::Url;
use webcoop_protocol::robots_rdf::{
    Channel, ItemRef, UpdatePeriod, ValidatorRef, write_channel_end, write_head, write_item_ref,
    write_seq_entry_str, write_tail,
};

/// What the channel says about the site.
pub(crate) struct ListingContext<'a> {
    /// The docroot's URL.
    pub(crate) base: &'a Url,
    /// Where robots.rdf is served.
    pub(crate) about: Url,
    /// The changes feed.
    pub(crate) changes: Option<Url>,
    /// The WebSub hub.
    pub(crate) hub: Option<Url>,
    /// The newest snapshot of the whole site, and the largest content it holds.
    pub(crate) snapshot: Option<(Url, Option<u64>)>,
    /// Prefix of delta links (`.../delta/`), when the delta service runs.
    pub(crate) delta_base: Option<Url>,
    /// Newest change reflected.
    pub(crate) seq: u64,
    /// Generation time.
    pub(crate) date: DateTime<Utc>,
    /// The site's usage preferences (aipref form).
    pub(crate) content_usage: Option<String>,
    /// Whether the listing names every page the site serves.
    pub(crate) complete: bool,
    /// Each page's published share of reads, written as `wc:popularity`.
    pub(crate) popularity: Option<&'a std::collections::HashMap<String, f64>>,
}

const FLUSH_AT: usize = 256 << 10;

/// The `wc:` element carrying a page's share of reads.
const POPULARITY: &str = "popularity";

/// Where the entries of the last written listing are.
struct Layout {
    /// Start of each `rdf:li`, then the start of the channel's end.
    seq: Vec<u32>,
    /// Start of each `item`, then the start of the tail.
    items: Vec<u32>,
    /// Size and inode of the file, to recognise it.
    len: u64,
    ino: u64,
    /// Whether items carry delta links (a change of settings means a full render).
    with_delta: bool,
}

/// One step of building the new listing from the old one.
enum Op<'a> {
    /// Copy these consecutive entries of the old listing.
    Copy { from: usize, count: usize },
    /// Render this path afresh.
    Render(&'a str),
}

/// Writes robots.rdf, splicing from the previous file when it can.
#[derive(Default)]
pub(crate) struct ListingWriter {
    layout: Option<Layout>,
    /// Paths changed since the last publication, and whether each was in it.
    dirty: BTreeMap<String, bool>,
}

/// Tracks the output position while rendering into a buffer.
struct Out<'f> {
    file: &'f mut AtomicFile,
    buf: String,
    flushed: u64,
}

impl Out<'_> {
    fn pos(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.write_all(self.buf.as_bytes())?;
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    fn copy(&mut self, src: &File, from: u64, to: u64) -> io::Result<()> {
        self.flush()?;
        self.file.copy_range(src, from, to - from)?;
        self.flushed += to - from;
        Ok(())
    }
}

fn offset(pos: u64) -> io::Result<u32> {
    u32::try_from(pos).map_err(|_| io::Error::other("listing over 4 GiB: no splicing"))
}

impl ListingWriter {
    /// Notes that `path` changed; `existed_before` says whether it was in the last listing
    /// (false for a creation). Only the first note of a path since a publication counts.
    pub(crate) fn note(&mut self, path: &str, existed_before: bool) {
        self.dirty.entry(path.to_string()).or_insert(existed_before);
    }

    /// Forgets the layout: the next publication renders in full.
    pub(crate) fn reset(&mut self) {
        self.layout = None;
        self.dirty.clear();
    }

    /// Writes the listing into `file`; `previous` is the file it replaces, if any. Returns the
    /// number of bytes written and whether it was spliced.
    pub(crate) fn write(
        &mut self,
        file: &mut AtomicFile,
        previous: Option<&File>,
        inventory: &Inventory,
        ctx: &ListingContext<'_>,
    ) -> io::Result<(u64, bool)> {
        let plan = match (previous, &self.layout) {
            (Some(prev), Some(layout))
                if layout.with_delta == ctx.delta_base.is_some() && recognised(prev, layout) =>
            {
                self.plan(inventory, layout)
            }
            _ => None,
        };
        let spliced = plan.is_some();
        let mut out = Out {
            file,
            buf: String::with_capacity(FLUSH_AT + 8192),
            flushed: 0,
        };
        write_head(&mut out.buf, &channel(ctx));
        let (seq, items) = match (&plan, previous, &self.layout) {
            (Some(ops), Some(prev), Some(layout)) => {
                let seq = splice_section(&mut out, ops, prev, &layout.seq, |buf, path| {
                    render_seq(buf, ctx, path)
                })?;
                write_channel_end(&mut out.buf);
                let items = splice_section(&mut out, ops, prev, &layout.items, |buf, path| {
                    render_item(buf, ctx, inventory, path)
                })?;
                (seq, items)
            }
            _ => {
                let mut seq = Vec::with_capacity(inventory.len() + 1);
                for (path, _) in inventory.iter() {
                    seq.push(offset(out.pos())?);
                    render_seq(&mut out.buf, ctx, path);
                    out.maybe_flush()?;
                }
                seq.push(offset(out.pos())?);
                write_channel_end(&mut out.buf);
                let mut items = Vec::with_capacity(inventory.len() + 1);
                for (path, _) in inventory.iter() {
                    items.push(offset(out.pos())?);
                    render_item(&mut out.buf, ctx, inventory, path);
                    out.maybe_flush()?;
                }
                items.push(offset(out.pos())?);
                (seq, items)
            }
        };
        write_tail(&mut out.buf);
        out.flush()?;
        let len = out.flushed;
        self.layout = Some(Layout {
            seq,
            items,
            len,
            ino: 0,
            with_delta: ctx.delta_base.is_some(),
        });
        self.dirty.clear();
        Ok((len, spliced))
    }

    /// Records the inode of the file once it is in place, so the next splice can recognise it.
    pub(crate) fn committed(&mut self, published: &std::path::Path) {
        if let (Some(layout), Ok(meta)) = (self.layout.as_mut(), std::fs::metadata(published)) {
            layout.ino = meta.ino();
            if meta.len() != layout.len {
                self.layout = None;
            }
        }
    }

    /// How to build the new listing from the old one, or `None` when the notes do not add up
    /// (then the listing is rendered in full).
    fn plan<'a>(&self, inventory: &'a Inventory, layout: &Layout) -> Option<Vec<Op<'a>>> {
        let old_count = layout.items.len().checked_sub(1)?;
        let gone: Vec<&str> = self
            .dirty
            .iter()
            .filter(|(p, existed)| **existed && inventory.get(p).is_none())
            .map(|(p, _)| p.as_str())
            .collect();
        let mut ops: Vec<Op<'a>> = Vec::new();
        let mut old = 0usize;
        let mut gone = gone.into_iter().peekable();
        let copy = |ops: &mut Vec<Op<'a>>, old: &mut usize| {
            match ops.last_mut() {
                Some(Op::Copy { from, count }) if *from + *count == *old => *count += 1,
                _ => ops.push(Op::Copy {
                    from: *old,
                    count: 1,
                }),
            }
            *old += 1;
        };
        for (path, _) in inventory.iter() {
            // Deleted entries sort among the others: skip their old entries in order.
            while gone.peek().is_some_and(|g| *g < path) {
                gone.next();
                old += 1;
            }
            match self.dirty.get(path) {
                None => copy(&mut ops, &mut old),
                Some(existed) => {
                    if *existed {
                        old += 1;
                    }
                    ops.push(Op::Render(path));
                }
            }
        }
        old += gone.count();
        (old == old_count).then_some(ops)
    }
}

fn recognised(prev: &File, layout: &Layout) -> bool {
    prev.metadata()
        .is_ok_and(|m| m.len() == layout.len && m.ino() == layout.ino && layout.ino != 0)
}

/// Writes one section (the `rdf:Seq` entries or the items) from `ops`; returns the new offsets.
fn splice_section(
    out: &mut Out<'_>,
    ops: &[Op<'_>],
    prev: &File,
    old: &[u32],
    mut render: impl FnMut(&mut String, &str),
) -> io::Result<Vec<u32>> {
    let mut starts = Vec::with_capacity(old.len());
    for op in ops {
        match op {
            Op::Copy { from, count } => {
                let (a, b) = (u64::from(old[*from]), u64::from(old[from + count]));
                let shift = out.pos() as i64 - a as i64;
                for start in &old[*from..from + count] {
                    starts.push(offset((i64::from(*start) + shift) as u64)?);
                }
                out.copy(prev, a, b)?;
            }
            Op::Render(path) => {
                starts.push(offset(out.pos())?);
                render(&mut out.buf, path);
                out.maybe_flush()?;
            }
        }
    }
    starts.push(offset(out.pos())?);
    Ok(starts)
}

pub(super) fn channel(ctx: &ListingContext<'_>) -> Channel {
    let host = ctx.base.host_str().unwrap_or("site");
    Channel {
        about: ctx.about.clone(),
        title: host.to_string(),
        link: ctx.base.clone(),
        description: format!(
            "Every public resource of {host} with its last modification, kept current by webcoop-agent"
        ),
        date: Some(ctx.date),
        // Regenerated within a second of every change; hourly x3600 is the closest
        // mod_syndication can say.
        update_period: UpdatePeriod::Hourly,
        update_frequency: 3600,
        update_base: None,
        changes: ctx.changes.clone(),
        hub: ctx.hub.clone(),
        snapshot: ctx.snapshot.as_ref().map(|(u, _)| u.clone()),
        snapshot_max_record: ctx.snapshot.as_ref().and_then(|(_, m)| *m),
        complete: ctx.complete,
        seq: Some(ctx.seq),
        content_usage: ctx.content_usage.clone(),
        parts: Vec::new(),
    }
}

pub(super) fn render_seq(buf: &mut String, ctx: &ListingContext<'_>, path: &str) {
    let mut url = String::with_capacity(128);
    push_url(&mut url, ctx.base, path);
    write_seq_entry_str(buf, &url);
}

pub(super) fn render_item(
    buf: &mut String,
    ctx: &ListingContext<'_>,
    inventory: &Inventory,
    path: &str,
) {
    let Some(entry) = inventory.get(path) else {
        return;
    };
    let mut url = String::with_capacity(128);
    push_url(&mut url, ctx.base, path);
    let title = format!("/{path}");
    let delta = ctx.delta_base.as_ref().map(|d| {
        let mut s = String::with_capacity(128);
        push_url(&mut s, d, path);
        s
    });
    let popularity = ctx.popularity.and_then(|p| p.get(path)).and_then(|share| {
        let mut e = webcoop_protocol::robots_rdf::Extensions::default();
        e.insert(POPULARITY, format!("{share}")).ok()?;
        Some(e)
    });
    write_item_ref(
        buf,
        &ItemRef {
            url: &url,
            title: &title,
            modified: entry.modified,
            size: Some(entry.size),
            content_type: Some(crate::content_type::of_path(path)),
            etag: Some(ValidatorRef::Digest(&entry.sha256)),
            delta: delta.as_deref(),
            extensions: popularity.as_ref(),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::FileEntry;
    use chrono::TimeZone;
    use webcoop_protocol::validator::Sha256Digest;

    fn entry(n: u64) -> FileEntry {
        FileEntry {
            size: n,
            mtime_ns: n as i64,
            ctime_ns: n as i64,
            sha256: Sha256Digest::of(&n.to_le_bytes()),
            fast: n,
            modified: Utc.timestamp_opt(1_700_000_000 + n as i64, 0).unwrap(),
            seen: false,
        }
    }

    fn ctx(base: &Url, seq: u64, delta: bool) -> ListingContext<'_> {
        ListingContext {
            base,
            about: base.join("robots.rdf").unwrap(),
            changes: None,
            hub: None,
            snapshot: None,
            delta_base: delta.then(|| base.join(".well-known/webcoop/delta/").unwrap()),
            seq,
            date: Utc.timestamp_opt(1_800_000_000 + seq as i64, 0).unwrap(),
            content_usage: None,
            complete: false,
            popularity: None,
        }
    }

    fn publish(
        writer: &mut ListingWriter,
        path: &std::path::Path,
        inv: &Inventory,
        ctx: &ListingContext<'_>,
    ) -> bool {
        let previous = File::open(path).ok();
        let mut file = AtomicFile::create(path).unwrap();
        let (_, spliced) = writer
            .write(&mut file, previous.as_ref(), inv, ctx)
            .unwrap();
        file.commit().unwrap();
        writer.committed(path);
        spliced
    }

    #[test]
    fn a_spliced_listing_is_byte_identical_to_a_full_render() {
        let dir = tempfile::tempdir().unwrap();
        let spliced_path = dir.path().join("robots.rdf");
        let full_path = dir.path().join("full.rdf");
        let base = Url::parse("https://e.org/").unwrap();
        let mut inv = Inventory::default();
        let mut rng = 7u64;
        let mut next = move || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            rng >> 33
        };
        for i in 0..300 {
            inv.insert(&format!("p/{:03}.html", i * 3), entry(i));
        }
        let mut writer = ListingWriter::default();
        assert!(!publish(
            &mut writer,
            &spliced_path,
            &inv,
            &ctx(&base, 0, false)
        ));
        let mut spliced_rounds = 0;
        for round in 1..=200u64 {
            for _ in 0..(1 + next() % 6) {
                let key = format!("p/{:03}.html", next() % 900);
                match next() % 3 {
                    0 => {
                        writer.note(&key, inv.get(&key).is_some());
                        inv.insert(&key, entry(1000 + round));
                    }
                    1 if inv.get(&key).is_some() => {
                        writer.note(&key, true);
                        inv.remove(&key);
                    }
                    _ => {
                        if inv.get(&key).is_some() {
                            writer.note(&key, true);
                            inv.insert(&key, entry(5000 + round));
                        }
                    }
                }
            }
            let c = ctx(&base, round, false);
            spliced_rounds += usize::from(publish(&mut writer, &spliced_path, &inv, &c));
            let mut fresh = ListingWriter::default();
            publish(&mut fresh, &full_path, &inv, &c);
            assert_eq!(
                std::fs::read(&spliced_path).unwrap(),
                std::fs::read(&full_path).unwrap(),
                "round {round}"
            );
        }
        assert_eq!(
            spliced_rounds, 200,
            "every round after the first was spliced"
        );
    }

    #[test]
    fn a_file_changed_behind_our_back_or_new_settings_mean_a_full_render() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("robots.rdf");
        let base = Url::parse("https://e.org/").unwrap();
        let mut inv = Inventory::default();
        inv.insert("a.html", entry(1));
        let mut writer = ListingWriter::default();
        publish(&mut writer, &path, &inv, &ctx(&base, 0, false));
        assert!(publish(&mut writer, &path, &inv, &ctx(&base, 1, false)));
        // Someone replaced the file.
        std::fs::write(&path, "not ours").unwrap();
        assert!(!publish(&mut writer, &path, &inv, &ctx(&base, 2, false)));
        // Delta links appear: every item changes.
        assert!(!publish(&mut writer, &path, &inv, &ctx(&base, 3, true)));
        assert!(std::fs::read_to_string(&path).unwrap().contains("wc:delta"));
        // Notes that do not add up (a deletion of something never listed) are not trusted.
        writer.note("never-listed.html", true);
        assert!(!publish(&mut writer, &path, &inv, &ctx(&base, 4, true)));
    }
}

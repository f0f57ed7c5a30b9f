//! robots.rdf for a site past one part's worth of files: an index at `/robots.rdf` naming the
//! parts (`robots-{id}.rdf`, each a complete robots.rdf of a range of paths) with their dates,
//! versions and sizes ([`webcoop_protocol::robots_rdf::ListingPart`]). An edit rewrites its
//! part and the index, whatever the size of the site.

use super::atomic::write_atomic;
use super::listing::{ListingContext, channel, render_item, render_seq};
use super::part_files::PartRecord;
use crate::inventory::Inventory;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::io;
use std::path::Path;
use url::Url;
use webcoop_protocol::robots_rdf::{ListingPart, write_channel_end, write_head, write_tail};

/// Part files are `robots-{id}.rdf`.
pub(crate) const PART_NAME: (&str, &str) = ("robots-", ".rdf");

/// Renders the part holding the paths from `first` up to `end`, served at `url`: nothing in
/// it depends on the time, so an unchanged part renders to the same bytes.
pub(crate) fn render_part(
    out: &mut Vec<u8>,
    ctx: &ListingContext<'_>,
    inventory: &Inventory,
    (first, end): (&str, Option<&str>),
    url: &Url,
) {
    let mut head = channel(ctx);
    head.description = format!("Part of {}, from /{first}", ctx.about);
    head.about = url.clone();
    head.date = None;
    head.changes = None;
    head.hub = None;
    head.snapshot = None;
    head.snapshot_max_record = None;
    head.complete = false;
    head.seq = None;
    head.content_usage = None;
    let mut buf = String::with_capacity(64 << 10);
    write_head(&mut buf, &head);
    for (path, _) in inventory.range(first, end) {
        render_seq(&mut buf, ctx, path);
    }
    write_channel_end(&mut buf);
    out.extend_from_slice(buf.as_bytes());
    buf.clear();
    for (path, _) in inventory.range(first, end) {
        render_item(&mut buf, ctx, inventory, path);
        if buf.len() >= 256 << 10 {
            out.extend_from_slice(buf.as_bytes());
            buf.clear();
        }
    }
    write_tail(&mut buf);
    out.extend_from_slice(buf.as_bytes());
}

/// Writes the index naming `parts` at `path`; returns its size.
pub(crate) fn write_index(
    path: &Path,
    ctx: &ListingContext<'_>,
    parts: &[PartRecord],
) -> io::Result<u64> {
    let mut head = channel(ctx);
    head.parts = parts
        .iter()
        .map(|p| ListingPart {
            url: ctx.base.join(&p.name).unwrap_or_else(|_| ctx.base.clone()),
            date: p.date,
            version: format!("{:016x}", p.version),
            items: p.count as u64,
        })
        .collect();
    let mut doc = String::with_capacity(1024 + parts.len() * 200);
    write_head(&mut doc, &head);
    write_channel_end(&mut doc);
    write_tail(&mut doc);
    write_atomic(path, doc.as_bytes())?;
    Ok(doc.len() as u64)
}

/// The date the robots.rdf index at `path` gives each part, by file name (nothing when it is
/// not an index that reads).
pub(crate) fn dates_in_index(path: &Path) -> HashMap<String, DateTime<Utc>> {
    let Ok(bytes) = std::fs::read(path) else {
        return HashMap::new();
    };
    let Ok(doc) = webcoop_protocol::robots_rdf::parse(&bytes, &Default::default()) else {
        return HashMap::new();
    };
    doc.channel
        .parts
        .into_iter()
        .filter_map(|p| Some((p.url.path_segments()?.next_back()?.to_string(), p.date)))
        .collect()
}

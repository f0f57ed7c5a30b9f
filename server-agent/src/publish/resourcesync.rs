//! ResourceSync documents ([`webcoop_protocol::resourcesync`]) as static files beside the
//! others: the Source Description at `/.well-known/resourcesync`, the Capability List, the
//! Resource List of the inventory (an index of parts past 50,000 resources) and the Change List
//! of the newest changes, rewritten at each publication; the Resource Dump once a package of
//! the site was built ([`super::resource_dump`]).

use super::atomic::write_atomic;
use super::part_files::PartFiles;
use super::parting::Parting;
use crate::content_type;
use crate::inventory::Inventory;
use crate::store::{LoggedChange, Store, StoreError};
use crate::urls::url_of;
use chrono::{DateTime, Utc};
use std::io;
use std::path::{Path, PathBuf};
use url::Url;
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::resourcesync::{
    self as rs, CAPABILITY_LIST, CHANGE_LIST, Capability, Change, ChangeItem, DIRECTORY,
    RESOURCE_DUMP, RESOURCE_LIST, Resource, SOURCE_DESCRIPTION,
};

/// Changes the Change List holds at most (the newest): about 300 KB, written again at each
/// publication.
pub(crate) const CHANGES: usize = 1_000;

/// Parts of the Resource List are `resourcelist-{id}.xml`.
pub(crate) const PART_NAME: (&str, &str) = ("resourcelist-", ".xml");

/// What the Resource List is made of.
pub(crate) struct Lists<'a> {
    /// The docroot's URL.
    pub(crate) base: &'a Url,
    /// Every public file.
    pub(crate) inventory: &'a Inventory,
    /// The cut of the site and the parts' files, when the site is in parts.
    pub(crate) parts: Option<(&'a Parting, &'a mut PartFiles)>,
    /// The time of the publication.
    pub(crate) now: DateTime<Utc>,
}

/// Where the documents go, in the output directory.
pub(crate) fn directory(out: &Path) -> PathBuf {
    out.join(DIRECTORY)
}

/// The documents' URLs on the site.
struct Urls {
    description: Url,
    capabilities: Url,
    resources: Url,
    changes: Url,
    dump: Url,
}

impl Urls {
    fn of(base: &Url) -> Urls {
        let join = |p: &str| base.join(p).unwrap_or_else(|_| base.clone());
        Urls {
            description: join(SOURCE_DESCRIPTION),
            capabilities: join(&format!("{DIRECTORY}{CAPABILITY_LIST}")),
            resources: join(&format!("{DIRECTORY}{RESOURCE_LIST}")),
            changes: join(&format!("{DIRECTORY}{CHANGE_LIST}")),
            dump: join(&format!("{DIRECTORY}{RESOURCE_DUMP}")),
        }
    }
}

/// Why the documents could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResourceSyncError {
    /// A file.
    #[error("{0}: {1}")]
    Write(PathBuf, io::Error),
    /// The change log.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Writes a document unless the file already holds exactly it.
fn write(path: PathBuf, text: &str) -> Result<(), ResourceSyncError> {
    if std::fs::read(&path).is_ok_and(|b| b == text.as_bytes()) {
        return Ok(());
    }
    write_atomic(&path, text.as_bytes()).map_err(|e| ResourceSyncError::Write(path, e))
}

/// A resource as the lists describe it.
fn resource(base: &Url, path: &str, e: &crate::inventory::FileEntry) -> Resource {
    Resource {
        loc: url_of(base, path).to_string(),
        lastmod: e.modified,
        sha256: e.sha256,
        length: e.size,
        media_type: content_type::of_path(path).to_string(),
    }
}

/// Writes every document but the dump's; `push` is the WebSub hub and the topic it pushes
/// change notifications on, `dump` says whether a Resource Dump is published.
pub(crate) fn publish(
    out: &Path,
    push: Option<(&Url, &Url)>,
    dump: bool,
    lists: Lists<'_>,
    store: &Store,
) -> Result<(), ResourceSyncError> {
    let (base, now) = (lists.base, lists.now);
    let urls = Urls::of(base);
    // Directories are made as the documents are written, readable by the web server.
    let dir = directory(out);
    let mut capabilities = vec![
        (Capability::ResourceList, urls.resources.as_str()),
        (Capability::ChangeList, urls.changes.as_str()),
    ];
    if dump {
        capabilities.push((Capability::ResourceDump, urls.dump.as_str()));
    }
    if let Some((_, topic)) = push {
        capabilities.push((Capability::ChangeListNotification, topic.as_str()));
    }
    write(
        out.join(SOURCE_DESCRIPTION),
        &rs::source_description(urls.capabilities.as_str()),
    )?;
    write(
        dir.join(CAPABILITY_LIST),
        &rs::capability_list(
            urls.description.as_str(),
            push.map(|(hub, _)| hub.as_str()),
            &capabilities,
        ),
    )?;
    publish_resource_list(&dir, &urls, lists)?;
    let mut changes = store.recent_changes(CHANGES)?;
    changes.sort_by_key(|c| c.seq);
    let from = changes.first().map_or(now, |c| c.time);
    let items: Vec<ChangeItem> = changes.iter().map(|c| change_item(base, c)).collect();
    write(
        dir.join(CHANGE_LIST),
        &rs::change_list(urls.capabilities.as_str(), from, &items),
    )
}

fn change_item(base: &Url, c: &LoggedChange) -> ChangeItem {
    ChangeItem {
        loc: url_of(base, &c.path).to_string(),
        change: match c.kind {
            ChangeKind::Created => Change::Created,
            ChangeKind::Modified => Change::Updated,
            ChangeKind::Deleted => Change::Deleted,
        },
        datetime: c.time,
        content: c
            .sha256
            .filter(|_| c.kind != ChangeKind::Deleted)
            .map(|sha| {
                (
                    sha,
                    c.size.unwrap_or(0),
                    c.content_type
                        .clone()
                        .unwrap_or_else(|| content_type::of_path(&c.path).to_string()),
                )
            }),
    }
}

/// The Resource List: one document, or an index of the site's parts, each written again only
/// when its bytes changed.
fn publish_resource_list(
    dir: &Path,
    urls: &Urls,
    lists: Lists<'_>,
) -> Result<(), ResourceSyncError> {
    let Lists {
        base,
        inventory,
        parts,
        now,
    } = lists;
    let up = urls.capabilities.as_str();
    let Some((parting, files)) = parts else {
        let resources: Vec<Resource> = inventory
            .iter()
            .map(|(p, e)| resource(base, p, e))
            .collect();
        return write(
            dir.join(RESOURCE_LIST),
            &rs::resource_list(
                Capability::ResourceList,
                up,
                now,
                resources.iter().map(|r| (r, None)),
            ),
        );
    };
    let published = files.publish(parting, now, |first, end, _, out| {
        let resources: Vec<Resource> = inventory
            .range(first, end)
            .map(|(p, e)| resource(base, p, e))
            .collect();
        // Dated by its newest resource, so an unchanged part renders to the same bytes.
        let at = resources.iter().map(|r| r.lastmod).max().unwrap_or(now);
        let text = rs::resource_list(
            Capability::ResourceList,
            up,
            at,
            resources.iter().map(|r| (r, None)),
        );
        out.extend_from_slice(text.as_bytes());
        Ok(())
    });
    let (records, _) =
        published.map_err(|e| ResourceSyncError::Write(dir.join(RESOURCE_LIST), e))?;
    let prefix = urls.resources.as_str().trim_end_matches(RESOURCE_LIST);
    let names: Vec<String> = records
        .iter()
        .map(|r| format!("{prefix}{}", r.name))
        .collect();
    write(
        dir.join(RESOURCE_LIST),
        &rs::resource_list_index(up, now, &names),
    )?;
    files.remove_gone(parting);
    Ok(())
}

//! The static changes feed: the newest changes as a file the web server serves as it is, for
//! clients when the agent's own service is not running.

use super::atomic::write_atomic;
use crate::store::LoggedChange;
use crate::urls::url_of;
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::io;
use std::path::Path;
use url::Url;
use webcoop_protocol::changes_feed::{self, ChangeEntry, ChangesFeed};

/// The feed's identity: the changes endpoint, whether served statically or by the agent.
pub(crate) fn feed_id(base: &Url) -> String {
    format!("{base}.well-known/webcoop/changes")
}

/// Turns logged changes into feed entries, each with its page's published share of reads when
/// `popularity` names it.
pub(crate) fn entries(
    base: &Url,
    changes: &[LoggedChange],
    popularity: Option<&HashMap<String, f64>>,
) -> Vec<ChangeEntry> {
    changes
        .iter()
        .map(|c| ChangeEntry {
            seq: c.seq,
            kind: c.kind,
            url: url_of(base, &c.path),
            time: c.time,
            etag: c.sha256.map(|d| d.etag()),
            previous_etag: c.prev_sha256.map(|d| d.etag()),
            size: c.size,
            content_type: c.content_type.clone(),
            changed_fraction: c.changed,
            delta: None,
            popularity: popularity.and_then(|p| p.get(&c.path)).copied(),
        })
        .collect()
}

/// Writes the feed document of `changes` (oldest first) to `dest`.
pub(crate) fn write_feed(
    dest: &Path,
    base: &Url,
    (self_link, hub): (Url, Option<Url>),
    changes: &[LoggedChange],
    (head_seq, content_usage): (u64, Option<String>),
    popularity: Option<&HashMap<String, f64>>,
    now: DateTime<Utc>,
) -> io::Result<()> {
    let feed = ChangesFeed {
        id: feed_id(base),
        title: format!("Changes of {}", base.host_str().unwrap_or("the site")),
        updated: changes.last().map_or(now, |c| c.time),
        self_link,
        hub,
        next: None,
        head_seq: Some(head_seq),
        resync: None,
        content_usage,
        entries: entries(base, changes, popularity),
    };
    write_atomic(dest, changes_feed::write(&feed).as_bytes())
}

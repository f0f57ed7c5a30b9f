//! What an agent (of a docroot or of an origin) opens and commits through: its state, its
//! publisher, what it keeps, and a batch committed with the inventory, the publisher and the
//! hub told.

use super::{AgentError, ChangeObserver};
use crate::config::Config;
use crate::inventory::Inventory;
use crate::publish::Publisher;
use crate::store::{Batch, Retention, Store};
use chrono::{DateTime, Utc};

/// Opens the state of the site named `identity`, refusing a state directory of another site.
pub(crate) fn open_state(config: &Config, identity: &str) -> Result<Store, AgentError> {
    let store = Store::open(&config.state)?;
    match store.meta("site")? {
        Some(recorded) if recorded != identity => {
            return Err(AgentError::StateOfAnotherSite {
                state: config.state.display().to_string(),
                other: recorded,
                this: identity.to_string(),
            });
        }
        Some(_) => {}
        None => store.set_meta("site", identity)?,
    }
    Ok(store)
}

/// The publisher of the documents `config` asks for, its output directory checked.
pub(crate) fn publisher_for(config: &Config) -> Result<Publisher, AgentError> {
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
    publisher.set_content_usage(config.content_usage.map(|p| p.to_aipref()));
    publisher.set_complete(config.complete_listing);
    publisher.set_resourcesync(
        config.resourcesync,
        config.snapshots.as_ref().is_some_and(|s| s.resource_dump),
    );
    let stale = publisher.prepare(config.replace_existing)?;
    if stale > 0 {
        tracing::info!(stale, "removed temporary files left by an interrupted run");
    }
    Ok(publisher)
}

/// What is kept of versions and changes.
pub(crate) fn retention_of(config: &Config) -> Retention {
    Retention {
        versions_per_file: config.versions,
        versions_budget: config.versions_budget,
        changes: config.retain_changes,
    }
}

/// Commits a batch, then brings the inventory in line with the state, tells the publisher of
/// the changes and the observer (the hub) of them; returns the batch with sequence numbers.
pub(crate) fn commit_batch(
    store: &mut Store,
    inventory: &mut Inventory,
    publisher: &mut Publisher,
    observer: Option<&mut ChangeObserver>,
    retention: &Retention,
    batch: Batch,
    now: DateTime<Utc>,
) -> Result<Batch, AgentError> {
    let mut saved = store.commit(batch, now, retention)?;
    for path in &saved.deletions {
        inventory.remove(path);
    }
    for (path, entry, _) in &saved.upserts {
        inventory.insert(path, entry.clone());
    }
    saved.versions.clear();
    publisher.note_changes(&saved.changes);
    if let Some(observer) = observer
        && !saved.changes.is_empty()
    {
        observer(&saved.changes, inventory);
    }
    Ok(saved)
}

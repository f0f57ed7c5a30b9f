//! What an agent (of a docroot or of an origin) opens and commits through: its state, its
//! publisher, what it keeps, and a batch committed with the inventory, the publisher and the
//! hub told.

use super::AgentError;
use crate::config::Config;
use crate::publish::Publisher;
use crate::store::{Retention, Store};

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

//! What visitors read, in docroot mode: the access logs read up to now, each read counted for
//! the published file it asked for, the counts saved, and the shares of reads handed to the
//! publisher when the webmaster publishes them.

use super::{Agent, AgentError};
use std::time::Duration;

/// How often the watching agent reads the access logs.
pub(super) const READS_EVERY: Duration = Duration::from_secs(10);

impl Agent {
    /// Reads the access logs, saves the counts, and sets the shares to publish; whether the
    /// published shares changed (the documents are then published again).
    pub(crate) fn count_reads(&mut self) -> Result<bool, AgentError> {
        let Some(popularity) = self.core.popularity.as_mut() else {
            return Ok(false);
        };
        let now = self.core.clock.now().timestamp();
        let base = self.core.config.base_url.clone();
        let inventory = &self.core.inventory;
        // A request names a file, or a directory whose index file is published; a static
        // file is the same whatever the query (a tracker's, a cache buster's).
        let resolve = |target: &str| {
            let file = target.split('?').next().unwrap_or(target);
            let path = crate::urls::logged_path(&base, file, &[]).ok()?;
            if path.is_empty() || path.ends_with('/') {
                let index = format!("{path}index.html");
                return inventory.get(&index).is_some().then_some(index);
            }
            inventory.get(&path).is_some().then_some(path)
        };
        let activity = self.core.activity.clone();
        let verified = |client: &str| {
            activity
                .as_ref()
                .is_some_and(|a| a.is_verified_client(client))
        };
        popularity.read_logs(now, &resolve, &verified);
        popularity.retain(|p| inventory.get(p).is_some());
        popularity.save(&mut self.core.store)?;
        let shares = popularity.published(now);
        let changed = self.core.publisher.set_popularity(shares);
        if let Some(a) = &self.core.activity {
            a.set_popularity(self.core.publisher.popularity(), popularity.visitors(now));
        }
        Ok(changed)
    }
}

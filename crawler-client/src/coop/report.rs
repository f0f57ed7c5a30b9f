//! What cooperation reports at the end of a crawl: one figure line per cooperating site.

use super::Level;
use super::state::CoopState;
use crate::frontier::Frontier;

impl CoopState {
    /// One figure line per cooperating site, for the log at the end.
    pub(crate) fn report(&self, frontier: &Frontier) {
        for (id, site) in self.sites.iter() {
            let level = site.level(self.config.mode, self.config.failures_to_degrade);
            if level == Level::None && site.stats.meta_requests == 0 {
                continue;
            }
            tracing::info!(
                "{}: cooperation {} (trust {:.2}): {}",
                frontier.host(id).map_or("", |h| h.origin.as_str()),
                level.as_str(),
                site.trust.score(),
                site.stats
            );
        }
    }
}

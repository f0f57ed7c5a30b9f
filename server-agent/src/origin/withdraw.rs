//! Withdrawn means gone: when a page stops being public, everything the agent serves stops
//! carrying its content. Once its deletion is saved, its kept versions are dropped (so no
//! delta, batch or snapshot can be made from them); the pages that showed it (they link to it,
//! or their kept version holds its title) are checked again at once, whole, and once checked
//! their older versions go too; and every snapshot file (and ResourceSync dump) is removed
//! before the next is built, which waits until those pages have been checked.

use super::OriginAgent;
use crate::agent::AgentError;
use std::collections::BTreeSet;

/// Pages whose kept versions are searched for a withdrawn page's title, at most (a larger
/// site relies on the links and the pages' own schedule).
const MAX_TITLE_SCAN: usize = 20_000;

impl OriginAgent {
    /// After a flush saved deletions and new versions: withdraws what left, and drops the
    /// older versions of the pages that showed it once they were checked again.
    pub(super) fn withdraw_saved(&mut self) -> Result<(), AgentError> {
        let withdrawn = std::mem::take(&mut self.withdrawn);
        for path in &withdrawn {
            let dropped = self.core.store.forget_versions(path)?;
            let mut showing: BTreeSet<String> = self.quotes.linking_to(path).into_iter().collect();
            if let Some(title) = self.quotes.searchable_title(path).map(str::to_string) {
                showing.extend(self.pages_holding(title.as_bytes())?);
            }
            self.quotes.forget(path);
            showing.remove(path);
            let mut asked = 0;
            for p in &showing {
                if self.core.inventory.get(p).is_none() {
                    continue;
                }
                if let Some(t) = self.pages.get_mut(p) {
                    t.urgent = true;
                    t.whole = true;
                    self.quoting.insert(p.clone());
                    asked += 1;
                }
            }
            self.stats.withdrawals += 1;
            tracing::info!(
                "withdrawn: {path} ({dropped} kept versions dropped); {asked} pages that showed it are checked again"
            );
        }
        if !withdrawn.is_empty() {
            self.withdraw_snapshots();
        }
        for p in std::mem::take(&mut self.purge_after_flush) {
            if let Some(e) = self.core.inventory.get(&p) {
                let keep = e.sha256;
                let dropped = self.core.store.forget_versions_except(&p, &keep)?;
                if dropped > 0 {
                    tracing::info!(
                        "{p}: {dropped} older versions dropped (they showed a page withdrawn)"
                    );
                }
            }
        }
        Ok(())
    }

    /// The listed pages whose current kept version holds `text`.
    fn pages_holding(&self, text: &[u8]) -> Result<Vec<String>, AgentError> {
        let mut out = Vec::new();
        for (path, entry) in self.core.inventory.iter().take(MAX_TITLE_SCAN) {
            if let Some(body) = self.core.store.version(path, &entry.sha256)?
                && memchr::memmem::find(&body, text).is_some()
            {
                out.push(path.to_string());
            }
        }
        Ok(out)
    }

    /// Removes every snapshot (and ResourceSync dump) the agent serves: they may hold what
    /// left. A build under way is discarded when it ends; the next waits for the pages that
    /// showed what left to be checked again.
    fn withdraw_snapshots(&mut self) {
        self.withdrawals_seen += 1;
        let removed = crate::publish::snapshot::remove_all(&self.core.config.out)
            + crate::publish::resource_dump::remove_all(&self.core.config.out);
        if self.core.publisher.snapshot().is_some() || removed > 0 {
            tracing::info!("{removed} snapshot files removed: they may hold what was withdrawn");
        }
        self.core.publisher.set_snapshot(None);
        self.republish = true;
    }
}

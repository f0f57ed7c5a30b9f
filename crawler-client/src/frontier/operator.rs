//! What an operator set on hosts from the console: hosts blocked (their URLs stay queued, none
//! is fetched), and delays that replace the politeness policy's (robots.txt's `Crawl-delay`
//! still wins when it asks for more). Kept by origin, so a host not met yet is set too.

use super::Frontier;
use super::host::Host;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The operator's settings by origin.
#[derive(Debug, Default)]
pub(super) struct OperatorSet {
    blocked: HashSet<String>,
    delays: HashMap<String, Duration>,
}

impl OperatorSet {
    /// Gives a host met now what was set for its origin.
    pub(super) fn apply(&self, host: &mut Host) {
        if self.blocked.is_empty() && self.delays.is_empty() {
            return;
        }
        host.blocked = self.blocked.contains(&host.origin);
        host.delay_set = self.delays.get(&host.origin).copied();
    }
}

impl Frontier {
    /// Blocks or unblocks the host with `origin` (known or not yet).
    pub(crate) fn set_blocked(&mut self, origin: &str, blocked: bool) {
        if blocked {
            self.operator.blocked.insert(origin.to_string());
        } else {
            self.operator.blocked.remove(origin);
        }
        if let Some(id) = self.id_of(origin)
            && let Some(h) = self.hosts.get_mut(&id)
        {
            h.blocked = blocked;
            if !blocked {
                self.schedule(id);
            }
        }
    }

    /// Sets the delay of the host with `origin`, or gives it back to the policy (`None`).
    pub(crate) fn set_delay(&mut self, origin: &str, delay: Option<Duration>) {
        match delay {
            Some(d) => self.operator.delays.insert(origin.to_string(), d),
            None => self.operator.delays.remove(origin),
        };
        if let Some(id) = self.id_of(origin)
            && let Some(h) = self.hosts.get_mut(&id)
        {
            h.delay_set = delay;
        }
    }

    /// Whether a blocked host still has URLs waiting.
    pub(crate) fn blocked_with_work(&self) -> bool {
        self.hosts.values().any(|h| h.blocked && h.has_queue())
    }
}

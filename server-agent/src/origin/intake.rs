//! What origin mode takes in: the pages its sitemaps, access logs and pings name, under the
//! rules of what may be published; and what a write to the site (seen in the access log)
//! makes it check at once.

use super::signals::Seen;
use super::{OriginAgent, PING_DISCOVERY_GAP, RETRY_UNREACHABLE, discover, schedule::Tracked};
use crate::access_log::line::LogLine;
use crate::agent::AgentError;
use crate::privacy::RobotsTxt;
use std::collections::HashSet;
use std::time::Instant;

/// Pages linked from the home page and each feed checked after a write, at most.
const MAX_LINKED_CHECKS: usize = 50;

impl OriginAgent {
    /// Reads the sitemaps and robots.txt again, and the access logs, taking new pages in.
    pub fn discover(&mut self) -> Result<usize, AgentError> {
        self.last_discovery = Some(Instant::now());
        let robots = discover::robots_txt(&self.client, &mut self.pacer);
        let robots_rule = match &robots {
            discover::Robots::Body(b) => RobotsTxt::Bytes(b),
            discover::Robots::Absent => RobotsTxt::Absent,
            discover::Robots::Refused(why) => RobotsTxt::Unreadable(why.clone()),
            discover::Robots::Unreachable(why) => {
                // A server down for a while changes nothing of what is published: the rules
                // and pages known stay, and the sitemaps are read again soon.
                tracing::warn!(
                    "{} cannot be reached ({why}): what is published stays; asked again in {} s",
                    self.client.origin(),
                    RETRY_UNREACHABLE.as_secs()
                );
                self.unreachable = Some(why.clone());
                self.next_discovery = Instant::now() + RETRY_UNREACHABLE;
                return Ok(0);
            }
        };
        self.unreachable = None;
        self.core.filter = Self::filter_with(&self.core.config, robots_rule, self.access.clone())?;
        if let discover::Robots::Refused(why) = &robots {
            tracing::error!(
                "{}/robots.txt cannot be read ({why}): nothing new is published until it can be",
                self.client.origin()
            );
        }
        let body = match &robots {
            discover::Robots::Body(b) => Some(b.as_slice()),
            _ => None,
        };
        let roots = discover::sitemap_roots(&self.core.config.base_url, body);
        let found = discover::walk(
            &self.client,
            (&self.core.config.base_url, &self.settings.queries),
            roots,
            self.settings.max_urls,
            &mut self.pacer,
        );
        for p in &found.problems {
            tracing::warn!("sitemaps: {p}");
        }
        if !found.refused.is_empty() {
            tracing::warn!(
                "sitemaps name {} URLs that are not pages of {} (the first: {} {})",
                found.refused.len(),
                self.core.config.base_url,
                found.refused[0].0,
                found.refused[0].1
            );
        }
        let named: HashSet<String> = found.paths.iter().cloned().collect();
        for p in &named {
            // A sitemap names it: no longer one only editors were seen reading.
            self.signals
                .released(&format!("{}{p}", self.core.config.base_url.path()));
        }
        if std::mem::take(&mut self.write_pending) {
            self.after_write(&named);
        }
        self.in_sitemaps = named;
        let paths = found
            .paths
            .into_iter()
            .filter(|p| self.allowed(p).is_ok())
            .collect();
        let mut added = self.take_in(paths);
        added += self.read_logs();
        self.next_discovery = Instant::now() + self.settings.discover_every;
        Ok(added)
    }

    /// Whether the rules (robots.txt, the globs, the names) let `path` be published, its query
    /// included.
    pub(super) fn allowed(&self, path: &str) -> Result<(), String> {
        self.core
            .filter
            .check_file(&crate::urls::request_form(path))
            .map_err(|why| why.to_string())
    }

    /// Takes `paths` in as pages to check, as far as the budget of pages allows; returns how
    /// many were new.
    fn take_in(&mut self, paths: Vec<String>) -> usize {
        let mut added = 0;
        for p in paths {
            if self.pages.contains_key(&p) {
                continue;
            }
            if self.pages.len() >= self.settings.max_urls {
                tracing::warn!(
                    "{} pages tracked, the most --origin-max-urls allows: {p} and later ones wait",
                    self.pages.len()
                );
                break;
            }
            self.pages.insert(p, Tracked::default());
            added += 1;
        }
        added
    }

    /// Reads what the access logs say since the last reading: pages visitors read (taken in,
    /// unless only editors read them), and writes to the site (which start the checks of what a
    /// change could have touched).
    pub(super) fn read_logs(&mut self) -> usize {
        let mut paths = Vec::new();
        let now = self.core.clock.now().timestamp();
        let source = self.client.source();
        // The agent's own requests come from its source address (older ones said so).
        let own = |l: &LogLine| {
            source.is_some_and(|s| l.client == s.to_string())
                || l.agent
                    .as_deref()
                    .is_some_and(|a| a.contains("webcoop-agent/"))
        };
        let lines = self
            .core
            .popularity
            .as_mut()
            .map(|p| p.read_lines())
            .unwrap_or_default();
        let mut wrote = false;
        for line in &lines {
            match self.signals.observe(line, now, own) {
                Seen::Page(t) => {
                    if let Ok(p) = crate::urls::logged_path(
                        &self.core.config.base_url,
                        &t,
                        &self.settings.queries,
                    ) {
                        paths.push(p);
                    }
                }
                Seen::Write => wrote = true,
                Seen::Held | Seen::Nothing => {}
            }
        }
        self.count_reads(&lines, now);
        if wrote {
            self.write_seen();
        }
        paths.retain(|p| self.allowed(p).is_ok());
        self.take_in(paths)
    }

    /// Counts the reads among `lines`, of pages published now.
    fn count_reads(&mut self, lines: &[LogLine], now: i64) {
        let Some(popularity) = self.core.popularity.as_mut() else {
            return;
        };
        let (base, queries, inventory) = (
            &self.core.config.base_url,
            &self.settings.queries,
            &self.core.inventory,
        );
        let resolve = |target: &str| {
            let p = crate::urls::logged_path(base, target, queries).ok()?;
            inventory.get(&p).is_some().then_some(p)
        };
        let activity = self.core.activity.clone();
        let verified = |c: &str| activity.as_ref().is_some_and(|a| a.is_verified_client(c));
        for line in lines {
            popularity.observe(line, now, &resolve, &verified);
        }
    }

    /// Someone wrote to the site: the sitemaps are read again at once (what left them is
    /// checked then), and the pages that show what changes (the home page, the feeds and what
    /// they link to) are checked whole, before any other.
    fn write_seen(&mut self) {
        self.stats.writes += 1;
        tracing::info!(
            "a write to the site in the access log: checking what it could have touched"
        );
        self.write_pending = true;
        let now = Instant::now();
        let soonest = self
            .last_discovery
            .map_or(now, |t| (t + PING_DISCOVERY_GAP).max(now));
        self.next_discovery = self.next_discovery.min(soonest);
        let showcases: Vec<String> = self
            .pages
            .keys()
            .filter(|p| p.is_empty() || p.split('/').any(|s| s == "feed"))
            .cloned()
            .collect();
        let mut touched: HashSet<String> = HashSet::new();
        for s in &showcases {
            touched.insert(s.clone());
            touched.extend(
                self.quotes
                    .links_from(s)
                    .into_iter()
                    .take(MAX_LINKED_CHECKS),
            );
        }
        for p in touched {
            if let Some(t) = self.pages.get_mut(&p) {
                t.urgent = true;
                t.whole = true;
            }
        }
    }

    /// After a write: pages the sitemaps named before and no longer name are checked whole at
    /// once (a post trashed or made private leaves them).
    fn after_write(&mut self, named: &HashSet<String>) {
        let vanished: Vec<String> = self
            .in_sitemaps
            .difference(named)
            .filter(|p| self.core.inventory.get(p.as_str()).is_some())
            .cloned()
            .collect();
        for p in vanished {
            if let Some(t) = self.pages.get_mut(&p) {
                t.urgent = true;
                t.whole = true;
            }
        }
    }

    /// Marks pages named by a ping to be checked before any other; returns how many were
    /// taken (paths of this site that may be published).
    pub fn urgent(&mut self, paths: &[String]) -> usize {
        let mut taken = 0;
        for p in paths {
            if self.allowed(p).is_err() {
                continue;
            }
            if !self.pages.contains_key(p) && self.pages.len() >= self.settings.max_urls {
                continue;
            }
            self.pages.entry(p.clone()).or_default().urgent = true;
            taken += 1;
        }
        taken
    }
}

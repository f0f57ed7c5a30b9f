//! Following sitemap indexes without I/O: the caller fetches, the walk decides what next.
//!
//! The walk bounds everything a hostile or broken site can make it do: index nesting (depth),
//! the number of files fetched, cycles (each URL is fetched once), and the URLs it accepts
//! (within a scope, by default the directory of the root sitemap, as the protocol requires).

use super::{Leniency, SitemapDocument, SitemapLimits, UrlEntry, parse};
use crate::error::ParseError;
use std::collections::{HashSet, VecDeque};
use url::Url;

/// Bounds of a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Deepest level fetched: the root is level 0, files listed by it level 1, and so on.
    /// The protocol forbids indexes of indexes, but sites nest them; 2 tolerates one level.
    pub max_depth: usize,
    /// Most files fetched in one walk.
    pub max_sitemaps: usize,
    /// Limits of each file.
    pub file: SitemapLimits,
    /// How each file is read.
    pub leniency: Leniency,
}

impl Default for WalkLimits {
    fn default() -> Self {
        WalkLimits {
            max_depth: 2,
            max_sitemaps: 1_000,
            file: SitemapLimits::default(),
            leniency: Leniency::SkipBadEntries,
        }
    }
}

/// A sitemap the caller should fetch and hand back with [`SitemapWalk::feed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSitemap {
    /// Where it is.
    pub url: Url,
    /// Its level (0 for the root).
    pub depth: usize,
}

/// Something the walk could not use.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkProblem {
    /// A file that did not parse.
    Unreadable {
        /// The file.
        url: Url,
        /// Why.
        error: ParseError,
    },
    /// A file the caller could not fetch.
    FetchFailed {
        /// The file.
        url: Url,
        /// Why, in the caller's words.
        reason: String,
    },
    /// An index listed below the depth limit; its children were not queued.
    TooDeep {
        /// The index.
        url: Url,
        /// Its level.
        depth: usize,
    },
    /// The file limit was reached; this many listed files were not fetched.
    TooManySitemaps {
        /// Files left out.
        left_out: usize,
    },
    /// Entries of a file that failed in lenient mode were dropped or trimmed.
    BadEntries {
        /// The file.
        url: Url,
        /// How many entries had problems.
        count: usize,
    },
}

/// The state of one walk from a root sitemap.
#[derive(Debug)]
pub struct SitemapWalk {
    queue: VecDeque<PendingSitemap>,
    seen: HashSet<Url>,
    scope: String,
    origin: url::Origin,
    limits: WalkLimits,
    handed_out: usize,
    left_out: usize,
    problems: Vec<WalkProblem>,
    out_of_scope: usize,
}

impl SitemapWalk {
    /// A walk from `root`, accepting URLs under the root's directory.
    pub fn new(root: Url, limits: WalkLimits) -> Self {
        let mut scope = root.clone();
        scope.set_query(None);
        scope.set_fragment(None);
        let dir_end = scope.path().rfind('/').map_or(1, |i| i + 1);
        let dir = scope.path()[..dir_end].to_string();
        scope.set_path(&dir);
        let origin = root.origin();
        let mut seen = HashSet::new();
        seen.insert(root.clone());
        SitemapWalk {
            queue: VecDeque::from([PendingSitemap {
                url: root,
                depth: 0,
            }]),
            seen,
            scope: scope.into(),
            origin,
            limits,
            handed_out: 0,
            left_out: 0,
            problems: Vec::new(),
            out_of_scope: 0,
        }
    }

    /// Accepts URLs under `scope` instead (e.g. the site root, for a sitemap that robots.txt
    /// names: the protocol lets robots.txt vouch for a whole host).
    pub fn with_scope(mut self, scope: &Url) -> Self {
        self.scope = scope.as_str().to_string();
        self
    }

    /// The next file to fetch, if any.
    pub fn next_fetch(&mut self) -> Option<PendingSitemap> {
        if self.handed_out >= self.limits.max_sitemaps {
            if !self.queue.is_empty() {
                self.left_out += self.queue.len();
                self.queue.clear();
                self.problems
                    .retain(|p| !matches!(p, WalkProblem::TooManySitemaps { .. }));
                self.problems.push(WalkProblem::TooManySitemaps {
                    left_out: self.left_out,
                });
            }
            return None;
        }
        let next = self.queue.pop_front()?;
        self.handed_out += 1;
        Some(next)
    }

    /// Hands back the body of `pending`; returns the in-scope URL entries it lists (none for
    /// an index, whose children are queued instead). Problems are recorded, never fatal.
    pub fn feed(&mut self, pending: &PendingSitemap, body: &[u8]) -> Vec<UrlEntry> {
        let parsed = match parse(body, &self.limits.file, self.limits.leniency) {
            Ok(p) => p,
            Err(error) => {
                self.problems.push(WalkProblem::Unreadable {
                    url: pending.url.clone(),
                    error,
                });
                return Vec::new();
            }
        };
        if !parsed.problems.is_empty() {
            self.problems.push(WalkProblem::BadEntries {
                url: pending.url.clone(),
                count: parsed.problems.len(),
            });
        }
        match parsed.document {
            SitemapDocument::UrlSet(entries) => {
                let before = entries.len();
                let kept: Vec<UrlEntry> = entries
                    .into_iter()
                    .filter(|e| e.loc.as_str().starts_with(&self.scope))
                    .collect();
                self.out_of_scope += before - kept.len();
                kept
            }
            SitemapDocument::Index(children) => {
                if pending.depth >= self.limits.max_depth {
                    self.problems.push(WalkProblem::TooDeep {
                        url: pending.url.clone(),
                        depth: pending.depth,
                    });
                    return Vec::new();
                }
                for child in children {
                    if child.loc.origin() != self.origin {
                        self.out_of_scope += 1;
                        continue;
                    }
                    if self.seen.insert(child.loc.clone()) {
                        self.queue.push_back(PendingSitemap {
                            url: child.loc,
                            depth: pending.depth + 1,
                        });
                    }
                }
                Vec::new()
            }
        }
    }

    /// Records that `pending` could not be fetched.
    pub fn fetch_failed(&mut self, pending: &PendingSitemap, reason: impl Into<String>) {
        self.problems.push(WalkProblem::FetchFailed {
            url: pending.url.clone(),
            reason: reason.into(),
        });
    }

    /// What went wrong so far.
    pub fn problems(&self) -> &[WalkProblem] {
        &self.problems
    }

    /// URLs (and child sitemaps) dropped for being outside the scope.
    pub fn out_of_scope(&self) -> usize {
        self.out_of_scope
    }

    /// Files handed out so far.
    pub fn fetched(&self) -> usize {
        self.handed_out
    }
}

//! Judging again: the web server's word on a file holds until the file changes, until the
//! rules that govern it change, or until its turn comes on a rolling schedule that asks about
//! every file within `--judge-every`. Asking again reads nothing: the server's answer is
//! compared with the digest the state holds, and only a file whose verdict turns public is
//! read (to be listed and versioned as a new file).

use super::{Agent, AgentError, Pass};
use crate::judge::{Ask, Verdict};
use crate::scan::Stat;
use crate::store::{Batch, RefusedFile};
use std::collections::BTreeSet;
use webcoop_protocol::validator::Sha256Digest;

/// What one round of judging again did.
#[derive(Debug, Default)]
pub struct JudgedAgain {
    /// Files asked about.
    pub asked: usize,
    /// Changes logged (files that left or joined the listing).
    pub changes: usize,
    /// Why the web server could not be asked, when it could not.
    pub unreachable: Option<String>,
}

impl Agent {
    /// A file as it was when it was last judged (its stat and digest), published or refused.
    fn as_judged(&self, path: &str, public: bool) -> Option<(Stat, Sha256Digest)> {
        let (size, mtime_ns, ctime_ns, sha256) = if public {
            let e = self.core.inventory.get(path)?;
            (e.size, e.mtime_ns, e.ctime_ns, e.sha256)
        } else {
            let r = self.refused.get(path)?;
            (r.size, r.mtime_ns, r.ctime_ns, r.sha256)
        };
        let stat = Stat {
            size,
            mtime_ns,
            ctime_ns,
            links: 0,
        };
        Some((stat, sha256))
    }

    /// Asks the web server again about at most `limit` of the files judged longest ago (those
    /// whose rules changed first). A file changed on disk since it was judged is looked at
    /// whole instead.
    pub fn judge_again(&mut self, limit: usize) -> Result<JudgedAgain, AgentError> {
        let due = self.core.store.due_for_judging(limit, self.held.cursor())?;
        // Read to the end: the marks are saved and the schedule starts over.
        let read_all = self.held.cursor().is_some() && !due.iter().any(|d| d.public);
        if let Some(last) = due.iter().rfind(|d| d.public) {
            self.held.handed_out(last.judged, &last.path);
        }
        let forced = due.iter().filter(|d| d.judged == 0).count();
        self.forced_pending = forced > 0 && forced == limit;
        let mut asks = Vec::new();
        let mut listed = Vec::new();
        let mut look = BTreeSet::new();
        for d in due {
            let stat = std::fs::metadata(self.core.config.docroot.join(&d.path))
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|m| Stat::of(&m));
            let known = self.as_judged(&d.path, d.public);
            match (stat, known) {
                (Some(now), Some((then, sha256))) if now == then => {
                    asks.push(Ask {
                        path: d.path,
                        sha256,
                        size: then.size,
                    });
                    listed.push((d.public, then));
                }
                _ => {
                    look.insert(d.path);
                }
            }
        }
        let asked = asks.len();
        let verdicts = if asks.is_empty() {
            Vec::new()
        } else {
            self.judge.judge(asks.clone())
        };
        let mut pass: Pass = self.begin(true);
        let mut batch = Batch::default();
        for ((ask, (public, stat)), verdict) in asks.into_iter().zip(listed).zip(verdicts) {
            match (public, verdict) {
                (_, Verdict::Unknown(why)) => {
                    pass.result.unreachable.get_or_insert(why);
                }
                (true, Verdict::Public) => self.held.hold(ask.path),
                (true, Verdict::Refused(why)) => {
                    self.refuse(&ask.path, stat, ask.sha256, why, &mut pass, &mut batch)
                }
                (false, Verdict::Refused(why)) => {
                    let reason = why.reason();
                    if self
                        .refused
                        .get(ask.path.as_str())
                        .is_some_and(|r| r.reason != reason)
                    {
                        tracing::info!("still not published, {reason}: {}", ask.path);
                    }
                    batch.refusals.push((
                        ask.path,
                        RefusedFile {
                            size: stat.size,
                            mtime_ns: stat.mtime_ns,
                            ctime_ns: stat.ctime_ns,
                            sha256: ask.sha256,
                            reason,
                        },
                    ));
                }
                // Public now: read and listed as any new file is.
                (false, Verdict::Public) => {
                    look.insert(ask.path);
                }
            }
        }
        // Unanswered files are asked about again from the start; held marks are saved when
        // due, and at once when the server did not answer (the cursor must go back).
        if read_all || pass.result.unreachable.is_some() || self.held.due(std::time::Instant::now())
        {
            batch.rejudged.extend(self.held.take());
        }
        let mut changes = self.save(batch, pass.now)?.len();
        if let Some(a) = &self.core.activity {
            a.scanned_some(std::mem::take(&mut pass.excluded));
        }
        let mut unreachable = pass.result.unreachable.take();
        if !look.is_empty() && unreachable.is_none() {
            let looked = self.look_again(&look, true)?;
            changes += looked.changes.len();
            unreachable = looked.unreachable;
        }
        self.note_judging(asked, unreachable.as_deref());
        Ok(JudgedAgain {
            asked,
            changes,
            unreachable,
        })
    }

    /// Tells the console how the web server answered: `asked` files, or not at all (why).
    pub(super) fn note_judging(&self, asked: usize, unreachable: Option<&str>) {
        let Some(a) = &self.core.activity else { return };
        let server = self.judge.origin();
        match unreachable {
            Some(why) => a.judge_unreachable(
                server,
                crate::store::to_ms(self.core.clock.now()),
                why,
                self.waiting.len(),
            ),
            None if asked > 0 => a.judged(server, asked as u64, self.waiting.len()),
            None => {}
        }
    }

    /// Whether files wait to be judged again before the others (their rules changed).
    pub(crate) fn judging_forced(&self) -> bool {
        self.forced_pending
    }

    /// Asks for every file to be judged again first (the server's configuration changed).
    pub(crate) fn judge_all_again(&mut self) -> Result<(), AgentError> {
        self.judge_first_under("")?;
        self.forced_pending = true;
        Ok(())
    }

    /// Asks for the files at or under `dir` to be judged again before the others. The held
    /// marks are saved first: saved after, they would record as judged a file whose rules
    /// have just changed.
    pub(super) fn judge_first_under(&mut self, dir: &str) -> Result<(), AgentError> {
        self.save_held_marks()?;
        self.core.store.judge_again_under(dir)?;
        Ok(())
    }

    /// Saves the record of the files judged again and found as they were, which waits up to
    /// a minute (the watch loop saves it as it stops).
    pub fn save_held_marks(&mut self) -> Result<(), AgentError> {
        let rejudged = self.held.take();
        if !rejudged.is_empty() {
            let batch = Batch {
                rejudged,
                ..Batch::default()
            };
            self.save(batch, self.core.clock.now())?;
        }
        Ok(())
    }

    /// Files the web server refused, as last judged.
    pub fn refused_count(&self) -> usize {
        self.refused.len()
    }

    /// Public and refused files: how many the rolling schedule must cover.
    pub(crate) fn judged_files(&self) -> usize {
        self.core.inventory.len() + self.refused.len()
    }
}

//! One check of one page: asked of the origin (whole when a write may have changed it), and
//! what the answer shows recorded: unchanged, changed, new, changing at every request
//! (volatile parts learned first, [`super::learned`]), or gone (withdrawn: [`super::withdraw`]).

use super::fetch::{Answer, Page, Validators};
use super::learned::{self, Learned, Unlearnable};
use super::{OriginAgent, schedule, volatile};
use crate::activity::Exclusions;
use crate::agent::AgentError;
use crate::content_type;
use crate::inventory::FileEntry;
use crate::store::{LoggedChange, NewVersion, truncate_ms};
use chrono::{DateTime, Utc};
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::delta::summarize;
use webcoop_protocol::validator::Sha256Digest;

/// What asking a page again ends in: the answer to take (and its change digest), or the
/// check's outcome.
enum Asked {
    Page(Page, u64),
    Done(Outcome),
}

impl OriginAgent {
    /// Asks the origin for one page and records what it shows.
    pub(super) fn check(&mut self, path: &str) -> Result<(), AgentError> {
        let listed = self.core.inventory.get(path).cloned();
        // Its rules may have changed since it was taken in (robots.txt, read again).
        if let Err(why) = self.allowed(path) {
            let now = truncate_ms(self.core.clock.now());
            self.remove(path, listed.as_ref(), now, why, true);
            if let Some(t) = self.pages.get_mut(path) {
                t.checked = Some(crate::store::to_ms(now));
                t.urgent = false;
            }
            return Ok(());
        }
        // A page checked because of a write asks whole: a server may keep a validator while
        // the page changes (WordPress's feeds answer 304 after a post leaves them).
        let known = match (&listed, self.pages.get(path)) {
            (Some(_), Some(t)) if t.conditional() && !t.whole => t.validators.clone(),
            _ => Validators::default(),
        };
        let checking_304s = self
            .pages
            .get(path)
            .is_some_and(|t| t.not_modified_streak >= schedule::TRUST_304);
        self.pacer.wait();
        let answer = self.client.get(path, &known);
        let now = truncate_ms(self.core.clock.now());
        let now_ms = crate::store::to_ms(now);
        let previous_check = self.pages.get(path).and_then(|t| t.checked);
        let interval = previous_check.map(|at| (now_ms - at).max(0) as f64 / 1000.0);
        let outcome = match answer {
            Answer::Page(page) => self.take_page(path, page, listed.as_ref(), now)?,
            Answer::NotModified => {
                self.stats.not_modified += 1;
                if let Some(t) = self.pages.get_mut(path) {
                    t.not_modified_streak += 1;
                }
                Outcome::Same
            }
            Answer::Gone => {
                self.remove(path, listed.as_ref(), now, "gone (404 or 410)".into(), true);
                Outcome::Changed
            }
            Answer::Refused(why) => {
                self.remove(path, listed.as_ref(), now, why, true);
                Outcome::Changed
            }
            Answer::Unknown(why) => {
                tracing::warn!("{path}: {why}; asked again later");
                Outcome::Unknown
            }
        };
        if let Some(t) = self.pages.get_mut(path)
            && checking_304s
            && !matches!(outcome, Outcome::Unknown)
        {
            if matches!(outcome, Outcome::Changed) && !t.validators_lie {
                tracing::info!(
                    "{path}: answered 304 although it had changed; its validators are no longer used"
                );
                t.validators_lie = true;
            }
            t.not_modified_streak = 0;
        }
        if !matches!(outcome, Outcome::Unknown) && self.quoting.remove(path) {
            // It showed a page that left: once its versions are saved, the older ones go.
            self.purge_after_flush.push(path.to_string());
        }
        if let Some(t) = self.pages.get_mut(path) {
            t.checked = Some(now_ms);
            t.urgent = false;
            t.whole = false;
            if let (Some(length), Outcome::Same | Outcome::Changed) = (interval, &outcome) {
                t.history
                    .observe(length, matches!(outcome, Outcome::Changed), None);
            }
        }
        Ok(())
    }

    /// Records a page served with 200: unchanged, changed, new, or changing at every request.
    fn take_page(
        &mut self,
        path: &str,
        page: Page,
        listed: Option<&FileEntry>,
        now: DateTime<Utc>,
    ) -> Result<Outcome, AgentError> {
        let ctype = page
            .content_type
            .clone()
            .unwrap_or_else(|| content_type::of_path(path).to_string());
        let text = content_type::is_text(&ctype);
        let digest = self.change_digest(path, &page.body, text);
        if let Some(t) = self.pages.get_mut(path) {
            t.validators = page.validators.clone();
        }
        if listed.is_some_and(|e| e.fast == digest) {
            self.stats.unchanged += 1;
            return Ok(Outcome::Same);
        }
        let (page, digest) = match self.ask_again(path, page, digest, text, listed, now) {
            Asked::Page(page, digest) => (page, digest),
            Asked::Done(outcome) => return Ok(outcome),
        };
        if self.core.baseline_done
            && let Some(prev) = listed
            && self.same_but_for_volatile_parts(path, prev, digest, text)?
        {
            // Its listed digest was taken before those parts were learned.
            let mut entry = prev.clone();
            entry.fast = digest;
            self.batch.upserts.push((path.to_string(), entry, None));
            self.stats.unchanged += 1;
            return Ok(Outcome::Same);
        }
        self.publish(path, &page, (ctype, text, digest), listed, now)?;
        Ok(Outcome::Changed)
    }

    /// A page that differs from its listed version, once the baseline is recorded: asked once
    /// more, so a page that is different at every request (a clock, a counter, a random
    /// quote) is told from a page that changed; the answer to take, or what the check ends in.
    fn ask_again(
        &mut self,
        path: &str,
        page: Page,
        digest: u64,
        text: bool,
        listed: Option<&FileEntry>,
        now: DateTime<Utc>,
    ) -> Asked {
        if !self.core.baseline_done {
            return Asked::Page(page, digest);
        }
        self.pacer.wait();
        let Answer::Page(second) = self.client.get(path, &Validators::default()) else {
            return Asked::Page(page, digest);
        };
        let second_digest = self.change_digest(path, &second.body, text);
        if second_digest == digest {
            return Asked::Page(page, digest);
        }
        match self.third_answer(path, page, second, second_digest, text) {
            Ok((latest, d)) => {
                if let Some(t) = self.pages.get_mut(path) {
                    t.validators = latest.validators.clone();
                }
                if listed.is_some_and(|e| e.fast == d) {
                    self.stats.unchanged += 1;
                    return Asked::Done(Outcome::Same);
                }
                Asked::Page(latest, d)
            }
            Err(e) => {
                let why = format!(
                    "changes at every request ({}; it differs at {})",
                    e.why, e.differs_at
                );
                // Published before: its volatile parts are not learned yet, it did not leave
                // the site. Its last published version stays, and nothing that showed it is
                // checked; unless it showed a page withdrawn, which that version may hold
                // (two edits in a row on WordPress answered three different pages): then it
                // is not published, and nothing of it kept, until it can be told apart.
                if listed.is_some() && !self.quoting.contains(path) {
                    self.keep_published(path, &why);
                    return Asked::Done(Outcome::Same);
                }
                self.remove(path, listed, now, why, false);
                Asked::Done(Outcome::Changed)
            }
        }
    }

    /// A changed or new page published: its entry, its version (text), what it quotes, and
    /// once the baseline is recorded its change announced.
    fn publish(
        &mut self,
        path: &str,
        page: &Page,
        (ctype, text, digest): (String, bool, u64),
        listed: Option<&FileEntry>,
        now: DateTime<Utc>,
    ) -> Result<(), AgentError> {
        let sha256 = Sha256Digest::of(&page.body);
        let size = page.body.len() as u64;
        let changed = match (listed, text) {
            (Some(prev), true) => self
                .core
                .store
                .version(path, &prev.sha256)?
                .map(|old| summarize(&old, &page.body).changed_fraction),
            _ => None,
        };
        let modified = match page.last_modified {
            Some(lm) if !self.core.baseline_done && lm <= now => truncate_ms(lm),
            _ => now,
        };
        let entry = FileEntry {
            size,
            mtime_ns: modified.timestamp_nanos_opt().unwrap_or(0),
            ctime_ns: 0,
            sha256,
            fast: digest,
            modified,
            seen: true,
        };
        let announce = self.core.baseline_done;
        self.batch
            .upserts
            .push((path.to_string(), entry, announce.then_some(modified)));
        if text {
            self.batch
                .versions
                .push(NewVersion::of(path, sha256, &page.body));
            if let Ok(url) = self.core.config.base_url.join(path) {
                self.quotes
                    .record(path, &page.body, &url, &self.core.config.base_url);
            }
        }
        if announce {
            self.stats.changes += 1;
            self.batch.changes.push(LoggedChange {
                seq: 0,
                kind: if listed.is_some() {
                    ChangeKind::Modified
                } else {
                    ChangeKind::Created
                },
                path: path.to_string(),
                time: now,
                sha256: Some(sha256),
                prev_sha256: listed.map(|p| p.sha256),
                size: Some(size),
                content_type: Some(ctype),
                changed,
            });
        }
        if let Some(t) = self.pages.get_mut(path) {
            t.refused = None;
        }
        Ok(())
    }

    /// Two answers moments apart differ: a third tells an edit made between them (the third
    /// agrees with the second) from parts written anew at every request (it differs again).
    /// Only the second kind is learned: a region learned from one edit would hide every later
    /// edit of that region (a feed whose only change is its build date). A one-off difference
    /// is kept as a suspicion, learned only when a later pair differs in the same regions (a
    /// clock of one-second resolution, which two asks straddle now and then). Returns the
    /// answer taken for the page and its change digest, or why it changes at every request.
    fn third_answer(
        &mut self,
        path: &str,
        first: Page,
        second: Page,
        second_digest: u64,
        text: bool,
    ) -> Result<(Page, u64), Unlearnable> {
        self.pacer.wait();
        let third = match self.client.get(path, &Validators::default()) {
            Answer::Page(third) => third,
            // Nothing more to compare: the later answer is the page, and a change.
            _ => return Ok((second, second_digest)),
        };
        let third_digest = self.change_digest(path, &third.body, text);
        if third_digest != second_digest {
            return self
                .learn(path, &third.body, &second.body, text)
                .map(|d| (third, d));
        }
        let Some(suspected) = text
            .then(|| learned::learn(&first.body, &second.body).ok())
            .flatten()
            .filter(|l| !l.masks.is_empty())
        else {
            return Ok((third, third_digest));
        };
        if self.suspected.get(path) != Some(&suspected) {
            self.suspected.insert(path.to_string(), suspected);
            return Ok((third, third_digest));
        }
        self.suspected.remove(path);
        let digest = self
            .learn(path, &third.body, &first.body, text)
            .unwrap_or(third_digest);
        Ok((third, digest))
    }

    /// A page that is no longer published: gone, refused, or changing at every request. Only a
    /// page that stopped being public (`withdrawn`) is withdrawn from everything the agent
    /// serves, the pages that showed it checked again: one that changes at every request is
    /// public still, and checking what links to it spread one unpublished page to every page
    /// of a generated site in turn.
    fn remove(
        &mut self,
        path: &str,
        listed: Option<&FileEntry>,
        now: DateTime<Utc>,
        why: String,
        withdrawn: bool,
    ) {
        if let Some(t) = self.pages.get_mut(path) {
            if t.refused.as_deref() != Some(why.as_str()) {
                tracing::info!("not published, {why}: {path}");
                if let Some(a) = &self.core.activity {
                    let mut e = Exclusions::default();
                    e.add(path, &why);
                    a.scanned_some(e);
                }
            }
            t.refused = Some(why);
            t.validators = Validators::default();
        }
        let Some(old) = listed else {
            return;
        };
        self.stats.changes += 1;
        self.batch.delete(path, old.sha256, now);
        // Withdrawn: once the deletion is saved, nothing the agent serves may carry it.
        if withdrawn {
            self.withdrawn.push(path.to_string());
        }
    }

    /// A published page whose new answers cannot be told from its volatile parts: its last
    /// published version stays, said in the log and the console once for each reason.
    fn keep_published(&mut self, path: &str, why: &str) {
        let note = format!("keeps its last published version: {why}");
        let Some(t) = self.pages.get_mut(path) else {
            return;
        };
        if t.refused.as_deref() == Some(note.as_str()) {
            return;
        }
        tracing::info!("{path} {note}");
        if let Some(a) = &self.core.activity {
            let mut e = Exclusions::default();
            e.add(path, &note);
            a.scanned_some(e);
        }
        t.refused = Some(note);
    }

    /// The change digest of `body` for `path`: the volatile-part rule, and what was learned of
    /// the page. What was learned is dropped when the page no longer has its anchors (its
    /// template changed).
    pub(super) fn change_digest(&mut self, path: &str, body: &[u8], text: bool) -> u64 {
        if !text {
            return volatile::change_digest(body, false);
        }
        let learned = self.learned_of(path);
        match learned.as_ref().map(|l| learned::apply(body, l)) {
            Some(Some(masked)) => volatile::change_digest(&masked, true),
            Some(None) => {
                tracing::info!(
                    "{path}: its template changed; its volatile parts are learned again"
                );
                self.learned.remove(path);
                let _ = self.core.store.set_meta(&learned_key(path), "");
                volatile::change_digest(body, true)
            }
            None => volatile::change_digest(body, true),
        }
    }

    /// Whether the listed version of `path`, with the volatile parts learned of it since it
    /// was listed, has the change digest `digest`: then only those parts differ.
    fn same_but_for_volatile_parts(
        &mut self,
        path: &str,
        listed: &FileEntry,
        digest: u64,
        text: bool,
    ) -> Result<bool, AgentError> {
        if !text {
            return Ok(false);
        }
        let Some(learned) = self.learned_of(path) else {
            return Ok(false);
        };
        let Some(old) = self.core.store.version(path, &listed.sha256)? else {
            return Ok(false);
        };
        Ok(learned::apply(&old, &learned)
            .is_some_and(|masked| volatile::change_digest(&masked, true) == digest))
    }

    fn learned_of(&mut self, path: &str) -> Option<Learned> {
        if let Some(l) = self.learned.get(path) {
            return Some(l.clone());
        }
        let text = self.core.store.meta(&learned_key(path)).ok().flatten()?;
        let l: Learned = serde_json::from_str(&text).ok()?;
        self.learned.insert(path.to_string(), l.clone());
        Some(l)
    }

    /// Two answers moments apart differ: learns where, and returns the digest of `first` with
    /// what was learned, or why the page changes at every request.
    pub(super) fn learn(
        &mut self,
        path: &str,
        first: &[u8],
        second: &[u8],
        text: bool,
    ) -> Result<u64, Unlearnable> {
        if !text {
            return Err(Unlearnable {
                why: "not text".into(),
                differs_at: String::new(),
            });
        }
        let l = learned::learn(first, second)?;
        tracing::info!(
            "{path}: {} parts differ from one request to the next; they do not count as changes",
            l.masks.len()
        );
        if let Ok(json) = serde_json::to_string(&l) {
            let _ = self.core.store.set_meta(&learned_key(path), &json);
        }
        self.learned.insert(path.to_string(), l);
        Ok(self.change_digest(path, first, true))
    }
}

/// Where what was learned of `path` is kept in the state.
fn learned_key(path: &str) -> String {
    format!("volatile:{path}")
}

/// What a check showed.
pub(super) enum Outcome {
    /// The page is as listed.
    Same,
    /// It changed (or came, or went).
    Changed,
    /// Nothing could be concluded.
    Unknown,
}

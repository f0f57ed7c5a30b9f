//! A final response recorded: archived (as a revisit when its content is a duplicate), its
//! redirect and links queued, what it teaches learnt (OPIC cash and history, the change rate,
//! the next visit), its site's claim weighed, and its page row and log line written.

use super::crawl_log::Entry;
use super::{CrawlError, Engine};
use crate::analyze::{Analysis, Link};
use crate::archive::warc::{self, RevisitProfile};
use crate::fetch::outcome::{DeltaUse, Fetched, RecordSlot, Source};
use crate::frontier::shared::TrackedPage;
use crate::ids::Fp;
use crate::importance::opic::interpolate;
use crate::refresh::change_rate::ChangeHistory;
use crate::state::{KnownPage, PageRecord, Queued};
use chrono::DateTime;
use std::time::Duration;

/// What a successful visit showed, for [`Engine::learn`].
pub(super) struct Visit<'a> {
    pub(super) at: i64,
    pub(super) changed: bool,
    pub(super) last_modified: Option<&'a str>,
    pub(super) known: Option<&'a KnownPage>,
    /// Read from a site's snapshot, in the snapshot's order rather than the links': no cash
    /// has reached it yet, so its importance starts at the even share of every known URL.
    pub(super) from_snapshot: bool,
}

/// The log's words for what became of a delta.
fn delta_note(d: &DeltaUse) -> String {
    match d {
        DeltaUse::Applied(bytes) => format!("delta applied and verified ({bytes} bytes)"),
        DeltaUse::Pushed => super::crawl_log::PUSHED_INLINE.into(),
        DeltaUse::Whole => "delta asked, whole body sent".into(),
        DeltaUse::Fallback(why) => format!("delta not used: {why}"),
    }
}

/// The crawl log's note on a recorded response: why a redirect was not followed, or what
/// the content was (a duplicate, unchanged, undecodable, cut), how a delta was used, and
/// whether it was replayed.
fn note(
    redirect: Option<String>,
    f: &Fetched,
    duplicate_of: Option<&str>,
    source: Source,
) -> String {
    let mut note = redirect.unwrap_or_else(|| match (duplicate_of, f.unchanged) {
        (Some(d), _) => format!("duplicate of {d}"),
        (None, true) => "unchanged".into(),
        _ if f.analysis.undecodable => "undecodable content".into(),
        _ if f.truncated => "truncated".into(),
        _ => String::new(),
    });
    if let Some(d) = &f.delta {
        note.push_str(if note.is_empty() { "" } else { "; " });
        note.push_str(&delta_note(d));
    }
    if source.in_a_document() {
        note.push_str(if note.is_empty() { "" } else { "; " });
        note.push_str(if source == Source::Snapshot {
            super::crawl_log::FROM_SNAPSHOT
        } else {
            super::crawl_log::FROM_BATCH
        });
    }
    if source == Source::Replayed {
        note.push_str(if note.is_empty() {
            "replayed"
        } else {
            " (replayed)"
        });
    }
    // A page not read as UTF-8 says so: its links were read in another encoding.
    if let Some(encoding) = f
        .analysis
        .encoding
        .as_deref()
        .filter(|e| !e.starts_with("UTF-8;"))
    {
        note.push_str(if note.is_empty() { "" } else { "; " });
        note.push_str("encoding ");
        note.push_str(encoding);
    }
    note
}

/// The class of a status for the fetch counter.
fn status_class(status: u16) -> &'static str {
    match status {
        304 => "304",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

impl Engine {
    /// Archives and records a final response, and queues what it leads to.
    pub(super) fn record_page(
        &mut self,
        job: &Queued,
        f: Fetched,
        elapsed: Duration,
        source: Source,
    ) -> Result<(), CrawlError> {
        let ok = (200..300).contains(&f.status);
        let found = self.find_duplicate(job, &f)?;
        let duplicate_of = f
            .refers_to
            .clone()
            .filter(|u| *u != job.url)
            .or(found.clone());
        let redirect = self.follow_redirect(job, &f.analysis);
        // A link held because the site's listing said nothing was there, fetched to check.
        if self.coop.checks_absence(job.fp) {
            let duplicate = duplicate_of.is_some();
            self.with_coop(|c, r| c.absence_checked(r, job.fp, f.status, duplicate));
        }
        let mut children = Vec::new();
        if ok && !f.unchanged && duplicate_of.is_none() {
            // The feeds a page names are read as feeds where cooperation reads them, else
            // followed as links like any other.
            let feeds = &f.analysis.feeds;
            let followed_feeds = if self.coop.reads_feeds() {
                if !feeds.is_empty() {
                    self.with_coop(|c, r| c.page_feeds(r, job.host, feeds));
                }
                &[][..]
            } else {
                &feeds[..]
            };
            for link in f.analysis.links.iter().chain(followed_feeds) {
                self.push(link, job.depth + 1, 0);
                children.push(link.fp);
                self.shard_paid(link);
                if let Some(fleet) = self.fleet.as_mut()
                    && let Some(host) = self.frontier.id_of(link.origin())
                {
                    fleet.children.push((link.fp, host));
                }
            }
        }
        let (importance, changes_seen) = if ok || f.status == 304 {
            self.visited(job, &f, &children, source)
        } else {
            (None, None)
        };
        let note = note(redirect, &f, duplicate_of.as_deref(), source);
        self.log.write(&Entry::response(job, &f, elapsed, &note));
        let mut record = f.record;
        if let (Some(original), RecordSlot::New(_)) = (&found, &record) {
            record = RecordSlot::New(warc::revisit(
                &job.url,
                f.fetched_at,
                &f.http_head,
                RevisitProfile::IdenticalPayloadDigest,
                Some(&f.payload_digest),
                (original, None),
                self.settings.warc_level,
            ));
        }
        if let Some(received) = f.received {
            // What the page was made from goes first: the page's record refers to it.
            self.append(RecordSlot::New(received))?;
        }
        let pos = self.append(record)?;
        let a: &Analysis = &f.analysis;
        let content = (ok && !f.unchanged && duplicate_of.is_none() && !f.truncated)
            .then(|| (pos.file.clone(), pos.offset));
        let at = f.fetched_at.timestamp_millis();
        // A page read from a snapshot crossed no wire of its own: the snapshot's bytes count.
        self.count_response(f.status, if source.in_a_document() { 0 } else { f.size });
        self.unsaved.finished(
            job.seq,
            PageRecord {
                url: job.url.clone(),
                fp: job.fp,
                host: job.host,
                depth: job.depth,
                status: Some(f.status),
                error: None,
                fetched_at: at,
                // Weak validators are not kept for the next conditional request: it would be
                // answered 304 for a second edit made within the same second.
                etag: a.etag.clone().filter(|_| !a.weak_validators),
                last_modified: a.last_modified.clone().filter(|_| !a.weak_validators),
                content_type: a.media_type.clone(),
                size: Some(f.size),
                digest: a.digest,
                duplicate_of,
                redirect_to: a.location.as_ref().map(|l| l.to_string()),
                warc: Some((pos.file, pos.offset)),
                changed: f.changed,
                importance,
                changes_seen,
                validator: a.validator.clone(),
                content,
                gone: false,
                disowned: false,
            },
        );
        Ok(())
    }

    /// A response counted: in the metrics, this run's figures and the page budget.
    fn count_response(&mut self, status: u16, size: u64) {
        let class = status_class(status);
        self.metrics.fetch(class);
        self.metrics.bytes.inc_by(size);
        self.run.response(size, matches!(class, "4xx" | "5xx"));
        self.fetched_total += 1;
    }

    /// Queues where a redirect points, within the redirect limit and the crawl's policy;
    /// returns why it was not followed.
    fn follow_redirect(&mut self, job: &Queued, a: &Analysis) -> Option<String> {
        let loc = a.location.as_ref()?;
        if job.hops >= self.settings.max_redirects {
            return Some(format!(
                "more than {} redirects",
                self.settings.max_redirects
            ));
        }
        match self.ctx.policy.admit(loc, job.depth) {
            Ok(()) => {
                self.push(&Link::to(loc), job.depth, job.hops + 1);
                None
            }
            Err(why) => Some(format!("redirect not followed ({why:?})")),
        }
    }

    /// A successful visit (2xx or 304): what it teaches, and the site's claim weighed.
    #[allow(clippy::type_complexity)]
    fn visited(
        &mut self,
        job: &Queued,
        f: &Fetched,
        children: &[Fp],
        source: Source,
    ) -> (Option<(f64, f64)>, Option<(String, f64)>) {
        let a = &f.analysis;
        let visit = Visit {
            at: f.fetched_at.timestamp_millis(),
            changed: f.changed,
            last_modified: a.last_modified.as_deref(),
            known: f.known.as_ref(),
            from_snapshot: source == Source::Snapshot,
        };
        let learnt = self.learn(job, &visit, children);
        if f.known.is_some() {
            self.run.visited_again(f.changed);
        }
        let delta = f.delta.as_ref();
        // A page the site handed over (a snapshot, a batch) proves nothing of the site's
        // claims: only a visit weighs them.
        let live = !matches!(source, Source::Snapshot | Source::Batch);
        self.with_coop(|c, r| {
            let seen = (f.changed, a.validator.as_deref(), f.truncated);
            c.visited(r, job.host, job.fp, seen, delta, live);
            if let Some((hub, topic)) = &a.hub {
                c.page_hub(r, job.host, hub, topic);
            }
        });
        learnt
    }

    /// The page whose content this new response repeats, found by its digest (in this
    /// batch or in the state): it is then archived as a revisit of that page. The digest
    /// (xxh3, 64 bits, which a site can make collide) only finds a candidate; the content's
    /// SHA-256 decides, so that no site can have its page archived as another's copy. A page
    /// without one (cut at the size limit, or undecodable) is nobody's duplicate or original.
    fn find_duplicate(&mut self, job: &Queued, f: &Fetched) -> Result<Option<String>, CrawlError> {
        let ok = (200..300).contains(&f.status);
        let said = f.refers_to.as_ref().filter(|u| **u != job.url);
        let a = &f.analysis;
        let (true, Some(d), Some(v), false, None) =
            (ok, a.digest, a.validator.as_deref(), f.unchanged, said)
        else {
            return Ok(None);
        };
        if self.originals.first_met(d, job.fp) {
            self.unsaved.first_met(d, job.fp);
            return Ok(None);
        }
        let original = match (
            self.unsaved.page_with_digest(d, v),
            self.originals.candidate(d),
        ) {
            (Some(u), _) => Some(u.to_string()),
            (None, Some(prefix)) => self.store.page_with_digest(d, prefix, v)?,
            (None, None) => None,
        };
        if original.is_none() {
            // A digest sharing its low bits with another's, a page since changed, or another
            // content under the same digest: this page is where the batch met it.
            self.unsaved.first_met(d, job.fp);
        }
        let found = original.filter(|u| *u != job.url);
        if found.is_some() {
            self.metrics.duplicates.inc();
        }
        Ok(found)
    }

    /// What a successful visit teaches: the page's cash goes to its links and its history
    /// (Adaptive OPIC); a revisit is an observation of its change rate; the refresh schedule
    /// plans the next visit.
    #[allow(clippy::type_complexity)]
    pub(super) fn learn(
        &mut self,
        job: &Queued,
        visit: &Visit,
        children: &[Fp],
    ) -> (Option<(f64, f64)>, Option<(String, f64)>) {
        let Visit {
            at,
            changed,
            last_modified,
            known,
            from_snapshot,
        } = *visit;
        let (history, read_at) = known.map_or((0.0, 0.0), |k| k.importance);
        let cash = self.frontier.read_cash(job.fp, children);
        self.fleet_pay(cash, children.len());
        let clock_before = self.frontier.cash().clock() - cash;
        let history = interpolate(
            history,
            cash,
            clock_before - read_at,
            self.settings.opic_window,
        );
        let mut seen: ChangeHistory = known
            .and_then(|k| k.changes_seen.as_deref())
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        if let Some(k) = known {
            let interval = (at - k.fetched_at).max(0) as f64 / 1000.0;
            let modified = last_modified
                .or(k.last_modified.as_deref())
                .and_then(|lm| DateTime::parse_from_rfc2822(lm).ok())
                .map(|lm| ((at - lm.timestamp_millis()).max(0)) as f64 / 1000.0);
            seen.observe(interval, changed, modified);
        }
        let prior = self
            .settings
            .keep_fresh
            .map_or(1.0 / 86_400.0, |c| c.prior_rate);
        let rate = seen.rate(prior);
        // Freshness weighted by what people read, where the site states it.
        let importance = self.importance(job.fp, (history, clock_before));
        let mut weight = self.coop.refresh_weight(job.host, job.fp, importance);
        if from_snapshot {
            weight = weight.max(1.0 / self.frontier.seen_len().max(1) as f64);
        }
        if let Some(schedule) = &mut self.schedule {
            let rate = (seen.intervals > 0).then_some(rate);
            schedule.visited(job.fp, job.host, &job.url, job.depth, at, rate, weight);
            if let Some(fleet) = self.fleet.as_mut() {
                fleet
                    .tracked
                    .entry(job.host)
                    .or_default()
                    .push(TrackedPage {
                        fp: job.fp,
                        url: job.url.clone(),
                        depth: job.depth,
                        rate,
                        visited: at,
                    });
            }
        }
        // A first visit observed no interval: nothing to store.
        let changes_seen =
            (seen.intervals > 0).then(|| (serde_json::to_string(&seen).unwrap_or_default(), rate));
        (Some((history, clock_before)), changes_seen)
    }

    /// A page's importance for the refresh schedule: its Adaptive OPIC history interpolated up
    /// to now, with the cash it holds, per unit of the clock; a page that never held cash counts
    /// as an average page.
    pub(super) fn importance(&self, fp: Fp, (history, read_at): (f64, f64)) -> f64 {
        let cash = self.frontier.cash();
        let t = self.settings.opic_window;
        let held = cash.cash(fp);
        if history > 0.0 || held > 0.0 {
            (interpolate(history, held, cash.clock() - read_at, t) / t).max(1e-12)
        } else {
            // OPIC knows nothing of a page no link paid (one read from a snapshot, or checked
            // before its links were read): a weight of nothing would leave it to the longest
            // interval, unpolled when its site stops answering for it.
            1.0 / self.frontier.seen_len().max(1) as f64
        }
    }

    /// Whether the robots.txt `host` served, as known now, forbids `link`.
    fn forbidden_when_found(&self, host: crate::ids::HostId, link: &Link) -> bool {
        self.frontier
            .rules(host, std::time::Instant::now())
            .filter(|r| r.is_served())
            .is_some_and(|r| url::Url::parse(&link.url).is_ok_and(|u| !r.allows(&u)))
    }

    /// Records a link never to be fetched as it stands (`why`, counted as `metric`), unless it
    /// was seen; returns whether it was new.
    fn record_unfetched(
        &mut self,
        link: &Link,
        (host, depth, hops): (crate::ids::HostId, u32, u32),
        why: &str,
        metric: &'static str,
    ) -> bool {
        if !self.frontier.mark_seen(link.fp) {
            return false;
        }
        let mut job = Queued::unqueued(host, link.fp, link.url.clone(), depth, false);
        job.hops = hops;
        let record = self.logged_without_content(&job, why.to_string(), Duration::ZERO);
        self.unsaved.page(record);
        self.metrics.fetch(metric);
        true
    }

    /// Queues a link unless seen.
    pub(super) fn push(&mut self, link: &Link, depth: u32, hops: u32) {
        if self.frontier.seen(link.fp) || self.shard_forward(link, depth, hops) {
            return;
        }
        match self.host_for(link.origin()) {
            // A link to a page the site's snapshot being read lists: it comes from the
            // snapshot, or the listing queues it when the snapshot ends.
            Ok(host) if self.coop.snapshot_lists(host, &link.url) => {}
            Ok(host) if self.forbidden_when_found(host, link) => {
                // Fetching it could only end in this record: it is made now, and the URL
                // costs the queue (a fleet's shared one above all) nothing.
                let unfetched = (host, depth, hops);
                if self.record_unfetched(link, unfetched, crate::state::DISALLOWED, "disallowed")
                    && let Some(fleet) = self.fleet.as_mut()
                {
                    fleet.forbidden.push(link.fp);
                }
            }
            Ok(host) if self.coop.claims_absent(host, &link.url) => {
                // The site says nothing is there: recorded as held, unfetched, unless the
                // check of its claim or its fall from belief queues it.
                if self.record_unfetched(link, (host, depth, hops), crate::state::HELD, "held") {
                    self.coop.hold(host, link, depth);
                }
            }
            Ok(host) => {
                if self
                    .frontier
                    .push(host, link.url.clone(), link.fp, depth, hops)
                {
                    self.metrics.queued_total.inc();
                }
            }
            Err(e) => tracing::warn!("cannot queue {}: {e}", link.url),
        }
    }
}

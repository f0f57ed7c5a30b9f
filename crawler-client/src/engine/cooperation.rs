//! The loop's side of cooperation: each decision of the cooperation state runs with the
//! frontier and the schedule it reaches, and what it leaves to the loop is carried out here
//! (links queued, deleted pages recorded, inline deltas applied, requests logged and
//! archived, hubs told the crawl is over).

use super::crawl_log::Entry;
use super::{CrawlError, Engine};
use crate::clock::now_ms;
use crate::coop::callback::CallbackEvent;
use crate::coop::shared::BatchPage;
use crate::coop::{CoopJob, CoopState, Effects, KnownPages, Reach};
use crate::fetch::FetchError;
use crate::fetch::outcome::{CoopFetched, Fetched, Outcome, Source};
use crate::frontier::robots::Rules;
use crate::ids::{Fp, HostId};
use crate::state::{KnownPage, Queued, Store};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::websub::Mode;

/// How long shutdown waits for hubs to verify unsubscriptions.
const UNSUBSCRIBE_WAIT: Duration = Duration::from_secs(3);

/// What the crawl knows of its pages now: a page's record in the batch not yet saved, else
/// its saved row. An announcement read between a page's visit (or its taking from a snapshot)
/// and the next save is weighed against that visit, not against the copy before it, or an
/// edit announced just after a snapshot was taken would look like a page not fetched yet and
/// be dropped.
pub(super) struct KnownNow<'a> {
    pub(super) store: &'a Store,
    pub(super) unsaved: &'a super::Unsaved,
}

impl KnownNow<'_> {
    /// The page's latest record not yet saved, else its saved row.
    pub(super) fn read(&self, fp: Fp) -> Result<Option<KnownPage>, crate::state::StoreError> {
        match self.unsaved.known(fp) {
            Some(k) => Ok(Some(k)),
            None => self.store.page(fp),
        }
    }
}

impl KnownPages for KnownNow<'_> {
    fn known(&self, fp: Fp) -> Option<KnownPage> {
        match self.read(fp) {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!("page {fp}: {e}");
                None
            }
        }
    }
}

impl Engine {
    /// What the crawl knows of page `fp` now (see [`KnownNow`]).
    fn known_now(&self, fp: Fp) -> Option<KnownPage> {
        KnownNow {
            store: &self.store,
            unsaved: &self.unsaved,
        }
        .known(fp)
    }

    /// Runs a decision of the cooperation state, then carries out its effects.
    pub(super) fn with_coop<T>(
        &mut self,
        decide: impl FnOnce(&mut CoopState, &mut Reach<'_>) -> T,
    ) -> T {
        let mut out = Effects::default();
        let t = {
            let mut reach = Reach {
                frontier: &mut self.frontier,
                schedule: self.schedule.as_mut(),
                pages: &KnownNow {
                    store: &self.store,
                    unsaved: &self.unsaved,
                },
                policy: &self.ctx.policy,
                out: &mut out,
            };
            decide(&mut self.coop, &mut reach)
        };
        self.carry_out(out);
        t
    }

    fn carry_out(&mut self, mut out: Effects) {
        // Boosts first: a URL the same listing states and queues is queued with its boost,
        // and the most read first, since the first URLs a host queues go straight to its
        // buffer.
        for (host, fp, boost) in &out.boosts {
            self.frontier.boost(*host, *fp, *boost);
        }
        let mut links = std::mem::take(&mut out.links);
        if !out.boosts.is_empty() {
            links.sort_by(|a, b| {
                let boost = |fp| self.frontier.boost_of(fp);
                boost(b.fp).total_cmp(&boost(a.fp))
            });
        }
        for link in &links {
            self.push(link, 1, 0);
        }
        let gone = out.gone.into_iter().map(|p| (p, "deleted (announced)"));
        let disowned = (out.disowned.into_iter())
            .map(|p| (p, "disowned (the site's bulk claims proved false)"));
        for (page, note) in gone.chain(disowned) {
            self.log.write(&Entry {
                at: page.fetched_at,
                url: &page.url,
                depth: 1,
                note,
                ..Default::default()
            });
            self.unsaved.page(page);
        }
        for d in out.inline {
            let Ok(page) = Url::parse(&d.link.url) else {
                continue;
            };
            let job = Queued::unqueued(d.host, d.link.fp, d.link.url.clone(), d.depth, true);
            let usage = self.usage_stated(d.host, &page, std::time::Instant::now());
            let ctx = self.ctx.clone();
            let tx = self.tx.clone();
            let fallback = self.tx.clone();
            self.rt.spawn(async move {
                let (host, fp, url) = (job.host, job.fp, job.url.clone());
                let result = crate::coop::requests::page_inline(
                    ctx,
                    job,
                    page,
                    (d.known, d.plan),
                    tx,
                    usage,
                )
                .await;
                if let Err(why) = result {
                    let why = why.to_string();
                    fallback.send(Outcome::InlineFailed { host, fp, url, why });
                }
            });
        }
        for b in out.batch {
            self.read_from_batch(b);
        }
        self.run.pushed(out.pushes, out.bytes);
    }

    pub(super) fn coop_tick(&mut self) {
        self.with_coop(|c, r| c.tick(r));
    }

    /// A cooperation request ended: the host's connection is free after its delay, the
    /// response is archived and logged, and the cooperation state weighs it.
    pub(super) fn handle_coop(
        &mut self,
        host: HostId,
        job: CoopJob,
        result: Result<CoopFetched, FetchError>,
        elapsed: Duration,
    ) -> Result<(), CrawlError> {
        self.in_flight.request_ended();
        let now = Instant::now();
        let crawl_delay = self.frontier.rules(host, now).and_then(Rules::crawl_delay);
        let delay = self.host_delay(host, crawl_delay, elapsed);
        self.request_ended(host, now + delay);
        let (url, what) = match &job {
            CoopJob::Fetch { url, kind, .. } => (url.to_string(), kind.as_str()),
            CoopJob::Hub {
                hub, unsubscribe, ..
            } => (
                hub.to_string(),
                if *unsubscribe {
                    "unsubscribe"
                } else {
                    "subscribe"
                },
            ),
        };
        let (status, size, note) = match &result {
            Ok(r) => (Some(r.status), Some(r.size), what.to_string()),
            Err(e) => (None, None, format!("{what}: {e}")),
        };
        if let Ok(r) = &result {
            self.run.coop_request(r.size);
            if let Some(rec) = r.record.clone() {
                self.append(rec)?;
            }
        }
        self.log.write(&Entry {
            at: now_ms(),
            status,
            size,
            url: &url,
            elapsed,
            note: &note,
            ..Default::default()
        });
        self.with_coop(|c, r| c.answered(r, host, job, result));
        Ok(())
    }

    /// A page read from a site's snapshot: recorded as fetched if the site's listing agrees
    /// with its digest and nothing else queued it first; dropped otherwise (the listing then
    /// queues it).
    pub(super) fn snapshot_page(
        &mut self,
        job: Queued,
        result: Result<Box<Fetched>, FetchError>,
    ) -> Result<(), CrawlError> {
        let Ok(f) = result else {
            return Ok(());
        };
        let bytes = f.size;
        let _ = self.ctx.snapshot_backlog.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |b| Some(b.saturating_sub(bytes)),
        );
        let mut f = f;
        let mut job = job;
        // Read again after a resync: a page held is taken only if the snapshot has another
        // version of it (the listing's claims weigh the rest), one only queued is fetched.
        let held = if self.frontier.seen(job.fp) {
            match self.known_now(job.fp) {
                Some(k) if k.digest.is_some() && k.digest != f.analysis.digest => Some(k),
                _ => return Ok(()),
            }
        } else {
            None
        };
        // Held to what a link is held to again, now: robots.txt as the crawl holds it.
        let origin = self.origin(job.host);
        let allowed = Url::parse(&job.url).ok().is_some_and(|u| {
            crate::coop::stated::refusal(
                &u,
                &origin,
                &self.ctx.policy,
                self.frontier.rules(job.host, std::time::Instant::now()),
                crate::coop::stated::Arrival::WithContent,
            )
            .is_ok()
        });
        let validator = f.analysis.validator.as_deref();
        if !allowed || !self.coop.snapshot_page(job.host, &job.url, validator) {
            return Ok(());
        }
        match held {
            Some(k) => {
                f.changed = true;
                f.known = Some(k);
                job.revisit = true;
            }
            None => {
                self.frontier.mark_seen(job.fp);
            }
        }
        self.handle_page(job, Ok(f), Duration::ZERO, Source::Snapshot)
    }

    /// Examines a page a batch carried, off the loop, and hands it back as an outcome; one
    /// whose usage preferences refuse the crawl is not kept.
    fn read_from_batch(&mut self, b: BatchPage) {
        let Ok(page) = Url::parse(&b.link.url) else {
            return;
        };
        let usage = self.usage_stated(b.host, &page, std::time::Instant::now());
        if usage.refuses(&self.settings.purposes).is_some() {
            return;
        }
        let usage = (!usage.is_empty()).then(|| usage.to_aipref());
        let job = Queued::unqueued(
            b.host,
            b.link.fp,
            b.link.url.clone(),
            b.depth,
            b.known.is_some(),
        );
        let ctx = self.ctx.clone();
        let tx = self.tx.clone();
        self.rt.spawn_blocking(move || {
            let (batch, id) = &b.from;
            let how = format!("batch; {batch}");
            let f = crate::coop::snapshot_fetch::page_of(
                &ctx,
                &page,
                b.entry,
                b.known.as_ref(),
                b.depth,
                id.as_deref().map(|id| (id, batch)),
                &how,
                usage.as_deref(),
            );
            tx.send(Outcome::Page {
                job,
                result: Ok(Box::new(f)),
                elapsed: Duration::ZERO,
                source: Source::Batch,
            });
        });
    }

    /// A page read from a batch: recorded unless something else recorded it first or it was
    /// forgotten meanwhile; now and then fetched again to check the site.
    pub(super) fn batch_page(
        &mut self,
        job: Queued,
        result: Result<Box<Fetched>, FetchError>,
    ) -> Result<(), CrawlError> {
        let Ok(f) = result else {
            return Ok(());
        };
        if self.frontier.seen(job.fp) {
            let held = self.known_now(job.fp);
            if held.is_none()
                || held.map(|k| k.validator) != f.known.as_ref().map(|k| k.validator.clone())
            {
                return Ok(()); // queued meanwhile, or recorded since the batch was read
            }
        } else {
            self.frontier.mark_seen(job.fp);
        }
        let (host, fp, url) = (job.host, job.fp, job.url.clone());
        let digest = f
            .analysis
            .validator
            .as_deref()
            .and_then(|v| v.parse::<webcoop_protocol::validator::EntityTag>().ok())
            .and_then(|t| webcoop_protocol::validator::Sha256Digest::from_etag(&t));
        self.handle_page(job, Ok(f), Duration::ZERO, Source::Batch)?;
        self.with_coop(|c, r| c.batch_recorded(r, host, fp, &url, digest));
        Ok(())
    }

    /// Ends every subscription (the crawl stops): asks each hub, and waits briefly for the
    /// verifications so the hubs stop delivering.
    pub(super) fn coop_unsubscribe_all(&mut self) {
        let asked = self.coop.unsubscribe_requests();
        if asked.is_empty() {
            return;
        }
        let client = self.ctx.client.clone();
        let requests: Vec<(Url, String)> = asked
            .iter()
            .map(|(_, hub, form)| (hub.clone(), form.clone()))
            .collect();
        // Built inside the runtime: a request's timer needs its reactor.
        let results = self.rt.block_on(async move {
            let mut out = Vec::new();
            for (hub, form) in requests {
                let began = Instant::now();
                let answer = match client.post_form(hub, form) {
                    Ok(request) => request
                        .timeout(UNSUBSCRIBE_WAIT)
                        .send()
                        .await
                        .map(|r| r.status().as_u16())
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                out.push((answer, began.elapsed()));
            }
            out
        });
        // Logged like every other request, so the log stays a full account of the wire.
        for ((host, hub, _), (answer, elapsed)) in asked.iter().zip(results) {
            let (status, note) = match answer {
                Ok(status) => (Some(status), "unsubscribe".to_string()),
                Err(e) => {
                    let origin = self.frontier.host(*host).map_or("", |h| h.origin.as_str());
                    tracing::warn!("{origin}: unsubscribing from {hub}: {e}");
                    (None, format!("unsubscribe: {e}"))
                }
            };
            self.log.write(&Entry {
                at: now_ms(),
                status,
                url: hub.as_str(),
                elapsed,
                note: &note,
                ..Default::default()
            });
        }
        let deadline = Instant::now() + UNSUBSCRIBE_WAIT;
        let mut waiting: HashSet<HostId> = asked.iter().map(|(h, _, _)| *h).collect();
        while !waiting.is_empty() && Instant::now() < deadline {
            // Other outcomes arriving now are dropped: their requests are made again later.
            if let Ok(Outcome::Callback(e)) = self.rx.recv_timeout(Duration::from_millis(50)) {
                if let CallbackEvent::Verified {
                    host,
                    mode: Mode::Unsubscribe,
                    ..
                } = &e
                {
                    waiting.remove(host);
                }
                self.with_coop(|c, r| c.callback_event(r, e));
            }
        }
    }
}

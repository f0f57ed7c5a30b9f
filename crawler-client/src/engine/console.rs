//! The loop's side of the console: the operator's actions applied (at the start from the log,
//! then as they come), and the view published once a second.

use super::{CrawlError, Engine};
use crate::clock::now_ms;
use crate::console::actions::{Action, ActionLog, Controls};
use crate::console::live::{
    Due, FreshSample, HostDetail, HostLive, Live, Overview, Sample, push_bounded,
};
use crate::frontier::RobotsState;
use crate::frontier::politeness::DelayWhy;
use crate::ids::HostId;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};
use url::Url;

/// What the loop keeps of its console.
pub(super) struct Console {
    pub(super) live: Arc<Live>,
    actions: Receiver<Action>,
    controls: Controls,
    started_at: i64,
}

impl Console {
    pub(super) fn new(live: Arc<Live>, actions: Receiver<Action>) -> Console {
        Console {
            live,
            actions,
            controls: Controls::default(),
            started_at: now_ms(),
        }
    }
}

/// The seeds the console added in earlier runs, to be queued and scoped with the others.
pub(super) fn logged_seeds(dir: &std::path::Path) -> Vec<Url> {
    match ActionLog::new(dir).controls() {
        Ok((c, _)) => c.seeds.iter().filter_map(|u| Url::parse(u).ok()).collect(),
        Err(_) => Vec::new(),
    }
}

impl Engine {
    /// Serves the console when asked for, and says where it listens.
    pub(super) fn start_console(&mut self) -> Result<(), CrawlError> {
        let Some(settings) = self.settings.console.clone() else {
            return Ok(());
        };
        let (live, actions) = Live::new(&self.settings.out);
        let addr = crate::console::server::start_live(
            &self.rt,
            &settings,
            &self.settings.out,
            live.clone(),
            self.fleet.is_some() || self.shard.is_some(),
        )?;
        tracing::info!("console at http://{addr}/");
        self.console = Some(Console::new(live, actions));
        Ok(())
    }

    /// Applies what the log says the operator set: blocks, delays and (with a console to
    /// resume from) a pause.
    pub(super) fn apply_logged_actions(&mut self) -> Result<(), CrawlError> {
        let log = ActionLog::new(&self.settings.out);
        let (controls, problems) = log.controls().map_err(super::file_error(
            &self.settings.out.join(crate::console::actions::FILE),
        ))?;
        for p in problems {
            tracing::warn!("{p}: skipped");
        }
        for origin in &controls.blocked {
            self.frontier.set_blocked(origin, true);
        }
        for (origin, secs) in &controls.delays {
            self.frontier
                .set_delay(origin, Some(Duration::from_secs_f64(*secs)));
        }
        if !controls.blocked.is_empty() || !controls.delays.is_empty() {
            tracing::info!(
                "from the console: {} hosts blocked, {} delays set",
                controls.blocked.len(),
                controls.delays.len()
            );
        }
        let paused = controls.paused;
        match self.console.as_mut() {
            Some(c) => {
                c.controls = controls;
                if paused {
                    tracing::warn!("paused from the console: resume it there to go on");
                }
            }
            None if paused => {
                tracing::warn!("the crawl was paused from its console; without --console it runs");
            }
            None => {}
        }
        Ok(())
    }

    /// Whether the operator paused the crawl.
    pub(super) fn paused(&self) -> bool {
        self.console.as_ref().is_some_and(|c| c.controls.paused)
    }

    /// Applies the actions sent since the last turn.
    pub(super) fn console_actions(&mut self) -> Result<(), CrawlError> {
        let Some(c) = self.console.as_mut() else {
            return Ok(());
        };
        let actions: Vec<Action> = c.actions.try_iter().collect();
        for a in actions {
            self.apply_action(a)?;
        }
        Ok(())
    }

    fn apply_action(&mut self, a: Action) -> Result<(), CrawlError> {
        tracing::info!(
            "from the console: {}",
            serde_json::to_string(&a).unwrap_or_default()
        );
        match &a {
            Action::Pause => self.halt_lanes(),
            Action::Resume => {}
            Action::AddSeeds { urls } => {
                // An address inside a network is refused here; a name leading inside, when
                // its host is first asked for robots.txt.
                let urls: Vec<Url> = urls
                    .iter()
                    .filter_map(|u| Url::parse(u).ok())
                    .filter(|u| match self.ctx.client.guard().check_url(u) {
                        Ok(()) => true,
                        Err(r) => {
                            tracing::warn!("seed from the console {u}: {r}");
                            false
                        }
                    })
                    .collect();
                self.add_seeds(&urls)?;
            }
            Action::Block { host } => {
                self.frontier.set_blocked(host, true);
                if let Some(id) = self.frontier.id_of(host) {
                    self.slow_lane(id);
                }
            }
            Action::Unblock { host } => self.frontier.set_blocked(host, false),
            Action::SetDelay { host, seconds } => {
                let d = seconds.map(Duration::from_secs_f64);
                self.frontier.set_delay(host, d);
                if let Some(id) = self.frontier.id_of(host)
                    && d.is_some()
                {
                    self.slow_lane(id);
                }
                if let Some(id) = self.frontier.id_of(host)
                    && let Some(d) = d
                    && let Some(h) = self.frontier.host_mut(id)
                {
                    // A shorter delay counts from now, not from the longer one set before.
                    h.next_allowed = h.next_allowed.min(Instant::now() + d);
                    self.frontier.schedule(id);
                }
            }
        }
        if let Some(c) = self.console.as_mut() {
            c.controls.apply(&a);
        }
        Ok(())
    }

    /// Seeds added while the crawl runs: saved with the others, in the scope, queued.
    fn add_seeds(&mut self, urls: &[Url]) -> Result<(), CrawlError> {
        let all = self.store.add_seeds(urls)?;
        let policy = crate::analyze::scope::LinkPolicy::new(
            self.settings.scope.clone(),
            &all,
            *self.ctx.policy.limits(),
        )
        .for_agent(self.ctx.policy.agent());
        self.ctx = Arc::new(self.ctx.with_policy(policy));
        self.seed(urls);
        Ok(())
    }

    /// A host's delay after a request that took `elapsed`, noted for the console.
    pub(super) fn host_delay(
        &mut self,
        host: HostId,
        crawl_delay: Option<f64>,
        elapsed: Duration,
    ) -> Duration {
        let set = self.frontier.host(host).and_then(|h| h.delay_set);
        let (d, why) = self.settings.politeness.explain(crawl_delay, elapsed, set);
        self.note_delay(host, d, why);
        if elapsed > Duration::ZERO
            && let Some(h) = self.frontier.host_mut(host)
        {
            h.answered_in = elapsed;
        }
        d
    }

    /// Notes a host's delay and why, for the console.
    pub(super) fn note_delay(&mut self, host: HostId, d: Duration, why: DelayWhy) {
        if let Some(h) = self.frontier.host_mut(host) {
            h.delay = (d, why);
        }
    }

    /// Publishes the view: figures every second, hosts and a host's schedule while watched.
    pub(super) fn console_publish(&mut self, stopping: bool) {
        let Some(c) = self.console.as_ref() else {
            return;
        };
        let now = now_ms();
        let state = if stopping {
            "stopping"
        } else if c.controls.paused {
            "paused"
        } else {
            "running"
        };
        let sample = Sample {
            t: now,
            fetched: self.run.counts().fetched,
            bytes: self.run.counts().bytes,
            errors: self.run.counts().errors,
            queued: self.frontier.queued(),
            in_flight: self.in_flight.requests(),
            hosts_active: self.frontier.active_hosts(),
        };
        let overview = self.overview(state, &sample, c);
        let watched = c.live.watched(now);
        let hosts = watched.then(|| self.hosts_live(&c.live.shown(now)));
        let detail = c
            .live
            .watched_host()
            .filter(|_| watched)
            .map(|id| self.host_detail(HostId(id)));
        let fresh = self.schedule.as_ref().map(|s| {
            let f = s.freshness(now);
            let stats = self.coop.totals();
            FreshSample {
                t: now,
                estimate: f.estimate,
                polled: f.polled,
                due: f.due,
                covered: f.covered,
                visits: self.run.counts().known_visits,
                changes: self.run.counts().changes,
                announced: stats.announced,
                pushes: self.run.counts().pushes,
            }
        });
        let live = c.live.clone();
        {
            let mut v = live.view();
            v.overview = overview;
            push_bounded(&mut v.samples, sample);
            if let Some(h) = hosts {
                v.hosts = h;
            }
            if detail.is_some() {
                v.host = detail;
            }
            if let Some(f) = fresh {
                push_bounded(v.freshness.get_or_insert_with(Default::default), f);
            }
        }
        live.published();
    }

    fn overview(&self, state: &'static str, now: &Sample, c: &Console) -> Overview {
        let m = &self.metrics;
        let mut errors = BTreeMap::new();
        for kind in ["4xx", "5xx", "failed", "disallowed", "usage"] {
            let n = m
                .fetches
                .get_or_create(&crate::metrics::OutcomeLabels { outcome: kind });
            errors.insert(kind, n.get());
        }
        errors.insert("retries", m.retries.get());
        let refusals = self.ctx.client.guard().refusals();
        errors.insert("refused", refusals.count());
        // The last minute's rate, from the samples already published.
        let eta_secs = {
            let v = c.live.view();
            let old = v
                .samples
                .iter()
                .rev()
                .find(|s| now.t - s.t >= 60_000)
                .or(v.samples.front())
                .copied();
            old.and_then(|o| {
                let secs = (now.t - o.t) as f64 / 1000.0;
                let rate = (now.fetched.saturating_sub(o.fetched)) as f64 / secs.max(1e-3);
                let left = match self.settings.max_pages {
                    Some(m) => m.saturating_sub(self.fetched_total).min(now.queued),
                    None => now.queued,
                };
                (rate > 0.0 && secs >= 5.0).then(|| left as f64 / rate)
            })
        };
        Overview {
            state,
            out: self.settings.out.display().to_string(),
            started_at: c.started_at,
            pages_total: self.fetched_total,
            fetched: self.run.counts().fetched,
            revisits: self.run.counts().revisits,
            queued: now.queued,
            seen: self.frontier.seen_len() as u64,
            hosts: self.frontier.host_count(),
            hosts_active: now.hosts_active,
            in_flight: now.in_flight,
            errors,
            refusals: refusals.latest().iter().map(ToString::to_string).collect(),
            signed: self.ctx.client.signed(),
            bytes: self.run.counts().bytes,
            warc_bytes: m.warc_bytes.get(),
            disk_free: crate::console::disk_free(&self.settings.out),
            eta_secs,
            max_pages: self.settings.max_pages,
            pushes: self.run.counts().pushes,
            coop_requests: self.run.counts().coop_requests,
            paused: c.controls.paused,
            blocked: c.controls.blocked.iter().cloned().collect(),
            delays: c.controls.delays.clone(),
        }
    }

    /// The live rows of the hosts `ids` (those the console shows).
    fn hosts_live(&self, ids: &[i64]) -> Vec<HostLive> {
        let now = Instant::now();
        let covered: HashMap<HostId, usize> = self
            .schedule
            .as_ref()
            .map_or_else(HashMap::new, |s| s.covered_per_host());
        let mode = self.settings.coop.mode;
        let degrade = self.settings.coop.failures_to_degrade;
        ids.iter()
            .filter_map(|&id| self.frontier.host(HostId(id)))
            .map(|h| {
                let site = self.coop.site_state(h.id);
                let robots = match &h.robots {
                    RobotsState::Unknown => "unknown",
                    RobotsState::Fetching => "fetching",
                    RobotsState::Known(_, until) if *until > now => "known",
                    RobotsState::Known(..) => "expired",
                };
                let wait = h.next_allowed.saturating_duration_since(now);
                // Up to 500 rows a second: no allocation but for the states that name a
                // reason.
                let state: Cow<'static, str> = if let Some(why) = &h.skipped {
                    format!("skipped: {why}").into()
                } else if h.blocked {
                    "blocked".into()
                } else if h.in_flight > 0 {
                    "crawling".into()
                } else if h.failures > 0 && wait > Duration::ZERO {
                    format!("parked ({} failures)", h.failures).into()
                } else if h.delay.1 == DelayWhy::RetryAfter && wait > Duration::ZERO {
                    "backing off".into()
                } else if h.has_queue() {
                    "waiting".into()
                } else {
                    "idle".into()
                };
                HostLive {
                    id: h.id.0,
                    waiting: h.waiting(),
                    in_flight: h.in_flight,
                    delay_secs: h.delay.0.as_secs_f64(),
                    delay_why: h.delay.1.as_str(),
                    next_in_secs: wait.as_secs_f64(),
                    robots,
                    state,
                    failures: h.failures,
                    coop: site.map_or("none", |s| s.level(mode, degrade).as_str()),
                    trust: site.map(|s| s.trust.score()),
                    saved: covered.get(&h.id).copied().unwrap_or(0) as u64
                        + site.map_or(0, |s| s.stats.deltas),
                }
            })
            .collect()
    }

    fn host_detail(&self, id: HostId) -> HostDetail {
        let schedule = self.schedule.as_ref().map_or_else(Vec::new, |s| {
            s.due_of(id, 50)
                .into_iter()
                .map(|p| Due {
                    url: p.url,
                    due: p.due,
                    last: p.last,
                    rate_per_day: p.rate * 86_400.0,
                    covered: p.covered,
                })
                .collect()
        });
        let coop = self
            .coop
            .site_state(id)
            .and_then(|s| serde_json::to_value(s.stats).ok());
        HostDetail {
            id: id.0,
            schedule,
            coop,
        }
    }
}

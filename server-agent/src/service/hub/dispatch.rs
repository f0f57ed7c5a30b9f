//! The dispatcher: one task that decides who gets what when, while every delivery runs as its
//! own task, so one slow or dead subscriber never delays the others or the publisher.
//!
//! Each subscriber is a cursor into the change log, so a subscriber that is down costs no
//! memory: when it comes back it gets what it missed, in order, page by page (at least once),
//! or a resync marker if it missed too much. Failed deliveries are retried with exponential
//! back-off and jitter; 410 Gone ends a subscription; so does failing for longer than the
//! drop limit, or a lease running out. A callback that asked for compressed deliveries
//! (RFC 7694) gets them until it answers 415.

use super::super::callback_net::CallbackPolicy;
use super::super::metrics::{Metrics, OutcomeLabels};
use super::document::{Documents, Format};
use super::store::{Subscription, SubscriptionStore};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, mpsc, watch};
use url::Url;
use webcoop_protocol::clock::Clock;
use webcoop_protocol::websub::{BodyCoding, SignatureAlgorithm, sign};

/// What the subscribe endpoint tells the dispatcher after a verification of intent.
#[derive(Debug)]
pub(crate) enum Command {
    /// A verified subscription (new or renewed).
    Subscribe {
        /// Where.
        callback: Url,
        /// HMAC key.
        secret: Option<String>,
        /// Until when.
        lease_expires: chrono::DateTime<chrono::Utc>,
        /// The compression the callback accepts.
        coding: Option<BodyCoding>,
        /// What deliveries are sent as.
        format: Format,
    },
    /// A verified unsubscription.
    Unsubscribe(Url),
}

/// How a delivery ended.
#[derive(Debug)]
enum Outcome {
    Delivered {
        upto: u64,
    },
    Gone,
    /// 415: the callback refused the coding; what it accepts instead.
    Unsupported(Option<BodyCoding>),
    Failed(String),
}

/// Settings of the dispatcher.
#[derive(Debug, Clone)]
pub(crate) struct DispatchSettings {
    /// How long changes are gathered into one delivery.
    pub(crate) window: Duration,
    /// How long a subscriber may keep failing before it is dropped.
    pub(crate) drop_after: Duration,
    /// Time limit of one delivery.
    pub(crate) timeout: Duration,
    /// Deliveries in flight at once.
    pub(crate) concurrency: usize,
}

struct Sub {
    rec: Subscription,
    in_flight: bool,
    next_attempt: Instant,
    attempts: u32,
}

/// Everything a delivery task needs.
pub(crate) struct DeliveryContext {
    /// HTTP client (no redirects, resolver enforcing the callback policy).
    pub(crate) client: reqwest::Client,
    /// The callback policy (checked for IP-literal hosts, which bypass the resolver).
    pub(crate) policy: CallbackPolicy,
    /// The documents.
    pub(crate) documents: Documents,
    /// The `Link` header every delivery of the changes topic carries.
    pub(crate) link: String,
    /// The one of the ResourceSync topic.
    pub(crate) resourcesync_link: String,
}

/// The dispatcher's state.
pub(crate) struct Dispatcher {
    subs: HashMap<String, Sub>,
    store: Arc<Mutex<SubscriptionStore>>,
    dirty: HashSet<String>,
    removed: Vec<Url>,
    ctx: Arc<DeliveryContext>,
    settings: DispatchSettings,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    permits: Arc<Semaphore>,
    registry: super::Registry,
}

fn backoff(attempts: u32) -> Duration {
    let base = Duration::from_secs(1) * 2u32.saturating_pow(attempts.saturating_sub(1).min(9));
    let capped = base.min(Duration::from_secs(300));
    capped.mul_f64(rand::random_range(0.5..1.5))
}

impl Dispatcher {
    /// A dispatcher over the stored subscriptions.
    pub(crate) fn new(
        store: SubscriptionStore,
        ctx: DeliveryContext,
        settings: DispatchSettings,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        registry: super::Registry,
    ) -> Result<Self, super::store::HubStoreError> {
        let now = Instant::now();
        let subs = store
            .load()?
            .into_iter()
            .map(|rec| {
                (
                    rec.callback.to_string(),
                    Sub {
                        rec,
                        in_flight: false,
                        next_attempt: now,
                        attempts: 0,
                    },
                )
            })
            .collect::<HashMap<String, Sub>>();
        for (key, sub) in &subs {
            registry.set(key, sub.rec.secret.clone());
        }
        let permits = Arc::new(Semaphore::new(settings.concurrency.max(1)));
        Ok(Dispatcher {
            subs,
            store: Arc::new(Mutex::new(store)),
            dirty: HashSet::new(),
            removed: Vec::new(),
            ctx: Arc::new(ctx),
            settings,
            clock,
            metrics,
            permits,
            registry,
        })
    }

    /// Runs until the head channel closes.
    pub(crate) async fn run(
        mut self,
        mut head: watch::Receiver<u64>,
        mut commands: mpsc::Receiver<Command>,
    ) {
        let (results_tx, mut results) = mpsc::unbounded_channel::<(String, Outcome)>();
        // A restarted hub owes its subscribers everything up to now at once.
        let mut deliverable = *head.borrow();
        let mut window_ends: Option<Instant> = None;
        let mut flush_at = Instant::now();
        let mut sweep_at = Instant::now();
        // Work per change round stays linear in the subscribers: all of them are looked at
        // when the deliverable head moves or a retry falls due; a finished delivery looks
        // only at its own subscriber.
        let mut look_at_all = true;
        let mut next_retry: Option<Instant> = None;
        loop {
            let now = Instant::now();
            if look_at_all || next_retry.is_some_and(|t| t <= now) {
                next_retry = self.launch(deliverable, now, &results_tx);
                look_at_all = false;
            }
            let mut wake = flush_at.min(sweep_at);
            if let Some(w) = window_ends {
                wake = wake.min(w);
            }
            if let Some(t) = next_retry {
                wake = wake.min(t);
            }
            tokio::select! {
                changed = head.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    window_ends.get_or_insert(Instant::now() + self.settings.window);
                }
                Some(command) = commands.recv() => {
                    let key = self.command(command, *head.borrow());
                    // A confirmed subscription is on disk at once, not at the next flush: the
                    // subscriber was just told it is subscribed.
                    self.flush().await;
                    if let Some(t) = key.and_then(|k| self.launch_one(&k, deliverable, Instant::now(), &results_tx)) {
                        next_retry = Some(next_retry.map_or(t, |n| n.min(t)));
                    }
                }
                Some((callback, outcome)) = results.recv() => {
                    self.finished(&callback, outcome);
                    if let Some(t) = self.launch_one(&callback, deliverable, Instant::now(), &results_tx) {
                        next_retry = Some(next_retry.map_or(t, |n| n.min(t)));
                    }
                }
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
            let now = Instant::now();
            if window_ends.is_some_and(|w| w <= now) {
                deliverable = *head.borrow();
                window_ends = None;
                look_at_all = true;
            }
            if sweep_at <= now {
                self.sweep();
                self.metrics.subscriptions.set(self.subs.len() as i64);
                let waiting = self
                    .subs
                    .values()
                    .filter(|s| s.rec.cursor < *head.borrow())
                    .count();
                self.metrics.queue_depth.set(waiting as i64);
                sweep_at = now + Duration::from_secs(1);
            }
            if flush_at <= now {
                self.flush().await;
                flush_at = now + Duration::from_millis(250);
            }
        }
        self.flush().await;
    }

    /// Applies a verified request; returns the subscriber to look at.
    fn command(&mut self, command: Command, head: u64) -> Option<String> {
        match command {
            Command::Subscribe {
                callback,
                secret,
                lease_expires,
                coding,
                format,
            } => {
                let key = callback.to_string();
                self.registry.set(&key, secret.clone());
                match self.subs.get_mut(&key) {
                    // Renewal: new lease, secret and coding, same place in the log.
                    Some(sub) => {
                        sub.rec.secret = secret;
                        sub.rec.lease_expires = lease_expires;
                        sub.rec.coding = coding;
                        sub.rec.format = format;
                    }
                    None => {
                        tracing::info!(
                            %callback,
                            coding = coding.map_or("none", BodyCoding::token),
                            format = format.media_type(),
                            "subscribed"
                        );
                        self.subs.insert(
                            key.clone(),
                            Sub {
                                rec: Subscription {
                                    callback,
                                    secret,
                                    lease_expires,
                                    cursor: head,
                                    failing_since: None,
                                    coding,
                                    format,
                                },
                                in_flight: false,
                                next_attempt: Instant::now(),
                                attempts: 0,
                            },
                        );
                    }
                }
                self.dirty.insert(key.clone());
                Some(key)
            }
            Command::Unsubscribe(callback) => {
                tracing::info!(%callback, "unsubscribed");
                self.remove(callback.as_str());
                None
            }
        }
    }

    fn remove(&mut self, key: &str) {
        self.registry.remove(key);
        if let Some(sub) = self.subs.remove(key) {
            self.dirty.remove(key);
            self.removed.push(sub.rec.callback);
        }
    }

    /// Starts a delivery for every subscriber that is behind, idle and due; returns when the
    /// next waiting one falls due.
    fn launch(
        &mut self,
        deliverable: u64,
        now: Instant,
        results: &mpsc::UnboundedSender<(String, Outcome)>,
    ) -> Option<Instant> {
        let keys: Vec<String> = self.subs.keys().cloned().collect();
        keys.iter()
            .filter_map(|k| self.launch_one(k, deliverable, now, results))
            .min()
    }

    /// Starts a delivery for one subscriber if it is behind, idle and due; returns when it falls
    /// due if it waits.
    fn launch_one(
        &mut self,
        key: &str,
        deliverable: u64,
        now: Instant,
        results: &mpsc::UnboundedSender<(String, Outcome)>,
    ) -> Option<Instant> {
        let sub = self.subs.get_mut(key)?;
        if sub.in_flight || sub.rec.cursor >= deliverable {
            return None;
        }
        if sub.next_attempt > now {
            return Some(sub.next_attempt);
        }
        sub.in_flight = true;
        let (ctx, permits, results) = (self.ctx.clone(), self.permits.clone(), results.clone());
        let (key, callback, secret, cursor, form, timeout) = (
            key.to_string(),
            sub.rec.callback.clone(),
            sub.rec.secret.clone(),
            sub.rec.cursor,
            (sub.rec.coding, sub.rec.format),
            self.settings.timeout,
        );
        tokio::spawn(async move {
            let outcome = match permits.acquire_owned().await {
                Ok(_permit) => {
                    deliver(
                        &ctx,
                        &callback,
                        secret.as_deref(),
                        (cursor, deliverable),
                        form,
                        timeout,
                    )
                    .await
                }
                Err(_) => Outcome::Failed("shutting down".into()),
            };
            let _ = results.send((key, outcome));
        });
        None
    }

    fn finished(&mut self, key: &str, outcome: Outcome) {
        let Some(sub) = self.subs.get_mut(key) else {
            return;
        };
        sub.in_flight = false;
        match outcome {
            Outcome::Delivered { upto } => {
                self.metrics
                    .deliveries
                    .get_or_create(&OutcomeLabels { outcome: "ok" })
                    .inc();
                sub.rec.cursor = upto.max(sub.rec.cursor);
                sub.rec.failing_since = None;
                sub.attempts = 0;
                sub.next_attempt = Instant::now();
                self.dirty.insert(key.to_string());
            }
            Outcome::Unsupported(_) if sub.rec.format == Format::Cbor => {
                // A subscriber that asked for CBOR and then refused it gets Atom from now on.
                tracing::info!(
                    callback = key,
                    "the subscriber refused CBOR (415); sending Atom again"
                );
                sub.rec.format = Format::Atom;
                sub.next_attempt = Instant::now();
                self.dirty.insert(key.to_string());
            }
            Outcome::Unsupported(instead) => {
                tracing::info!(
                    callback = key,
                    refused = sub.rec.coding.map_or("none", BodyCoding::token),
                    instead = instead.map_or("none", BodyCoding::token),
                    "the subscriber refused the delivery's content coding (415); sending again"
                );
                // Without a coding there is nothing left to drop: a 415 then is a failure.
                if sub.rec.coding.is_none() {
                    return self.finished(key, Outcome::Failed("answered 415".into()));
                }
                sub.rec.coding = instead.filter(|c| Some(*c) != sub.rec.coding);
                sub.next_attempt = Instant::now();
                self.dirty.insert(key.to_string());
            }
            Outcome::Gone => {
                self.metrics
                    .deliveries
                    .get_or_create(&OutcomeLabels { outcome: "failed" })
                    .inc();
                tracing::info!(
                    callback = key,
                    "the subscriber answered 410 Gone: subscription ended"
                );
                self.remove(key);
            }
            Outcome::Failed(reason) => {
                self.metrics
                    .deliveries
                    .get_or_create(&OutcomeLabels { outcome: "failed" })
                    .inc();
                let now = self.clock.now();
                let since = *sub.rec.failing_since.get_or_insert(now);
                sub.attempts += 1;
                let failing_for = (now - since).to_std().unwrap_or_default();
                if failing_for > self.settings.drop_after {
                    tracing::warn!(
                        callback = key,
                        "dropped after failing for {} s: {reason}",
                        failing_for.as_secs()
                    );
                    self.remove(key);
                    return;
                }
                let wait = backoff(sub.attempts);
                self.metrics.retries.inc();
                tracing::debug!(
                    callback = key,
                    attempts = sub.attempts,
                    "delivery failed ({reason}); retrying in {wait:?}"
                );
                sub.next_attempt = Instant::now() + wait;
                self.dirty.insert(key.to_string());
            }
        }
    }

    /// Ends subscriptions whose lease ran out.
    fn sweep(&mut self) {
        let now = self.clock.now();
        let expired: Vec<String> = self
            .subs
            .iter()
            .filter(|(_, s)| s.rec.lease_expires <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            tracing::info!(callback = key, "lease expired");
            self.remove(&key);
        }
    }

    /// Saves what changed since the last flush, off the runtime.
    async fn flush(&mut self) {
        if self.dirty.is_empty() && self.removed.is_empty() {
            return;
        }
        let upserts: Vec<Subscription> = self
            .dirty
            .drain()
            .filter_map(|k| self.subs.get(&k).map(|s| s.rec.clone()))
            .collect();
        let removals = std::mem::take(&mut self.removed);
        let store = self.store.clone();
        let saved = tokio::task::spawn_blocking(move || {
            store
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .save(&upserts, &removals)
        })
        .await;
        match saved {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("{e}; subscription changes will be saved again"),
            Err(e) => tracing::error!("saving subscriptions: {e}"),
        }
    }
}

async fn deliver(
    ctx: &DeliveryContext,
    callback: &Url,
    secret: Option<&str>,
    (cursor, upto): (u64, u64),
    (coding, format): (Option<BodyCoding>, Format),
    timeout: Duration,
) -> Outcome {
    let doc = match ctx.documents.get(cursor, upto).await {
        Ok(d) => d,
        Err(e) => return Outcome::Failed(format!("building the delivery: {e}")),
    };
    if let Err(e) = ctx.policy.check(callback).await {
        return Outcome::Failed(e);
    }
    let body = doc.body_as(format, coding);
    let link = if format == Format::ResourceSync {
        &ctx.resourcesync_link
    } else {
        &ctx.link
    };
    let mut request = ctx
        .client
        .post(callback.clone())
        .timeout(timeout)
        .header(reqwest::header::CONTENT_TYPE, format.media_type())
        .header(reqwest::header::LINK, link);
    if let Some(coding) = coding {
        request = request.header(reqwest::header::CONTENT_ENCODING, coding.token());
    }
    // The signature covers the bytes as sent, so the subscriber checks it before decompressing.
    if let Some(secret) = secret {
        request = request.header(
            "x-hub-signature",
            sign(SignatureAlgorithm::Sha256, secret.as_bytes(), &body),
        );
    }
    match request.body(body).send().await {
        Ok(r) if r.status().is_success() => Outcome::Delivered { upto: doc.upto },
        Ok(r) if r.status() == reqwest::StatusCode::GONE => Outcome::Gone,
        Ok(r) if r.status() == reqwest::StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            Outcome::Unsupported(super::accepted_coding(r.headers(), format == Format::Cbor))
        }
        Ok(r) => Outcome::Failed(format!("answered {}", r.status())),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

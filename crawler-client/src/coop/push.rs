//! WebSub push: subscribing to a site's hub (for its changes feed, or for a page that names a
//! hub), renewing before the lease ends, what the callback hears, and unsubscribing at the
//! end of a crawl.

use super::callback::{CallbackEvent, Expected};
use super::shared::Reach;
use super::site::Subscription;
use super::state::CoopState;
use super::{CoopJob, CoopMode};
use crate::analyze::Link;
use crate::clock::now_ms;
use crate::fetch::FetchError;
use crate::fetch::outcome::CoopFetched;
use crate::ids::HostId;
use url::Url;
use webcoop_protocol::changes_feed;
use webcoop_protocol::websub::{Mode, SubscriptionRequest};

/// An unverified subscription request is sent again after this long (ms).
const RESUBSCRIBE_MS: i64 = 600_000;

/// Whether a subscription is to be asked for at `at` (ms): none yet, unverified for a while,
/// or its lease in its last fifth (of what was granted or asked, the shorter) and not asked
/// again too recently.
fn subscription_due(sub: Option<&Subscription>, at: i64, lease_ms: i64) -> bool {
    match sub {
        None => true,
        Some(s) if s.verified_at.is_none() => at - s.requested_at > RESUBSCRIBE_MS,
        Some(s) => {
            let granted = s.lease_until.unwrap_or(at) - s.verified_at.unwrap_or(at);
            s.lease_until
                .is_some_and(|end| end - at < granted.min(lease_ms) / 5)
                && at - s.requested_at > RESUBSCRIBE_MS.min(granted / 10)
        }
    }
}

impl CoopState {
    /// A page or a feed names a WebSub hub: where its site has no changes feed to subscribe
    /// to, the topic (the page, or the feed's `rel="self"`) is subscribed to instead, at the
    /// hub wherever it runs (hubs are run by others almost always), within `--hub-allow`.
    pub(crate) fn page_hub(&mut self, r: &mut Reach<'_>, host: HostId, hub: &Url, topic: &Url) {
        if self.config.mode < CoopMode::Push || self.callback.is_none() {
            return;
        }
        let origin = r.origin(host);
        if !self.own_page(r, host, topic) {
            return;
        }
        if !self.hub_allowed(hub) {
            tracing::info!("{origin}: names the hub {hub}, which --hub-allow does not allow");
            return;
        }
        let site = self.site(host);
        if site.changes.is_some() || site.page_hub.is_some() {
            return;
        }
        if !matches!(hub.scheme(), "http" | "https") || !matches!(topic.scheme(), "http" | "https")
        {
            return;
        }
        site.page_hub = Some((hub.to_string(), topic.to_string()));
        tracing::info!("{origin}: {topic} names the hub {hub}; subscribing to it");
        self.maybe_subscribe(r, host, now_ms());
    }

    pub(crate) fn maybe_subscribe(&mut self, r: &mut Reach<'_>, host: HostId, at: i64) {
        // Push serves keeping pages fresh; a one-pass crawl has no use for it.
        if r.schedule.is_none() {
            return;
        }
        let Some(server) = self.callback.as_ref() else {
            return;
        };
        let Some(site) = self.sites.get(host) else {
            return;
        };
        let (hub, topic) = match (&site.hub, &site.changes, &site.page_hub) {
            (Some(hub), Some(changes), _) => (hub.clone(), changes.clone()),
            (_, None, Some((hub, topic))) => (hub.clone(), topic.clone()),
            _ => return,
        };
        if !site.discovered || site.failures >= self.config.failures_to_degrade {
            return;
        }
        let lease_ms = self.config.lease_secs as i64 * 1000;
        if !subscription_due(site.subscription.as_ref(), at, lease_ms) || server.pending(host) {
            return;
        }
        let (Ok(hub_url), Ok(topic_url)) = (Url::parse(&hub), Url::parse(&topic)) else {
            return;
        };
        let secret = site
            .subscription
            .as_ref()
            .map(|s| s.secret.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| {
                let bytes: [u8; 32] = rand::random();
                data_encoding::BASE64URL_NOPAD.encode(&bytes)
            });
        let callback = server.callback_for(host, &secret);
        let Ok(callback_url) = Url::parse(&callback) else {
            return;
        };
        let active = site
            .subscription
            .as_ref()
            .is_some_and(|s| s.verified_at.is_some());
        server.expect(
            host,
            Expected {
                topic: topic.clone(),
                secret: secret.clone(),
                pending: Some(Mode::Subscribe),
                asked: Some(std::time::Instant::now()),
                active,
            },
        );
        let form = SubscriptionRequest {
            mode: Mode::Subscribe,
            callback: callback_url,
            topic: topic_url,
            lease_seconds: Some(self.config.lease_secs),
            secret: Some(secret.clone()),
        }
        .to_form();
        let previous = site.subscription.clone();
        self.site(host).subscription = Some(Subscription {
            hub: hub.clone(),
            topic,
            callback,
            secret,
            requested_at: at,
            ..previous.unwrap_or_default()
        });
        r.frontier.push_coop(
            host,
            CoopJob::Hub {
                hub: hub_url,
                form,
                unsubscribe: false,
            },
        );
        self.polling.insert(host);
    }

    pub(crate) fn hub_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        hub: &Url,
        unsubscribe: bool,
        result: Result<CoopFetched, FetchError>,
    ) {
        let why = match result {
            Ok(got) if got.status == 202 || (200..300).contains(&got.status) => return,
            Ok(got) => format!(
                "{} {}",
                got.status,
                String::from_utf8_lossy(&got.body).trim()
            ),
            Err(e) => e.to_string(),
        };
        if unsubscribe {
            return;
        }
        tracing::warn!(
            "{}: hub {hub} refused the subscription ({why}); polling the changes feed",
            r.origin(host)
        );
        if let Some(server) = &self.callback {
            server.expect(
                host,
                Expected {
                    topic: String::new(),
                    secret: String::new(),
                    pending: None,
                    asked: None,
                    active: false,
                },
            );
        }
        // Kept unverified: asked again only after a while.
        if let Some(s) = self.site(host).subscription.as_mut() {
            s.verified_at = None;
            s.lease_until = None;
        }
    }

    /// The callback server heard from a hub.
    pub(crate) fn callback_event(&mut self, r: &mut Reach<'_>, event: CallbackEvent) {
        match event {
            CallbackEvent::Verified {
                host,
                mode: Mode::Subscribe,
                lease,
            } => self.subscribed(r, host, lease),
            CallbackEvent::Verified {
                host,
                mode: Mode::Unsubscribe,
                ..
            } => {
                self.site(host).subscription = None;
                tracing::info!("{}: unsubscribed from its hub", r.origin(host));
            }
            CallbackEvent::Denied { host, reason } => {
                tracing::warn!(
                    "{}: the hub denied the subscription ({}); polling the changes feed",
                    r.origin(host),
                    reason.unwrap_or_default()
                );
                self.site(host).subscription = None;
                self.plan_next_poll(host);
            }
            CallbackEvent::Delivery { host, body, cbor } => self.delivered(r, host, body, cbor),
            CallbackEvent::BadSignature { host, why } => {
                self.site(host).stats.bad_signatures += 1;
                tracing::warn!("{}: delivery ignored: {why}", r.origin(host));
            }
            CallbackEvent::Undecodable { host, why } => {
                tracing::warn!("{}: delivery refused: {why}", r.origin(host));
            }
        }
    }

    /// The hub verified a subscription for this lease (seconds, clamped to a minute..a year);
    /// a new one is followed by a poll for what changed before it.
    fn subscribed(&mut self, r: &mut Reach<'_>, host: HostId, lease: Option<u64>) {
        let at = now_ms();
        let lease_ms = lease
            .unwrap_or(self.config.lease_secs)
            .clamp(60, 366 * 86_400) as i64
            * 1000;
        let site = self.site(host);
        let fresh = site
            .subscription
            .as_ref()
            .is_none_or(|s| s.verified_at.is_none());
        if let Some(s) = site.subscription.as_mut() {
            s.verified_at = Some(at);
            s.lease_until = Some(at + lease_ms);
        }
        if fresh {
            // A new subscription has yet to show the hub keeps up.
            site.quiet_backups = 0;
        }
        tracing::info!(
            "{}: subscribed to its hub for {} s",
            r.origin(host),
            lease_ms / 1000
        );
        // Whatever changed between the last poll and the subscription.
        if fresh
            && r.schedule.is_some()
            && !self.polling.contains(&host)
            && let Some(job) = self.poll_job(r, host)
        {
            r.frontier.push_coop(host, job);
            self.polling.insert(host);
        }
        self.plan_next_poll(host);
    }

    /// A signed delivery: the changes it lists, or for a page topic, the page fetched at once.
    fn delivered(&mut self, r: &mut Reach<'_>, host: HostId, body: Vec<u8>, cbor: bool) {
        self.site(host).stats.pushes += 1;
        r.out.pushes += 1;
        r.out.bytes += body.len() as u64;
        let site = self.site(host);
        if let (None, Some((_, topic))) = (&site.changes, &site.page_hub) {
            // The site's feed: read as such, not fetched again.
            if let Some(feed) = site.feeds.is_topic(topic) {
                self.feed_delivered(r, host, &feed, &body);
                return;
            }
            if let Ok(url) = Url::parse(topic)
                && let Some(url) = self.stated_url(r, host, &url, super::stated::Arrival::Named)
            {
                tracing::info!("{url}: the hub says it changed");
                self.due_now(r, host, &Link::to(&url));
            }
            return;
        }
        let media_type = if cbor {
            changes_feed::CBOR_MEDIA_TYPE
        } else {
            "application/atom+xml"
        };
        let got = CoopFetched {
            status: 200,
            headers: vec![("Content-Type".into(), media_type.into())],
            size: body.len() as u64,
            body,
            record: None,
        };
        if let Err(e) = self.changes_answered(r, host, &got, None, true) {
            tracing::warn!("{}: pushed document refused: {e}", r.origin(host));
        }
    }

    /// Ends every subscription (the crawl stops): each hub is expected to verify an
    /// unsubscription, and the requests to send it are returned as `(host, hub, form)`.
    pub(crate) fn unsubscribe_requests(&mut self) -> Vec<(HostId, Url, String)> {
        let Some(server) = self.callback.as_ref() else {
            return Vec::new();
        };
        let mut asked = Vec::new();
        for (host, site) in self.sites.iter() {
            let Some(sub) = site
                .subscription
                .as_ref()
                .filter(|s| s.verified_at.is_some())
            else {
                continue;
            };
            let (Ok(hub), Ok(topic), Ok(callback)) = (
                Url::parse(&sub.hub),
                Url::parse(&sub.topic),
                Url::parse(&sub.callback),
            ) else {
                continue;
            };
            server.expect(
                host,
                Expected {
                    topic: sub.topic.clone(),
                    secret: sub.secret.clone(),
                    pending: Some(Mode::Unsubscribe),
                    asked: Some(std::time::Instant::now()),
                    active: false,
                },
            );
            let form = SubscriptionRequest {
                mode: Mode::Unsubscribe,
                callback,
                topic,
                lease_seconds: None,
                secret: None,
            }
            .to_form();
            asked.push((host, hub, form));
        }
        asked
    }
}

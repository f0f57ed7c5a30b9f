//! What the agent did lately, kept for its console: publications and how long they took, what
//! the last scans left out and why, IndexNow pings and their answers, and deliveries over time.
//! Every list is bounded; nothing here is saved (the state database and the logs are).

use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

/// Publications, pings and samples kept.
const KEEP: usize = 200;

/// Seconds of delivery samples kept (an hour).
const SAMPLES: usize = 3600;

/// Excluded paths listed per scan.
const EXCLUDED_LISTED: usize = 500;

/// One publication.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Publication {
    /// ms since the epoch.
    pub(crate) at: i64,
    /// `all`, `listing and feed` or `sitemaps`.
    pub(crate) what: &'static str,
    /// How long it took, ms.
    pub(crate) ms: f64,
    /// Bytes of robots.rdf, when it was written.
    pub(crate) listing_bytes: Option<u64>,
    /// The change sequence number it published up to.
    pub(crate) head: Option<u64>,
    /// The error, if it failed.
    pub(crate) error: Option<String>,
}

/// What scans left out.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Exclusions {
    /// Files and directories left out.
    pub(crate) total: usize,
    /// How many for each reason.
    pub(crate) by_reason: BTreeMap<String, usize>,
    /// The first paths left out, with the reason.
    pub(crate) paths: Vec<(String, String)>,
}

impl Exclusions {
    /// Counts one path left out.
    pub(crate) fn add(&mut self, rel: &str, why: &str) {
        self.total += 1;
        *self.by_reason.entry(why.to_string()).or_insert(0) += 1;
        if self.paths.len() < EXCLUDED_LISTED {
            self.paths.push((rel.to_string(), why.to_string()));
        }
    }

    /// Adds another scan's.
    pub(crate) fn merge(&mut self, other: Exclusions) {
        for (rel, why) in &other.paths {
            if self.paths.len() < EXCLUDED_LISTED && !self.paths.iter().any(|(p, _)| p == rel) {
                self.paths.push((rel.clone(), why.clone()));
            }
        }
        for (why, n) in other.by_reason {
            *self.by_reason.entry(why).or_insert(0) += n;
        }
        self.total += other.total;
    }
}

/// The web server as the judge, for the console: where it is asked, and whether it answers.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct JudgeStatus {
    /// The origin asked (`--server-url`).
    pub(crate) server: String,
    /// Files asked about since the start.
    pub(crate) asked: u64,
    /// When it last could not be asked (ms since the epoch) and why, while that lasts.
    pub(crate) unreachable: Option<(i64, String)>,
    /// Files waiting for its word.
    pub(crate) waiting: usize,
    /// Why the server's configuration is not read (`--server-config none`, or a server whose
    /// configuration the agent does not read), while that lasts.
    pub(crate) config_unread: Option<String>,
}

/// One IndexNow request.
#[derive(Debug, Clone, Serialize)]
pub struct Ping {
    /// ms since the epoch.
    pub(crate) at: i64,
    /// URLs in it.
    pub urls: usize,
    /// The endpoint's status, when it answered.
    pub status: Option<u16>,
    /// What came of it: `accepted`, `will retry`, `refused: ...`, `gave up`.
    pub outcome: String,
}

/// Deliveries so far at one moment.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct DeliverySample {
    /// ms since the epoch.
    pub(crate) t: i64,
    /// Delivered.
    pub(crate) ok: u64,
    /// Failed.
    pub(crate) failed: u64,
    /// Retries scheduled.
    pub(crate) retries: u64,
    /// Subscriptions.
    pub(crate) subscriptions: i64,
}

/// A crawler seen with a verified signature.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SeenIdentity {
    /// Its key directory.
    pub(crate) directory: String,
    /// The key it signed with last.
    pub(crate) keyid: String,
    /// Requests verified.
    pub(crate) requests: u64,
    /// ms since the epoch.
    pub(crate) last_seen: i64,
}

/// Identities listed at most (the metrics say how many requests the rest made).
const IDENTITIES: usize = 500;

#[derive(Debug, Default, Serialize)]
struct Inner {
    identities: BTreeMap<String, SeenIdentity>,
    refused_signatures: VecDeque<(i64, String)>,
    publications: VecDeque<Publication>,
    exclusions: Exclusions,
    judge: JudgeStatus,
    pings: VecDeque<Ping>,
    deliveries: VecDeque<DeliverySample>,
    /// Each page's published share of reads, for the service's feeds.
    #[serde(skip)]
    popularity: Option<std::sync::Arc<std::collections::HashMap<String, f64>>>,
    /// Each page's decayed distinct visitors, for the console.
    visitors: Vec<(String, f64)>,
    /// Clients (address and user agent) seen to sign their requests with a verified
    /// signature: crawlers, whatever the access log says of them.
    #[serde(skip)]
    verified_clients: std::collections::HashSet<String>,
}

/// The agent's recent activity, shared by the watch loop, the service and the console.
#[derive(Debug, Default)]
pub struct Activity(Mutex<Inner>);

fn bounded<T>(q: &mut VecDeque<T>, item: T, cap: usize) {
    if q.len() >= cap {
        q.pop_front();
    }
    q.push_back(item);
}

impl Activity {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes a publication.
    pub(crate) fn published(&self, p: Publication) {
        bounded(&mut self.inner().publications, p, KEEP);
    }

    /// What a whole scan left out (replaces what earlier scans found).
    pub(crate) fn scanned(&self, e: Exclusions) {
        self.inner().exclusions = e;
    }

    /// What a scan of some paths left out (added to the last whole scan's).
    pub(crate) fn scanned_some(&self, e: Exclusions) {
        self.inner().exclusions.merge(e);
    }

    /// Notes that the web server was asked about `asked` files and answered.
    pub(crate) fn judged(&self, server: &str, asked: u64, waiting: usize) {
        let mut i = self.inner();
        i.judge.server = server.to_string();
        i.judge.asked += asked;
        i.judge.waiting = waiting;
        i.judge.unreachable = None;
    }

    /// Notes that the web server could not be asked, and why.
    pub(crate) fn judge_unreachable(&self, server: &str, at: i64, why: &str, waiting: usize) {
        let mut i = self.inner();
        i.judge.server = server.to_string();
        i.judge.waiting = waiting;
        if i.judge.unreachable.is_none() {
            i.judge.unreachable = Some((at, why.to_string()));
        }
    }

    /// Notes whether the server's configuration is read (`None`) or why not.
    pub(crate) fn server_config(&self, unread: Option<String>) {
        self.inner().judge.config_unread = unread;
    }

    /// The shares of reads published now.
    pub(crate) fn set_popularity(
        &self,
        shares: Option<std::sync::Arc<std::collections::HashMap<String, f64>>>,
        visitors: Vec<(String, f64)>,
    ) {
        let mut i = self.inner();
        i.popularity = shares;
        i.visitors = visitors;
    }

    /// The shares of reads published, if any.
    pub(crate) fn popularity(
        &self,
    ) -> Option<std::sync::Arc<std::collections::HashMap<String, f64>>> {
        self.inner().popularity.clone()
    }

    /// Each page's decayed distinct visitors, as last counted.
    pub(crate) fn visitors(&self) -> Vec<(String, f64)> {
        self.inner().visitors.clone()
    }

    /// Notes a client whose request carried a verified signature (at most 10,000 kept).
    pub(crate) fn verified_client(&self, client: String) {
        let mut i = self.inner();
        if i.verified_clients.len() < 10_000 {
            i.verified_clients.insert(client);
        }
    }

    /// Whether a client was seen to sign with a verified signature.
    pub(crate) fn is_verified_client(&self, client: &str) -> bool {
        self.inner().verified_clients.contains(client)
    }

    /// The judge's state.
    pub(crate) fn judge(&self) -> JudgeStatus {
        self.inner().judge.clone()
    }

    /// Notes an IndexNow request.
    pub(crate) fn pinged(&self, p: Ping) {
        bounded(&mut self.inner().pings, p, KEEP);
    }

    /// Notes the delivery counters now.
    pub(crate) fn sample(&self, s: DeliverySample) {
        bounded(&mut self.inner().deliveries, s, SAMPLES);
    }

    /// Notes a request verified as `directory`'s, signed with `keyid`.
    pub(crate) fn identity_seen(&self, directory: &str, keyid: &str, at: Option<i64>) {
        let at = at.unwrap_or_else(|| chrono::Utc::now().timestamp_millis());
        let mut i = self.inner();
        if !i.identities.contains_key(directory) && i.identities.len() >= IDENTITIES {
            return;
        }
        let e = i
            .identities
            .entry(directory.to_string())
            .or_insert_with(|| SeenIdentity {
                directory: directory.to_string(),
                keyid: keyid.to_string(),
                requests: 0,
                last_seen: at,
            });
        e.requests += 1;
        e.last_seen = at;
        if e.keyid != keyid {
            e.keyid = keyid.to_string();
        }
    }

    /// Notes a signature that was not accepted, and why.
    pub(crate) fn identity_refused(&self, why: &str) {
        let at = chrono::Utc::now().timestamp_millis();
        let why: String = why.chars().take(300).collect();
        bounded(&mut self.inner().refused_signatures, (at, why), KEEP);
    }

    /// Crawlers seen with verified signatures, and the latest signatures refused.
    pub(crate) fn identities(&self) -> (Vec<SeenIdentity>, Vec<(i64, String)>) {
        let i = self.inner();
        (
            i.identities.values().cloned().collect(),
            i.refused_signatures.iter().cloned().collect(),
        )
    }

    /// Publications, newest last.
    pub(crate) fn publications(&self) -> Vec<Publication> {
        self.inner().publications.iter().cloned().collect()
    }

    /// What the scans left out.
    pub(crate) fn exclusions(&self) -> Exclusions {
        self.inner().exclusions.clone()
    }

    /// IndexNow requests, newest last.
    pub fn pings(&self) -> Vec<Ping> {
        self.inner().pings.iter().cloned().collect()
    }

    /// Delivery samples, oldest first.
    pub(crate) fn deliveries(&self) -> Vec<DeliverySample> {
        self.inner().deliveries.iter().copied().collect()
    }

    /// The newest delivery sample.
    pub(crate) fn last_delivery(&self) -> Option<DeliverySample> {
        self.inner().deliveries.back().copied()
    }
}

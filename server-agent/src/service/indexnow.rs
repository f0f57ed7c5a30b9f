//! IndexNow pings: changed URLs posted to a search engine's endpoint, batched (at most 10,000
//! per request, as the protocol allows), retried on 429 and 5xx.
//!
//! The change log is the queue: a cursor (`STATE/indexnow.cursor`, the last sequence number
//! whose URLs were posted) is saved only after their post ended, so pings not yet sent when
//! the agent is killed are sent when it starts again (at least once).

use super::reader::Reader;
use crate::activity::{Activity, Ping};
use crate::config::IndexNowConfig;
use crate::urls::url_of;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use url::Url;

/// Where the cursor is kept.
pub(crate) fn cursor_path(state: &Path) -> PathBuf {
    state.join("indexnow.cursor")
}

fn load_cursor(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn save_cursor(path: &Path, seq: u64) {
    if let Err(e) = crate::publish::atomic::write_atomic(path, format!("{seq}\n").as_bytes()) {
        tracing::error!(
            "IndexNow: saving {}: {e}; these pings may be sent again",
            path.display()
        );
    }
}

/// Most URLs per request.
pub(crate) const MAX_URLS: usize = 10_000;

/// The URL of the key file the agent publishes.
pub(crate) fn key_location(base: &Url, key: &str) -> Url {
    base.join(&format!("{key}.txt"))
        .unwrap_or_else(|_| base.clone())
}

/// Who pings, where, and what it notes.
pub(crate) struct Pinger {
    /// The endpoint and key.
    pub(crate) config: IndexNowConfig,
    /// The site.
    pub(crate) base: Url,
    /// The HTTP client.
    pub(crate) client: reqwest::Client,
    /// Where it may post: public addresses and `--allow-callback-net`. Its resolver guards
    /// host names; an address written in the endpoint URL is checked before each post.
    pub(crate) policy: super::callback_net::CallbackPolicy,
    /// Changes within this time of each other go in one request.
    pub(crate) gather: Duration,
    /// Where each request and its answer are noted, for the console.
    pub(crate) activity: Arc<Activity>,
}

/// Posts the URLs of every change after the saved cursor as the log's head moves, until the
/// head channel closes. Changes within `gather` of each other go in one request. A first run
/// starts from the head: enabling IndexNow does not ping a site's whole history.
pub(crate) async fn run(
    pinger: Pinger,
    reader: Reader,
    state: PathBuf,
    mut head: watch::Receiver<u64>,
) {
    let Pinger {
        config,
        base,
        client,
        policy,
        gather,
        activity,
    } = pinger;
    let path = cursor_path(&state);
    let mut cursor = match load_cursor(&path) {
        Some(c) => c,
        None => {
            let h = *head.borrow();
            save_cursor(&path, h);
            h
        }
    };
    loop {
        if *head.borrow_and_update() <= cursor {
            if head.changed().await.is_err() {
                return;
            }
            tokio::time::sleep(gather).await;
            continue;
        }
        let upto = *head.borrow();
        let mut urls: Vec<Url> = Vec::new();
        let mut from = cursor;
        while from < upto {
            let page = match reader.with(move |st| st.changes_since(from, 1000)).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!("IndexNow: reading the change log: {e}");
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    break;
                }
            };
            let Some(last) = page.last().map(|c| c.seq) else {
                break;
            };
            urls.extend(
                page.iter()
                    .filter(|c| c.seq <= upto)
                    .map(|c| url_of(&base, &c.path)),
            );
            from = last;
        }
        urls.sort();
        urls.dedup();
        for batch in urls.chunks(MAX_URLS) {
            post(&config, &base, (&client, &policy), batch, &activity).await;
        }
        cursor = upto;
        save_cursor(&path, cursor);
    }
}

async fn post(
    config: &IndexNowConfig,
    base: &Url,
    (client, policy): (&reqwest::Client, &super::callback_net::CallbackPolicy),
    urls: &[Url],
    activity: &Activity,
) {
    let note = |status: Option<reqwest::StatusCode>, outcome: String| {
        activity.pinged(Ping {
            at: crate::store::to_ms(chrono::Utc::now()),
            urls: urls.len(),
            status: status.map(|s| s.as_u16()),
            outcome,
        });
    };
    if let Err(why) = policy.check(&config.endpoint).await {
        tracing::error!(
            "IndexNow: {why}; {} URLs not posted (allow the endpoint's network with --allow-callback-net)",
            urls.len()
        );
        note(None, format!("refused: {why}"));
        return;
    }
    let body = serde_json::json!({
        "host": base.host_str().unwrap_or_default(),
        "key": config.key,
        "keyLocation": key_location(base, &config.key).as_str(),
        "urlList": urls.iter().map(Url::as_str).collect::<Vec<_>>(),
    });
    for attempt in 0..5u32 {
        let sent = client
            .post(config.endpoint.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/json; charset=utf-8",
            )
            .body(body.to_string())
            .timeout(Duration::from_secs(30))
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {
                tracing::info!(urls = urls.len(), status = %r.status(), "IndexNow accepted");
                note(Some(r.status()), "accepted".into());
                return;
            }
            Ok(r)
                if r.status() == reqwest::StatusCode::TOO_MANY_REQUESTS
                    || r.status().is_server_error() =>
            {
                tracing::warn!(status = %r.status(), "IndexNow: will retry");
                note(Some(r.status()), "will retry".into());
            }
            Ok(r) => {
                // 400, 403 (key not valid), 422 (URLs not of the host): retrying would not help.
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                let text: String = text.chars().take(200).collect();
                tracing::error!(%status, "IndexNow refused {} URLs: {text}", urls.len());
                note(Some(status), format!("refused: {text}"));
                return;
            }
            Err(e) => {
                tracing::warn!("IndexNow: {e}; will retry");
                note(None, format!("{e}; will retry"));
            }
        }
        tokio::time::sleep(Duration::from_secs(2u64.pow(attempt))).await;
    }
    tracing::error!(urls = urls.len(), "IndexNow: gave up after 5 attempts");
    note(None, "gave up after 5 attempts".into());
}

/// IndexNow pings for an agent that serves nothing (no `--listen`): the head of the change
/// log, which the agent's watch loop moves ([`Pinging::observer`]), drives them as the
/// service's does.
pub struct Pinging {
    head: watch::Sender<u64>,
}

impl Pinging {
    /// The observer to give the agent.
    pub fn observer(&self) -> crate::store::ChangeObserver {
        let head = self.head.clone();
        Box::new(
            move |changes: &[crate::store::LoggedChange], _: &crate::inventory::Inventory| {
                if let Some(last) = changes.last() {
                    head.send_replace(last.seq);
                }
            },
        )
    }
}

/// Starts pinging for `config`'s IndexNow settings, noting what it does in `activity`; none
/// configured, nothing is started.
pub async fn start_alone(
    config: &crate::config::Config,
    activity: Arc<Activity>,
) -> Result<Option<Pinging>, super::ServiceError> {
    let Some(cfg) = config.indexnow.clone() else {
        return Ok(None);
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let reader = Reader::open(&config.state, &config.docroot)?;
    let head = reader.with(|st| st.head_seq()).await.unwrap_or(0);
    let policy = super::callback_net::CallbackPolicy::new(cfg.allow_nets.clone());
    let client = super::hub::http_client(&policy)?;
    if let Err(why) = policy.check(&cfg.endpoint).await {
        tracing::error!("IndexNow: {why}: nothing will be posted until it is allowed");
    }
    let (tx, rx) = watch::channel(head);
    tracing::info!("posting changed URLs to IndexNow at {}", cfg.endpoint);
    tokio::spawn(run(
        Pinger {
            config: cfg,
            base: config.base_url.clone(),
            client,
            policy,
            gather: Duration::from_secs(2),
            activity,
        },
        reader,
        config.state.clone(),
        rx,
    ));
    Ok(Some(Pinging { head: tx }))
}

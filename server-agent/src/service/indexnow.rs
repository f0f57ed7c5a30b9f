//! IndexNow pings: changed URLs posted to a search engine's endpoint, batched (at most 10,000
//! per request, as the protocol allows), retried on 429 and 5xx.

use crate::config::IndexNowConfig;
use std::time::Duration;
use tokio::sync::mpsc;
use url::Url;

/// Most URLs per request.
pub const MAX_URLS: usize = 10_000;

/// The URL of the key file the agent publishes.
pub fn key_location(base: &Url, key: &str) -> Url {
    base.join(&format!("{key}.txt"))
        .unwrap_or_else(|_| base.clone())
}

/// Posts what arrives on `changed` until the channel closes. URLs arriving within `gather` of
/// each other go in one request.
pub async fn run(
    config: IndexNowConfig,
    base: Url,
    client: reqwest::Client,
    mut changed: mpsc::UnboundedReceiver<Vec<Url>>,
    gather: Duration,
) {
    while let Some(first) = changed.recv().await {
        let mut urls = first;
        let deadline = tokio::time::Instant::now() + gather;
        while urls.len() < MAX_URLS {
            match tokio::time::timeout_at(deadline, changed.recv()).await {
                Ok(Some(more)) => urls.extend(more),
                _ => break,
            }
        }
        urls.sort();
        urls.dedup();
        for batch in urls.chunks(MAX_URLS) {
            post(&config, &base, &client, batch).await;
        }
    }
}

async fn post(config: &IndexNowConfig, base: &Url, client: &reqwest::Client, urls: &[Url]) {
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
                return;
            }
            Ok(r)
                if r.status() == reqwest::StatusCode::TOO_MANY_REQUESTS
                    || r.status().is_server_error() =>
            {
                tracing::warn!(status = %r.status(), "IndexNow: will retry");
            }
            Ok(r) => {
                // 400, 403 (key not valid), 422 (URLs not of the host): retrying would not help.
                let status = r.status();
                let text = r.text().await.unwrap_or_default();
                tracing::error!(%status, "IndexNow refused {} URLs: {}", urls.len(), text.chars().take(200).collect::<String>());
                return;
            }
            Err(e) => tracing::warn!("IndexNow: {e}; will retry"),
        }
        tokio::time::sleep(Duration::from_secs(2u64.pow(attempt))).await;
    }
    tracing::error!(urls = urls.len(), "IndexNow: gave up after 5 attempts");
}

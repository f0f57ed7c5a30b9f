//! `--preset castillo-2004`: the thesis's experiment (Castillo 2004, section 6.4: a 249-page
//! site checked for changes with one HEAD request per page, against one request for
//! robots.rdf), measured on the wire, with what webcoop adds beside it: robots.rdf asked
//! conditionally, and the changes feed asked "anything since?".

use super::proxy::WireCount;
use super::run::{BenchConfig, ServedSite};
use std::time::{Duration, Instant};

/// Pages of the thesis's site.
pub const PAGES: usize = 249;

/// One way of learning which pages changed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    /// How.
    pub method: &'static str,
    /// What crossed the wire.
    pub wire: WireCount,
    /// Real time it took.
    pub seconds: f64,
    /// The thesis's bytes per page for the same method, where it gives one.
    pub thesis_per_page: Option<u32>,
    /// The thesis's time, as it states it.
    pub thesis_time: Option<&'static str>,
}

impl Check {
    /// Bytes both ways per page of the site.
    pub fn per_page(&self) -> f64 {
        self.wire.bytes() as f64 / PAGES as f64
    }
}

/// Runs the four checks against a fresh 249-page site with the agent beside it.
pub async fn run(cfg: &BenchConfig) -> Result<Vec<Check>, String> {
    let cfg = BenchConfig {
        pages: PAGES,
        ..cfg.clone()
    };
    let dir = cfg.work.join("castillo-2004");
    let _ = std::fs::remove_dir_all(&dir);
    let served = ServedSite::start(&cfg, &dir, &[], chrono::Utc::now()).await?;
    // Accept-Encoding: gzip, as a crawler sends it.
    let client = reqwest::Client::builder()
        .no_brotli()
        .no_zstd()
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let rdf = format!("{}robots.rdf", served.base);
    // The agent publishes within a second of starting; wait for the listing. Each answer is
    // read to its end: bytes still on their way would be counted in the first measurement.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let published = match client.get(&rdf).send().await {
            Ok(r) => {
                let ok = r.status().is_success();
                let read = r.bytes().await.is_ok();
                ok && read
            }
            Err(_) => false,
        };
        if published {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{rdf} was not published"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut checks = Vec::new();
    let heads = served
        .site
        .paths
        .iter()
        .map(|p| client.head(format!("{}{}", served.base, &p[1..])))
        .collect();
    measure(
        &served,
        &mut checks,
        "HEAD per page",
        Some((434, "about 5 min, one after the other")),
        heads,
    )
    .await?;
    let got = measure(
        &served,
        &mut checks,
        "robots.rdf",
        Some((247, "under 5 s, one request")),
        vec![client.get(&rdf)],
    )
    .await?;
    // Whatever validator the server gave: nginx sends an ETag, tower-http a Last-Modified.
    let validator = |h: Option<&reqwest::header::HeaderMap>| -> Option<(&'static str, String)> {
        let h = h?;
        let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
        get("etag")
            .map(|e| ("If-None-Match", e))
            .or_else(|| get("last-modified").map(|m| ("If-Modified-Since", m)))
    };
    let (name, value) = validator(got.first()).ok_or("robots.rdf came without a validator")?;
    measure(
        &served,
        &mut checks,
        "robots.rdf, conditional (nothing changed)",
        None,
        vec![client.get(&rdf).header(name, value)],
    )
    .await?;
    let changes = format!("{}.well-known/webcoop/changes?since=0", served.base);
    let got = measure(
        &served,
        &mut checks,
        "changes?since=",
        None,
        vec![client.get(&changes)],
    )
    .await?;
    let (name, value) =
        validator(got.first()).ok_or("the changes feed came without a validator")?;
    measure(
        &served,
        &mut checks,
        "changes?since=, conditional (nothing new)",
        None,
        vec![client.get(&changes).header(name, value)],
    )
    .await?;
    Ok(checks)
}

/// Sends `requests` one after the other on one connection and records what they cost;
/// returns the answers' headers.
async fn measure(
    served: &ServedSite,
    checks: &mut Vec<Check>,
    method: &'static str,
    thesis: Option<(u32, &'static str)>,
    requests: Vec<reqwest::RequestBuilder>,
) -> Result<Vec<reqwest::header::HeaderMap>, String> {
    let before = served.site_proxy.count();
    let start = Instant::now();
    let mut answers = Vec::new();
    for r in requests {
        let answer = r.send().await.map_err(|e| format!("{method}: {e}"))?;
        answers.push(answer.headers().clone());
        // The body is read so the exchange is whole on the wire.
        answer.bytes().await.map_err(|e| format!("{method}: {e}"))?;
    }
    let seconds = start.elapsed().as_secs_f64();
    // The relay counts bytes as they pass; give it a moment to see the last ones.
    tokio::time::sleep(Duration::from_millis(50)).await;
    checks.push(Check {
        method,
        wire: served.site_proxy.count().since(&before),
        seconds,
        thesis_per_page: thesis.map(|t| t.0),
        thesis_time: thesis.map(|t| t.1),
    });
    Ok(answers)
}

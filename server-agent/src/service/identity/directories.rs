//! The key directories requests name, fetched and kept: through the hub's destination checks
//! (public addresses, or networks the operator allowed), without following redirects, within
//! 64 KiB and 5 seconds, cached as their `Cache-Control` says (one minute to one day), one
//! fetch at a time per directory. A failed fetch is remembered for a minute and never evicts
//! keys fetched before (an operator's outage must not revoke its keys everywhere at once).
//! Only the keys the directory's own signatures bind to its authority are believed
//! (draft-meunier-webbotauth-httpsig-directory): a directory served without them gives none.

use super::super::callback_net::CallbackPolicy;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::bot_auth::binding::bound_directory;
use webcoop_protocol::bot_auth::directory::{Directory, MAX_BYTES};

/// Directories kept at most.
const MAX_CACHED: usize = 1024;
/// Time allowed for one fetch.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a failure is remembered before the directory is asked again.
const NEGATIVE: Duration = Duration::from_secs(60);
/// A key unknown to a fresh copy makes it fetched again, at most this often (a new key
/// signing before the copy expired: rotation; more often would let anyone naming random keys
/// make the agent hammer a directory).
const UNKNOWN_KEY_REFETCH: Duration = Duration::from_secs(5);
/// Freshness bounds of a copy.
const MIN_FRESH: Duration = Duration::from_secs(60);
const MAX_FRESH: Duration = Duration::from_secs(86_400);
const DEFAULT_FRESH: Duration = Duration::from_secs(3600);

struct Entry {
    dir: Option<Arc<Directory>>,
    fetched: Instant,
    fresh_until: Instant,
    failed: Option<(Instant, String)>,
}

/// The cache of directories.
pub(crate) struct Directories {
    client: reqwest::Client,
    policy: CallbackPolicy,
    allowed_nets: Vec<ipnet::IpNet>,
    cache: Mutex<HashMap<Url, Entry>>,
    fetching: Mutex<HashMap<Url, Arc<tokio::sync::Mutex<()>>>>,
    fetches: prometheus_client::metrics::counter::Counter,
}

impl Directories {
    /// Directories fetched with `client` (no redirects) under `policy`.
    pub(crate) fn new(
        client: reqwest::Client,
        policy: CallbackPolicy,
        allowed_nets: Vec<ipnet::IpNet>,
        fetches: prometheus_client::metrics::counter::Counter,
    ) -> Directories {
        Directories {
            client,
            policy,
            allowed_nets,
            cache: Mutex::default(),
            fetching: Mutex::default(),
            fetches,
        }
    }

    /// Whether a directory URL may be plain http: only an address literal inside a network
    /// the operator allowed (a test or a private deployment); the draft asks for https.
    pub(crate) fn http_allowed(&self, url: &Url) -> bool {
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self
                .allowed_nets
                .iter()
                .any(|n| n.contains(&std::net::IpAddr::V4(ip))),
            Some(url::Host::Ipv6(ip)) => self
                .allowed_nets
                .iter()
                .any(|n| n.contains(&std::net::IpAddr::V6(ip))),
            _ => false,
        }
    }

    fn cached(
        &self,
        url: &Url,
        keyid: &str,
        now: Instant,
    ) -> Option<Result<Arc<Directory>, String>> {
        let cache = self.cache.lock().ok()?;
        let e = cache.get(url)?;
        if let Some((at, why)) = &e.failed
            && now.duration_since(*at) < NEGATIVE
        {
            return Some(match &e.dir {
                Some(d) if now < e.fresh_until => Ok(d.clone()),
                _ => Err(why.clone()),
            });
        }
        let d = e.dir.as_ref()?;
        let knows = d.keys.iter().any(|(id, _, _)| id == keyid);
        let recent = now.duration_since(e.fetched) < UNKNOWN_KEY_REFETCH;
        (now < e.fresh_until && (knows || recent)).then(|| Ok(d.clone()))
    }

    /// The directory at `url` holding key `keyid` if it can be had: from the cache while
    /// fresh, else fetched.
    pub(crate) async fn get(&self, url: &Url, keyid: &str) -> Result<Arc<Directory>, String> {
        if let Some(hit) = self.cached(url, keyid, Instant::now()) {
            return hit;
        }
        let lock = {
            let mut f = self
                .fetching
                .lock()
                .map_err(|_| "directory cache poisoned")?;
            f.entry(url.clone()).or_default().clone()
        };
        let _one_at_a_time = lock.lock().await;
        if let Some(hit) = self.cached(url, keyid, Instant::now()) {
            return hit;
        }
        self.fetches.inc();
        let fetched = self.fetch(url).await;
        let now = Instant::now();
        let result = {
            let mut cache = self.cache.lock().map_err(|_| "directory cache poisoned")?;
            if cache.len() >= MAX_CACHED && !cache.contains_key(url) {
                let oldest = cache
                    .iter()
                    .min_by_key(|(_, e)| e.fetched)
                    .map(|(u, _)| u.clone());
                if let Some(u) = oldest {
                    cache.remove(&u);
                }
            }
            match fetched {
                Ok((dir, fresh)) => {
                    let dir = Arc::new(dir);
                    cache.insert(
                        url.clone(),
                        Entry {
                            dir: Some(dir.clone()),
                            fetched: now,
                            fresh_until: now + fresh,
                            failed: None,
                        },
                    );
                    Ok(dir)
                }
                Err(why) => {
                    let entry = cache.entry(url.clone()).or_insert(Entry {
                        dir: None,
                        fetched: now,
                        fresh_until: now,
                        failed: None,
                    });
                    entry.failed = Some((now, why.clone()));
                    match &entry.dir {
                        // Keys fetched before keep verifying while their copy is fresh.
                        Some(d) if now < entry.fresh_until => Ok(d.clone()),
                        _ => Err(why),
                    }
                }
            }
        };
        if let Ok(mut f) = self.fetching.lock() {
            f.remove(url);
        }
        result
    }

    async fn fetch(&self, url: &Url) -> Result<(Directory, Duration), String> {
        if url.scheme() == "http" && !self.http_allowed(url) {
            return Err(format!("{url}: a key directory must be https"));
        }
        self.policy.check(url).await?;
        let mut response = self
            .client
            .get(url.clone())
            .header(
                reqwest::header::ACCEPT,
                webcoop_protocol::bot_auth::DIRECTORY_MEDIA_TYPE,
            )
            .timeout(FETCH_TIMEOUT)
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(format!(
                "{url}: answered {status}, a redirect (not followed)"
            ));
        }
        if status != reqwest::StatusCode::OK {
            return Err(format!("{url}: answered {status}"));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_BYTES as u64)
        {
            return Err(format!("{url}: larger than {MAX_BYTES} bytes"));
        }
        let fresh = freshness(response.headers());
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
            if body.len() + chunk.len() > MAX_BYTES {
                return Err(format!("{url}: larger than {MAX_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        // The authority the request named, as `Host` carried it (a default port left out).
        let host = url.host_str().unwrap_or_default();
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let dir =
            bound_directory(&body, &pairs, &authority, now).map_err(|e| format!("{url}: {e}"))?;
        Ok((dir, fresh))
    }
}

/// How long a directory stays fresh: its `max-age` (none for `no-store`/`no-cache`: the
/// shortest), bounded.
fn freshness(headers: &reqwest::header::HeaderMap) -> Duration {
    let Some(cc) = headers
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
    else {
        return DEFAULT_FRESH;
    };
    let mut fresh = DEFAULT_FRESH;
    for directive in cc.split(',').map(|d| d.trim().to_ascii_lowercase()) {
        if directive == "no-store" || directive == "no-cache" {
            return MIN_FRESH;
        }
        if let Some(secs) = directive.strip_prefix("max-age=")
            && let Ok(secs) = secs.trim_matches('"').parse::<u64>()
        {
            fresh = Duration::from_secs(secs);
        }
    }
    fresh.clamp(MIN_FRESH, MAX_FRESH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freshness_is_bounded() {
        let h = |v: &str| {
            let mut m = reqwest::header::HeaderMap::new();
            m.insert(reqwest::header::CACHE_CONTROL, v.parse().unwrap());
            freshness(&m)
        };
        assert_eq!(h("max-age=600"), Duration::from_secs(600));
        assert_eq!(h("public, max-age=1"), MIN_FRESH);
        assert_eq!(h("max-age=99999999999"), MAX_FRESH);
        assert_eq!(h("no-store"), MIN_FRESH);
        assert_eq!(h("max-age=junk"), DEFAULT_FRESH);
        assert_eq!(freshness(&reqwest::header::HeaderMap::new()), DEFAULT_FRESH);
    }
}

//! The web server is the judge: a file is public only when the server itself, asked as a
//! stranger would ask (a GET with identity coding, no cookies, no credentials, the site's
//! `Host`, a crawler's `User-Agent`, from an address of the installation's own that no
//! configuration names, at the address where a stranger's request lands), answers 200 with
//! exactly the file's bytes.
//!
//! The agent used to decide by imitating the server's rules, and every rule it did not model
//! (an `include`, a handler, a permission, a module) failed open. Asking the server fails
//! closed: a server that runs a file, refuses it, redirects it or cannot read it answers
//! something other than the file, and the file is not published. What the judge cannot see
//! from where it stands (rules that depend on who asks) is hidden by
//! [`crate::server_config`]; what no server can tell from a page (a leaked key) is refused by
//! name in [`crate::privacy`].

pub(crate) mod source;
mod target;
mod verdict;

pub(crate) use target::Target;
pub(crate) use verdict::{Refusal, Verdict, of_response};

use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use url::Url;
use webcoop_protocol::validator::{Sha256Digest, Sha256Stream};

/// One file to judge: its docroot path and what its bytes are.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    /// The docroot path.
    pub(crate) path: String,
    /// SHA-256 of its bytes.
    pub(crate) sha256: Sha256Digest,
    /// Its size.
    pub(crate) size: u64,
}

/// The `User-Agent` the judge sends: a crawler's, as the crawlers the agent publishes for.
pub(crate) const USER_AGENT: &str = concat!(
    "Mozilla/5.0 (compatible; webcoop-crawl/",
    env!("CARGO_PKG_VERSION"),
    "; +https://github.com/webcoop/webcoop)"
);

/// How the judge asks.
#[derive(Debug, Clone)]
pub struct JudgeSettings {
    /// The origin of the web server (`--server-url`, or the base URL's origin).
    pub server_url: Url,
    /// Whether `--server-url` was given.
    pub(crate) server_url_given: bool,
    /// The address to ask from (`--judge-source`), when given.
    pub(crate) source: Option<std::net::IpAddr>,
    /// Connections to it at once.
    pub(crate) connections: usize,
    /// Time allowed for one answer.
    pub(crate) timeout: Duration,
}

/// Why the judge could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot ask the web server: {0}")]
pub struct JudgeError(String);

/// Asks the web server about files, several at once, on a runtime of its own (the agent's
/// reconciliation is synchronous, and may run on a thread of another runtime: it waits on a
/// channel, never inside this runtime).
pub(crate) struct Judge {
    runtime: Option<tokio::runtime::Runtime>,
    client: reqwest::Client,
    target: Arc<Target>,
    connections: usize,
    timeout: Duration,
}

/// A batch being judged while the caller does something else.
pub(crate) struct Pending(std::sync::mpsc::Receiver<Vec<Verdict>>);

impl Drop for Judge {
    fn drop(&mut self) {
        // Never blocks, so the agent may be dropped anywhere, inside another runtime too.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Judge {
    /// A judge for the site at `base`, asking the server at `server` from `source`.
    pub(crate) fn new(
        base: &Url,
        settings: &JudgeSettings,
        server: &Url,
        source: std::net::IpAddr,
    ) -> Result<Judge, JudgeError> {
        // reqwest is built without a TLS provider of its own: install ring's once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let target = Target::new(base, server);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("webcoop-judge")
            .enable_all()
            .build()
            .map_err(|e| JudgeError(e.to_string()))?;
        let client = anonymous_client(
            &target,
            settings.timeout,
            settings.connections,
            USER_AGENT,
            Some(source),
        )
        .map_err(|e| JudgeError(e.to_string()))?;
        Ok(Judge {
            runtime: Some(runtime),
            client,
            target: Arc::new(target),
            connections: settings.connections.max(1),
            timeout: settings.timeout,
        })
    }

    /// The origin asked.
    pub(crate) fn origin(&self) -> &str {
        self.target.origin()
    }

    /// Starts judging `asks`; their verdicts come back in the same order from
    /// [`Judge::finish`].
    pub(crate) fn start(&self, asks: Vec<Ask>) -> Pending {
        let (client, target, n, timeout) = (
            self.client.clone(),
            self.target.clone(),
            self.connections,
            self.timeout,
        );
        let (tx, rx) = std::sync::mpsc::channel();
        // Once the server cannot be reached, the rest of the batch is not asked: each would
        // wait out its own timeout for the same answer.
        let down: Arc<std::sync::OnceLock<Verdict>> = Arc::default();
        if let Some(rt) = &self.runtime {
            rt.spawn(async move {
                let verdicts: Vec<Verdict> = futures_util::stream::iter(asks)
                    .map(|a| {
                        let (client, target, down) = (client.clone(), target.clone(), down.clone());
                        async move {
                            if let Some(v) = down.get() {
                                return v.clone();
                            }
                            let v = ask(&client, &target, &a, timeout).await;
                            if let Verdict::Unknown(why) = &v
                                && why.contains(UNREACHABLE)
                            {
                                let _ = down.set(v.clone());
                            }
                            v
                        }
                    })
                    .buffered(n)
                    .collect()
                    .await;
                let _ = tx.send(verdicts);
            });
        }
        Pending(rx)
    }

    /// The verdicts of a batch started with [`Judge::start`].
    pub(crate) fn finish(&self, pending: Pending) -> Vec<Verdict> {
        pending
            .0
            .recv()
            .unwrap_or_else(|_| vec![Verdict::Unknown("the judge stopped".into())])
    }

    /// Judges `asks` and waits for the verdicts, in the same order.
    pub(crate) fn judge(&self, asks: Vec<Ask>) -> Vec<Verdict> {
        let n = asks.len();
        let mut verdicts = self.finish(self.start(asks));
        // A failed task leaves one verdict for all: every file gets it.
        if verdicts.len() != n {
            let v = verdicts
                .pop()
                .unwrap_or_else(|| Verdict::Unknown("no verdict".into()));
            verdicts = vec![v; n];
        }
        verdicts
    }
}

/// A client asking the web server at `target` as an anonymous visitor would: no proxy, no
/// cookies, no redirects followed, nothing decoded (the bytes are compared as served), from
/// `source` when given.
pub(crate) fn anonymous_client(
    target: &Target,
    timeout: Duration,
    connections: usize,
    user_agent: &'static str,
    source: Option<std::net::IpAddr>,
) -> Result<reqwest::Client, reqwest::Error> {
    let mut builder = reqwest::Client::builder()
        .local_address(source)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_brotli()
        .no_zstd()
        .no_deflate()
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .pool_max_idle_per_host(connections)
        .tcp_nodelay(true)
        .user_agent(user_agent);
    if let Some((name, addr)) = target.resolve() {
        builder = builder.resolve(name, *addr);
    }
    builder.build()
}

/// The words of a verdict that says the server cannot be reached at all.
const UNREACHABLE: &str = "cannot connect";

/// What went wrong reaching the server, in words.
fn unreachable(origin: &str, e: &reqwest::Error) -> Verdict {
    let what = if e.is_connect() {
        let mut s = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(inner) = source {
            s = inner.to_string();
            source = inner.source();
        }
        format!("{UNREACHABLE} ({s})")
    } else if e.is_timeout() {
        "no answer in time".to_string()
    } else {
        e.to_string()
    };
    Verdict::Unknown(format!("the web server at {origin}: {what}"))
}

/// Asks the server for one file and compares its answer with the file's bytes, reading no
/// more than one byte past the file's size.
async fn ask(client: &reqwest::Client, target: &Target, a: &Ask, timeout: Duration) -> Verdict {
    let mut request = client
        .get(target.url_of(&a.path))
        .timeout(timeout)
        .header(reqwest::header::ACCEPT_ENCODING, "identity");
    if let Some(host) = target.host_header() {
        request = request.header(reqwest::header::HOST, host);
    }
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => return unreachable(target.origin(), &e),
    };
    let status = response.status().as_u16();
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let location = header(reqwest::header::LOCATION);
    let coding = header(reqwest::header::CONTENT_ENCODING);
    if status != 200
        || coding
            .as_deref()
            .is_some_and(|c| !c.trim().eq_ignore_ascii_case("identity"))
    {
        return of_response(status, location.as_deref(), coding.as_deref(), || Ok(false));
    }
    if response.content_length().is_some_and(|n| n != a.size) {
        return verdict::of_response(200, None, None, || Ok(false));
    }
    let mut body = response.bytes_stream();
    let mut digest = Sha256Stream::default();
    let mut read: u64 = 0;
    let mut failed = None;
    while let Some(chunk) = body.next().await {
        match chunk {
            Ok(c) => {
                read += c.len() as u64;
                if read > a.size {
                    break;
                }
                digest.update(&c);
            }
            Err(e) => {
                failed = Some(unreachable(target.origin(), &e));
                break;
            }
        }
    }
    if let Some(v) = failed {
        return v;
    }
    of_response(200, None, None, || {
        Ok(read == a.size && digest.finish() == a.sha256)
    })
}

#[cfg(test)]
mod tests;

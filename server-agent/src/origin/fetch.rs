//! Asking the origin for a page as the judge asks, a stranger: from the installation's own
//! address in 127/8, with a crawler's `User-Agent`, a GET with identity coding, no cookies, no
//! credentials, no redirects followed, the site's `Host`, at most one request at a time, each
//! body read no further than a bound.

use crate::judge::Target;
use futures_util::StreamExt;
use std::time::Duration;
use url::Url;

/// Largest page kept, in bytes; a larger one is not published.
pub(crate) const MAX_PAGE_BYTES: u64 = 8 << 20;
/// Longest validator kept (an `ETag` or `Last-Modified` longer than this is ignored).
const MAX_VALIDATOR: usize = 256;

/// What the origin answered.
#[derive(Debug)]
pub(crate) enum Answer {
    /// 200, served alike to anyone: the page.
    Page(Page),
    /// 304 to a conditional request: unchanged.
    NotModified,
    /// 404 or 410: not there.
    Gone,
    /// Anything else (a redirect, a refusal, a page per client): not published, and why.
    Refused(String),
    /// No usable answer (unreachable, timed out, 5xx, cut short): nothing is concluded.
    Unknown(String),
}

/// A page as served.
#[derive(Debug)]
pub(crate) struct Page {
    /// The body.
    pub(crate) body: Vec<u8>,
    /// `Content-Type`, if sent.
    pub(crate) content_type: Option<String>,
    /// Validators, if sent, for the next conditional request.
    pub(crate) validators: Validators,
    /// `Last-Modified` as a time, if sent and valid.
    pub(crate) last_modified: Option<chrono::DateTime<chrono::Utc>>,
}

/// The validators a conditional request sends back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Validators {
    /// `ETag`.
    pub(crate) etag: Option<String>,
    /// `Last-Modified`, as sent.
    pub(crate) last_modified: Option<String>,
}

/// A client of the origin, with a runtime of its own (the origin loop is synchronous).
pub(crate) struct OriginClient {
    runtime: Option<tokio::runtime::Runtime>,
    client: reqwest::Client,
    target: Target,
    timeout: Duration,
    source: Option<std::net::IpAddr>,
}

impl Drop for OriginClient {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl OriginClient {
    /// A client asking `server` (the origin, typically on loopback) for the site at `base`,
    /// from `source` when given.
    pub(crate) fn new(
        base: &Url,
        server: &Url,
        timeout: Duration,
        source: Option<std::net::IpAddr>,
    ) -> Result<Self, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let target = Target::new(base, server);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let client =
            crate::judge::anonymous_client(&target, timeout, 1, crate::judge::USER_AGENT, source)
                .map_err(|e| e.to_string())?;
        Ok(OriginClient {
            runtime: Some(runtime),
            client,
            target,
            timeout,
            source,
        })
    }

    /// The address it asks from, when bound to one.
    pub(crate) fn source(&self) -> Option<std::net::IpAddr> {
        self.source
    }

    /// The origin asked, for messages.
    pub(crate) fn origin(&self) -> &str {
        self.target.origin()
    }

    /// Asks for site path `rel` (relative to the base URL), conditionally when `known` has
    /// validators.
    pub(crate) fn get(&self, rel: &str, known: &Validators) -> Answer {
        let Some(rt) = &self.runtime else {
            return Answer::Unknown("stopped".into());
        };
        rt.block_on(self.ask(rel, known))
    }

    async fn ask(&self, rel: &str, known: &Validators) -> Answer {
        let mut request = self
            .client
            .get(self.target.url_of(rel))
            .timeout(self.timeout)
            .header(reqwest::header::ACCEPT_ENCODING, "identity");
        if let Some(host) = self.target.host_header() {
            request = request.header(reqwest::header::HOST, host);
        }
        if let Some(etag) = &known.etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(lm) = &known.last_modified {
            request = request.header(reqwest::header::IF_MODIFIED_SINCE, lm);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                return Answer::Unknown(format!("the web server at {}: {e}", self.origin()));
            }
        };
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let header = |name: reqwest::header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_string())
        };
        match status {
            200 => {}
            304 if known != &Validators::default() => return Answer::NotModified,
            404 | 410 => return Answer::Gone,
            500..=599 => return Answer::Unknown(format!("the web server answered {status}")),
            300..=399 => {
                return Answer::Refused(format!(
                    "redirected ({status}) to {}",
                    header(reqwest::header::LOCATION).unwrap_or_default()
                ));
            }
            _ => return Answer::Refused(format!("answered {status}")),
        }
        if let Some(why) = per_client(&headers) {
            return Answer::Refused(why);
        }
        if header(reqwest::header::CONTENT_ENCODING)
            .is_some_and(|c| !c.eq_ignore_ascii_case("identity"))
        {
            return Answer::Refused("served encoded although identity was asked".into());
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_PAGE_BYTES)
        {
            return Answer::Refused(format!("larger than {} MiB", MAX_PAGE_BYTES >> 20));
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(c) => {
                    if body.len() as u64 + c.len() as u64 > MAX_PAGE_BYTES {
                        return Answer::Refused(format!(
                            "larger than {} MiB",
                            MAX_PAGE_BYTES >> 20
                        ));
                    }
                    body.extend_from_slice(&c);
                }
                Err(e) => return Answer::Unknown(format!("the answer was cut short: {e}")),
            }
        }
        let bounded = |v: Option<String>| v.filter(|v| v.len() <= MAX_VALIDATOR);
        let last_modified_text = bounded(header(reqwest::header::LAST_MODIFIED));
        let last_modified = last_modified_text
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc2822(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        Answer::Page(Page {
            body,
            content_type: header(reqwest::header::CONTENT_TYPE).filter(|t| t.len() <= 200),
            validators: Validators {
                etag: bounded(header(reqwest::header::ETAG)),
                last_modified: last_modified_text,
            },
            last_modified,
        })
    }
}

/// Why an answer is one client's rather than everyone's, if it is: it sets a cookie, asks for
/// credentials, or says it is private.
fn per_client(headers: &reqwest::header::HeaderMap) -> Option<String> {
    if headers.contains_key(reqwest::header::SET_COOKIE) {
        return Some("the answer sets a cookie (a page per visitor)".into());
    }
    if headers.contains_key(reqwest::header::WWW_AUTHENTICATE) {
        return Some("the answer asks for credentials".into());
    }
    let private = headers
        .get_all(reqwest::header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|d| {
            let d = d.trim().to_ascii_lowercase();
            d == "private" || d.starts_with("private=")
        });
    private.then(|| "the answer is Cache-Control: private".into())
}

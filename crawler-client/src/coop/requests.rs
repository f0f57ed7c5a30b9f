//! The requests cooperation makes, run on the async runtime like page fetches: metadata
//! documents (conditional GETs), hub requests (form POSTs), and deltas of changed pages with
//! their verification and the fall back to a full GET.

use super::CoopJob;
use crate::archive::warc;
use crate::coop::MetaKind;
use crate::coop::shared::DeltaPlan;
use crate::fetch::lane::{self, Lane, Ticket};
use crate::fetch::outbox::Outbox;
use crate::fetch::outcome::{Context, CoopFetched, DeltaUse, Fetched, Outcome, RecordSlot, Source};
use crate::fetch::tasks::{self, give_back};
use crate::fetch::{self, FetchError, FetchLimits, FetchRequest, FetchResponse};
use crate::ids::HostId;
use crate::state::{KnownPage, Queued};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::delta::dcz;
use webcoop_protocol::validator::{EntityTag, Sha256Digest};

/// Largest metadata document read (robots.rdf of about 150,000 pages).
pub(crate) const META_MAX_BYTES: usize = 64 << 20;

/// Largest decoded document of each kind, so a small compressed body (a gzip bomb) cannot
/// grow past what its format allows: a sitemap is at most 50 MB uncompressed (the protocol),
/// robots.rdf of about 300,000 pages, a changes page of 1,000 entries with inline deltas.
fn decoded_max(kind: MetaKind) -> usize {
    match kind {
        MetaKind::Sitemap => webcoop_protocol::sitemap::MAX_BYTES as usize,
        MetaKind::Listing | MetaKind::ListingPart => 128 << 20,
        MetaKind::Changes => 32 << 20,
        // Streamed to a file instead (`snapshot_fetch`).
        MetaKind::Snapshot => 0,
        MetaKind::Feed => webcoop_protocol::web_feed::MAX_BYTES,
        // A key of 128 characters, and a little room.
        MetaKind::IndexNowKey => 1 << 10,
    }
}

/// Time allowed for a hub request.
const HUB_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes a cooperation request and sends the outcome; a snapshot's pages are kept as `gate`
/// lets them.
pub(crate) async fn run(
    ctx: Arc<Context>,
    host: HostId,
    job: CoopJob,
    tx: Outbox,
    gate: crate::fetch::outcome::PageGate,
    close: bool,
) {
    if let CoopJob::Fetch {
        kind: MetaKind::Snapshot,
        url,
        ..
    } = &job
    {
        let url = url.clone();
        return super::snapshot_fetch::run(ctx, host, job, url, tx, gate).await;
    }
    let start = Instant::now();
    let result = match &job {
        CoopJob::Fetch {
            kind,
            url,
            etag,
            last_modified,
        } => {
            fetch_meta(
                &ctx,
                *kind,
                url,
                (etag.clone(), last_modified.clone()),
                close,
            )
            .await
        }
        CoopJob::Hub { hub, form, .. } => post_hub(&ctx, hub, form).await,
    };
    tx.send(Outcome::Coop {
        host,
        job,
        result,
        elapsed: start.elapsed(),
    });
}

async fn fetch_meta(
    ctx: &Context,
    kind: MetaKind,
    url: &Url,
    (etag, last_modified): (Option<String>, Option<String>),
    close: bool,
) -> Result<CoopFetched, FetchError> {
    let limits = FetchLimits {
        max_body: META_MAX_BYTES,
        ..ctx.limits
    };
    let request = FetchRequest {
        url: url.clone(),
        etag,
        last_modified,
        headers: crate::fetch::tasks::closing(close),
    };
    let resp = fetch::fetch(&ctx.client, &request, &limits).await?;
    if resp.truncated {
        return Err(FetchError::Other(format!(
            "{url}: larger than {} MiB",
            META_MAX_BYTES >> 20
        )));
    }
    let body = if (200..300).contains(&resp.status) || resp.status == 410 {
        let limit = decoded_max(kind);
        match crate::analyze::decode_within(resp.header("content-encoding"), &resp.body, limit) {
            Ok(body) => body,
            Err(crate::analyze::Undecoded::Coding) => {
                return Err(FetchError::Other(format!(
                    "{url}: undecodable content coding"
                )));
            }
            Err(crate::analyze::Undecoded::TooLarge) => {
                return Err(FetchError::Other(format!(
                    "{url}: decodes to more than the {} MiB a {} may hold",
                    limit >> 20,
                    kind.as_str()
                )));
            }
        }
    } else {
        Vec::new()
    };
    let record =
        (resp.status != 304).then(|| RecordSlot::New(tasks::archived(&resp, ctx.warc_level)));
    Ok(CoopFetched {
        status: resp.status,
        headers: resp.headers.clone(),
        body,
        size: resp.body.len() as u64,
        record,
    })
}

async fn post_hub(ctx: &Context, hub: &Url, form: &str) -> Result<CoopFetched, FetchError> {
    let mut resp = send_form(ctx, hub, form).await?;
    // A hub that takes verified crawlers only asks for a signature (RFC 9421 section 5):
    // answered once, covering what it asked.
    if matches!(resp.status().as_u16(), 401 | 403 | 429)
        && let Some(asked) = resp
            .headers()
            .get("accept-signature")
            .and_then(|v| v.to_str().ok())
        && ctx.client.asked_to_sign(hub, asked)
    {
        resp = send_form(ctx, hub, form).await?;
    }
    let status = resp.status().as_u16();
    let headers = crate::fetch::header_pairs(resp.headers());
    let body = resp
        .bytes()
        .await
        .map(|b| b[..b.len().min(4096)].to_vec())
        .unwrap_or_default();
    Ok(CoopFetched {
        status,
        headers,
        size: body.len() as u64,
        body,
        record: None,
    })
}

async fn send_form(ctx: &Context, hub: &Url, form: &str) -> Result<reqwest::Response, FetchError> {
    ctx.client
        .post_form(hub.clone(), form.to_string())?
        .timeout(HUB_TIMEOUT)
        .send()
        .await
        .map_err(|e| crate::fetch::classify(&e))
}

/// Why a delta could not be used; the page is then fetched in full, and the reason logged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeltaError {
    /// Neither the server nor the announcement gave the new version's validator.
    #[error("no validator to verify the result against")]
    NoValidator,
    /// The validator does not parse.
    #[error("validator {value}: {source}")]
    Validator {
        /// As given.
        value: String,
        /// Why.
        source: webcoop_protocol::validator::ValidatorError,
    },
    /// The delta does not decode, or its result is not the version named.
    #[error(transparent)]
    Decode(#[from] webcoop_protocol::delta::DeltaError),
    /// The server's version is not the one the site announced.
    #[error("the server's validator {server} is not the announced {announced}")]
    NotAnnounced {
        /// The server's `ETag`.
        server: String,
        /// The announcement's.
        announced: String,
    },
    /// No inline delta came with the announcement.
    #[error("no inline delta")]
    NoInline,
    /// The inline delta is for another version than the one held.
    #[error("the inline delta applies to {0}, not the copy held")]
    OtherBase(String),
    /// No copy of the page is held to apply a delta to.
    #[error("no copy of the page is held")]
    NothingHeld,
    /// The held copy could not be read back from the archive.
    #[error("reading the held copy from {file}: {source}")]
    HeldUnreadable {
        /// The WARC file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The archive does not hold a whole response where the state says.
    #[error("the held copy in {file} at {offset} is not a whole response")]
    HeldTorn {
        /// The WARC file.
        file: String,
        /// The record's offset.
        offset: u64,
    },
    /// The delta request failed.
    #[error("delta request: {0}")]
    Request(FetchError),
    /// The delta is larger than the body limit.
    #[error("delta larger than the body limit")]
    TooLarge,
    /// The delta endpoint answered with this status.
    #[error("delta endpoint answered {0}")]
    Status(u16),
}

/// Builds the new version of a page from the held one and a dcz delta, verified against the
/// validators the server gave (its `ETag`) and the site announced; both must be ours.
pub(crate) fn apply(
    held: &[u8],
    delta: &[u8],
    etag: Option<&str>,
    announced: Option<&str>,
    limit: u64,
) -> Result<Vec<u8>, DeltaError> {
    let value = etag.or(announced).ok_or(DeltaError::NoValidator)?;
    let expected: EntityTag = value.parse().map_err(|source| DeltaError::Validator {
        value: value.to_string(),
        source,
    })?;
    let new = dcz::decode_verified(held, delta, &expected, limit)?;
    if let Some(a) = announced
        && a != expected.to_string()
    {
        return Err(DeltaError::NotAnnounced {
            server: expected.to_string(),
            announced: a.to_string(),
        });
    }
    Ok(new)
}

/// The response a crawler would have had from a plain GET of the new version, for the
/// analysis; the archive keeps the delta as received and this content as a `resource`.
fn reconstructed(page: &Url, from: &FetchResponse, body: Vec<u8>) -> FetchResponse {
    FetchResponse {
        url: page.clone(),
        status: 200,
        version: from.version,
        reason: "OK".into(),
        headers: super::response_headers::page_headers(&from.headers, &body),
        body: body.into(),
        truncated: false,
        fetched_at: from.fetched_at,
        elapsed: from.elapsed,
        remote: from.remote,
        request_head: from.request_head.clone(),
    }
}

/// How a page was made from a delta, for its archive records.
pub(crate) struct Derivation {
    /// The record of the delta as received.
    received: warc::Record,
    /// Where the delta came from.
    from: Url,
    /// In words, for the page's record.
    how: String,
}

/// Fetches a changed page as a delta against the copy held (or applies the inline delta that
/// came with the announcement), verifies it, and sends the outcome; on any mismatch or error
/// the page is fetched in full and the reason kept.
pub(crate) async fn page_delta(
    ctx: Arc<Context>,
    job: Queued,
    page: Url,
    (known, plan): (KnownPage, DeltaPlan),
    (lane, ticket): (Arc<Lane>, Ticket),
    tx: Outbox,
    usage: webcoop_protocol::usage::Prefs,
) {
    let Some(permit) = lane.turn(ticket).await else {
        return give_back(&lane, job, &tx);
    };
    let start = Instant::now();
    let held = held_version(&ctx, &known).await;
    let attempt = match held {
        Err(why) => Err(why),
        Ok((held, _)) => try_delta(&ctx, &page, &held, &plan).await,
    };
    let (result, how, derivation) = match attempt {
        Ok((resp, used, derivation)) => (Ok(resp), used, derivation),
        Err(why) => {
            let request = FetchRequest {
                url: page.clone(),
                etag: known.etag.clone(),
                last_modified: known.last_modified.clone(),
                headers: Vec::new(),
            };
            (
                fetch::fetch(&ctx.client, &request, &ctx.limits).await,
                DeltaUse::Fallback(why.to_string()),
                None,
            )
        }
    };
    if lane::slows_down(result.as_ref().ok().map(|r| r.status)) {
        lane.stop();
    }
    drop(permit);
    let result = result.map(|resp| {
        Box::new(examined(
            &ctx,
            &resp,
            (job.depth, &known),
            how,
            derivation,
            usage,
        ))
    });
    lane.leave();
    tx.send(Outcome::Page {
        job,
        result,
        elapsed: start.elapsed(),
        source: Source::Request,
    });
}

/// Applies an inline delta pushed with an announcement, without any request; sends the page
/// outcome, or nothing (with the reason) when it cannot be used and a fetch must do.
pub(crate) async fn page_inline(
    ctx: Arc<Context>,
    job: Queued,
    page: Url,
    (known, plan): (KnownPage, DeltaPlan),
    tx: Outbox,
    usage: webcoop_protocol::usage::Prefs,
) -> Result<(), DeltaError> {
    let Some((base, delta)) = &plan.inline else {
        return Err(DeltaError::NoInline);
    };
    let (held, content_type) = held_version(&ctx, &known).await?;
    if Sha256Digest::of(&held).etag().to_string() != *base {
        return Err(DeltaError::OtherBase(base.clone()));
    }
    let new = apply(
        &held,
        delta,
        None,
        plan.announced.as_deref(),
        ctx.limits.max_body as u64,
    )?;
    let now = crate::clock::now();
    let how = format!("dcz pushed inline; base={base}");
    let received = warc::resource(
        &warc::Resource {
            uri: plan.url.as_str(),
            at: now,
            content_type: "application/octet-stream",
            body: delta,
            refers_to: None,
            how: &how,
            usage: None,
        },
        ctx.warc_level,
    );
    let resp = FetchResponse {
        url: page.clone(),
        status: 200,
        version: "HTTP/1.1",
        reason: "OK".into(),
        // The announcement says nothing of the media type: it is the held version's.
        headers: super::response_headers::page_headers(
            &content_type
                .map(|t| vec![("Content-Type".to_string(), t)])
                .unwrap_or_default(),
            &new,
        ),
        body: new.into(),
        truncated: false,
        fetched_at: now,
        elapsed: Duration::ZERO,
        remote: None,
        request_head: String::new(),
    };
    let derivation = Derivation {
        received,
        from: plan.url.clone(),
        how,
    };
    let f = examined(
        &ctx,
        &resp,
        (job.depth, &known),
        DeltaUse::Pushed,
        Some(derivation),
        usage,
    );
    tx.send(Outcome::Page {
        job,
        result: Ok(Box::new(f)),
        elapsed: Duration::ZERO,
        source: Source::Pushed,
    });
    Ok(())
}

/// A page fetched for a delta, examined as any fetch is, saying how the delta was used. A
/// new version rebuilt from a delta is archived as a `resource` referring to the delta.
pub(crate) fn examined(
    ctx: &Context,
    resp: &FetchResponse,
    (depth, known): (u32, &KnownPage),
    how: DeltaUse,
    derivation: Option<Derivation>,
    usage: webcoop_protocol::usage::Prefs,
) -> Fetched {
    let mut f = tasks::examine(
        resp,
        depth,
        Some(known),
        &ctx.policy,
        (ctx.limits.max_body, ctx.warc_level),
        usage,
    );
    let usage = tasks::usage_of(resp, usage);
    let usage = (!usage.is_empty()).then(|| usage.to_aipref());
    f.delta = Some(how);
    if let Some(d) = derivation {
        if !f.unchanged {
            let content_type = resp
                .header("content-type")
                .unwrap_or("application/octet-stream");
            f.record = RecordSlot::New(warc::resource(
                &warc::Resource {
                    uri: resp.url.as_str(),
                    at: resp.fetched_at,
                    content_type,
                    body: &resp.body,
                    refers_to: Some((&d.received.id, d.from.as_str())),
                    how: &d.how,
                    usage: usage.as_deref(),
                },
                ctx.warc_level,
            ));
        }
        f.received = Some(d.received);
    }
    f
}

/// The content of the copy held, read back from the archive, with its media type.
async fn held_version(
    ctx: &Arc<Context>,
    known: &KnownPage,
) -> Result<(Vec<u8>, Option<String>), DeltaError> {
    let Some((file, offset)) = known.content.clone() else {
        return Err(DeltaError::NothingHeld);
    };
    let path = ctx.warc_dir.join(&*file);
    let limit = ctx.limits.max_body;
    let unreadable = |source| DeltaError::HeldUnreadable {
        file: file.to_string(),
        source,
    };
    tokio::task::spawn_blocking(move || warc::held_at(&path, offset, limit))
        .await
        .map_err(|e| unreadable(std::io::Error::other(e)))?
        .map_err(unreadable)?
        .ok_or_else(|| DeltaError::HeldTorn {
            file: file.to_string(),
            offset,
        })
}

async fn try_delta(
    ctx: &Context,
    page: &Url,
    held: &[u8],
    plan: &DeltaPlan,
) -> Result<(FetchResponse, DeltaUse, Option<Derivation>), DeltaError> {
    let digest = Sha256Digest::of(held);
    let request = FetchRequest {
        url: plan.url.clone(),
        etag: Some(digest.etag().to_string()),
        last_modified: None,
        headers: vec![
            ("accept-encoding", "dcz, zstd, gzip".to_string()),
            ("available-dictionary", digest.to_structured_field()),
        ],
    };
    let resp = fetch::fetch(&ctx.client, &request, &ctx.limits)
        .await
        .map_err(DeltaError::Request)?;
    answered(ctx, page, held, plan, resp)
}

/// What a delta request's answer gives: the page it stands for, how the delta was used and,
/// for a page rebuilt from the delta, what it was made from.
pub(crate) fn answered(
    ctx: &Context,
    page: &Url,
    held: &[u8],
    plan: &DeltaPlan,
    resp: FetchResponse,
) -> Result<(FetchResponse, DeltaUse, Option<Derivation>), DeltaError> {
    let digest = Sha256Digest::of(held);
    if resp.truncated {
        return Err(DeltaError::TooLarge);
    }
    let size = resp.body.len() as u64;
    match resp.status {
        304 => {
            let mut same = resp.clone();
            same.url = page.clone();
            Ok((same, DeltaUse::Applied(size), None))
        }
        200 if resp
            .header("content-encoding")
            .is_some_and(|c| c.trim().eq_ignore_ascii_case("dcz")) =>
        {
            let new = apply(
                held,
                &resp.body,
                resp.header("etag"),
                plan.announced.as_deref(),
                ctx.limits.max_body as u64,
            )?;
            let derivation = Derivation {
                received: tasks::archived(&resp, ctx.warc_level),
                from: plan.url.clone(),
                how: format!("dcz from {}; base={}", plan.url, digest.etag()),
            };
            Ok((
                reconstructed(page, &resp, new),
                DeltaUse::Applied(size),
                Some(derivation),
            ))
        }
        200 => {
            // The whole body (the delta was not worth it, or the base unknown): as good as a GET.
            let mut full = resp.clone();
            full.url = page.clone();
            Ok((full, DeltaUse::Whole, None))
        }
        s => Err(DeltaError::Status(s)),
    }
}

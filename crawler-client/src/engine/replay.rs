//! Replay: the records written after the last saved batch (a crash) are read back and taken
//! as if just fetched, so nothing is fetched twice; a record torn mid-write is cut.

use super::{CrawlError, Engine, file_error};
use crate::analyze::{self, Received, url_norm};
use crate::archive::warc::{self, Position};
use crate::fetch::outcome::{Fetched, Outcome, RecordSlot, RobotsFetched, Source};
use crate::frontier::RobotsState;
use crate::frontier::robots;
use crate::ids::{Fp, HostId};
use crate::state::{KnownPage, Queued};
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

impl Engine {
    /// Reads back the records written after the last saved batch (a crash) and takes them
    /// as if just fetched, so nothing is fetched twice; cuts a record torn mid-write.
    pub(super) fn replay(&mut self) -> Result<(), CrawlError> {
        let committed: HashMap<String, u64> = self.store.warc_files()?.into_iter().collect();
        let dir = self.warc.dir().to_path_buf();
        let on_disk = warc::files(&dir, &self.settings.warc_prefix).map_err(file_error(&dir))?;
        let mut seen_fps = HashSet::new();
        // Queue rows of the hosts met so far, read once per host.
        let mut queued: HashMap<HostId, HashMap<Fp, Queued>> = HashMap::new();
        let mut newest = None;
        // The heads of deltas received, by record id, for the pages rebuilt from them.
        let mut deltas = HashMap::new();
        for (name, size) in on_disk {
            let from = committed.get(&name).copied().unwrap_or(0).min(size);
            let mut valid = from;
            if size > from {
                let path = dir.join(&name);
                let records = warc::read_records(&path, from).map_err(file_error(&path))?;
                for rec in &records {
                    valid = rec.offset + rec.length;
                    let pos = Position {
                        file: Arc::from(name.as_str()),
                        offset: rec.offset,
                        length: rec.length,
                    };
                    if self.replay_record(rec, pos, &mut seen_fps, &mut queued, &mut deltas)? {
                        self.run.record_replayed();
                    }
                }
                if valid < size {
                    tracing::warn!(
                        "{name}: cutting {} bytes of a record torn by a crash",
                        size - valid
                    );
                }
            }
            newest = Some((name, valid));
        }
        if let Some((name, valid)) = newest {
            self.warc
                .resume(&name, valid)
                .map_err(|e| file_error(&dir.join(&name))(e))?;
        }
        if self.run.counts().replayed > 0 {
            tracing::info!(
                "replayed {} records written after the last saved batch",
                self.run.counts().replayed
            );
        }
        self.commit()
    }

    fn replay_record(
        &mut self,
        rec: &warc::StoredRecord,
        pos: Position,
        seen_fps: &mut HashSet<Fp>,
        queued: &mut HashMap<HostId, HashMap<Fp, Queued>>,
        deltas: &mut HashMap<String, Vec<(String, String)>>,
    ) -> Result<bool, CrawlError> {
        let kind = rec.header("WARC-Type").unwrap_or("");
        if !matches!(kind, "response" | "revisit" | "resource") {
            return Ok(false);
        }
        let Some(url) = rec
            .header("WARC-Target-URI")
            .and_then(|u| Url::parse(u).ok())
        else {
            return Ok(false);
        };
        let http = if kind == "resource" {
            let Some(http) = rebuilt_page(rec, deltas) else {
                return Ok(false);
            };
            Some(http)
        } else {
            warc::parse_http(&rec.block)
        };
        if let (Some(h), Some(id)) = (&http, rec.header("WARC-Record-ID"))
            && kind == "response"
            && analyze::header(&h.headers, "content-encoding")
                .is_some_and(|c| c.trim().eq_ignore_ascii_case("dcz"))
        {
            // A delta as received: the page made from it follows (even where a site named the
            // page's own URL as its delta's).
            deltas.insert(id.to_string(), h.headers.clone());
            return Ok(false);
        }
        let Some(http) = http else {
            tracing::warn!(
                "{}: record at {} has no readable HTTP response; it will be fetched again",
                pos.file,
                pos.offset
            );
            return Ok(false);
        };
        let fp = url_norm::fingerprint(&url);
        if url.path() == "/robots.txt" && url.query().is_none() {
            if self.replay_robots(rec, &url, &http, &pos)? {
                return Ok(true);
            }
            if !self.frontier.seen(fp) {
                return Ok(false);
            }
        }
        if !seen_fps.insert(fp) {
            return Ok(false);
        }
        let Some(job) = self.queued_row(&url, fp, queued)? else {
            return Ok(false);
        };
        self.frontier.claim(job.host, job.seq);
        let known = self.store.page(job.fp)?;
        let fetched = self.replayed_page(rec, &url, http, &job, known, pos);
        self.handle(Outcome::Page {
            job,
            result: Ok(Box::new(fetched)),
            elapsed: Duration::ZERO,
            source: Source::Replayed,
        })?;
        Ok(true)
    }

    /// A robots.txt response of a host whose rules are not known yet is taken as read.
    fn replay_robots(
        &mut self,
        rec: &warc::StoredRecord,
        url: &Url,
        http: &warc::HttpMessage,
        pos: &Position,
    ) -> Result<bool, CrawlError> {
        let origin = url_norm::origin_key(url);
        let host = self.host_for(&origin)?;
        let unknown = self
            .frontier
            .host(host)
            .is_some_and(|h| matches!(h.robots, RobotsState::Unknown));
        if !unknown || rec.header("WARC-Type") != Some("response") {
            return Ok(false);
        }
        let body = analyze::decode(
            http.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-encoding"))
                .map(|(_, v)| v.as_str()),
            &http.body,
            rec.header("WARC-Truncated").is_some(),
            robots::MAX_BYTES,
        )
        .unwrap_or_default();
        let result = Ok(RobotsFetched {
            status: http.status,
            body,
            record: RecordSlot::Stored(pos.clone()),
        });
        self.handle(Outcome::Robots {
            host,
            result,
            elapsed: Duration::ZERO,
            source: Source::Replayed,
        })?;
        Ok(true)
    }

    /// The queue row a record was fetched for: found by an earlier replayed page (not saved
    /// yet), or saved in the queue (each host's rows read once).
    fn queued_row(
        &mut self,
        url: &Url,
        fp: Fp,
        queued: &mut HashMap<HostId, HashMap<Fp, Queued>>,
    ) -> Result<Option<Queued>, CrawlError> {
        let job = match self.frontier.unsaved_row(fp) {
            Some(row) => row,
            None => {
                let origin = url_norm::origin_key(url);
                let host = self.host_for(&origin)?;
                if let std::collections::hash_map::Entry::Vacant(e) = queued.entry(host) {
                    let rows = self.store.queued_of_host(host)?;
                    e.insert(rows.into_iter().map(|q| (q.fp, q)).collect());
                }
                match queued.get_mut(&host).and_then(|rows| rows.remove(&fp)) {
                    Some(row) => row,
                    None => return Ok(None),
                }
            }
        };
        Ok((job.url == url.as_str()).then_some(job))
    }

    /// A page record read back as the fetch that wrote it: a `response` analysed again, a
    /// `revisit` as the unchanged (or duplicate) content it stands for.
    fn replayed_page(
        &self,
        rec: &warc::StoredRecord,
        url: &Url,
        http: warc::HttpMessage,
        job: &Queued,
        known: Option<KnownPage>,
        pos: Position,
    ) -> Fetched {
        let kind = rec.header("WARC-Type").unwrap_or("");
        let truncated = rec.header("WARC-Truncated").is_some();
        let received = Received {
            url,
            status: http.status,
            headers: &http.headers,
            body: &http.body,
            truncated,
        };
        let refers_to = rec.header("WARC-Refers-To-Target-URI").map(str::to_string);
        let same_content = kind == "revisit"
            && rec
                .header("WARC-Profile")
                .is_some_and(|p| p.ends_with("identical-payload-digest"))
            && refers_to.as_deref() == Some(url.as_str());
        let whole = matches!(kind, "response" | "resource");
        let analysis = if whole {
            analyze::analyze(
                received,
                job.depth,
                &self.ctx.policy,
                self.settings.fetch.max_body,
            )
        } else {
            let not_modified = Received {
                status: 304,
                ..received
            };
            let mut a = analyze::analyze(not_modified, job.depth, &self.ctx.policy, 0);
            a.digest = known
                .as_ref()
                .and_then(|k| k.digest)
                .filter(|_| same_content);
            a.links.clear();
            a.feeds.clear();
            a
        };
        let held = known.as_ref().and_then(|k| k.digest);
        let ok = (200..300).contains(&http.status) && analysis.digest.is_some();
        Fetched {
            status: http.status,
            size: http.body.len() as u64,
            truncated,
            fetched_at: rec
                .header("WARC-Date")
                .and_then(|d| DateTime::parse_from_rfc3339(d).ok())
                .map_or_else(Utc::now, |d| d.with_timezone(&Utc)),
            retry_after: None,
            http_head: http.head.clone(),
            payload_digest: rec
                .header("WARC-Payload-Digest")
                .unwrap_or_default()
                .to_string(),
            unchanged: same_content || (whole && ok && held == analysis.digest),
            changed: whole && ok && held.is_some() && held != analysis.digest,
            refers_to: if kind == "revisit" { refers_to } else { None },
            analysis,
            record: RecordSlot::Stored(pos),
            received: None,
            known,
            delta: None,
        }
    }
}

/// A `resource` record read back as the response it stands for: a page rebuilt from a delta
/// gets the head its delta came with (as when it was made); a delta that came inline is
/// noted for the page after it, and is no page itself.
fn rebuilt_page(
    rec: &warc::StoredRecord,
    deltas: &mut HashMap<String, Vec<(String, String)>>,
) -> Option<warc::HttpMessage> {
    rec.header(warc::DELTA_FIELD)?;
    let Some(refers_to) = rec.header("WARC-Refers-To") else {
        if let Some(id) = rec.header("WARC-Record-ID") {
            deltas.insert(id.to_string(), Vec::new());
        }
        return None;
    };
    // A delta that came inline had no head: the page's media type is in its record (as it
    // is when the delta was read in an earlier, saved batch).
    let mut from = deltas.remove(refers_to).unwrap_or_default();
    if analyze::header(&from, "content-type").is_none()
        && let Some(t) = rec.header("Content-Type")
    {
        from.push(("Content-Type".into(), t.to_string()));
    }
    let headers = crate::coop::response_headers::page_headers(&from, &rec.block);
    let mut head = String::from("HTTP/1.1 200 OK\r\n");
    for (n, v) in &headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    Some(warc::HttpMessage {
        version: "HTTP/1.1",
        status: 200,
        reason: "OK".into(),
        headers,
        head,
        body: rec.block.clone(),
    })
}

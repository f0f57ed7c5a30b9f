//! The engine's handling of outcomes and its replay after a crash, on a crawl directory of its
//! own and outcomes built as the request tasks build them (no network).

use super::Engine;
use crate::config::{self, CrawlArgs, Settings};
use crate::fetch::outcome::{Outcome, Source};
use crate::fetch::{FetchError, FetchResponse, tasks};
use crate::frontier::Dispatch;
use crate::ids::HostId;
use crate::state::Queued;
use bytes::Bytes;
use clap::Parser;
use std::path::Path;
use std::time::{Duration, Instant};
use url::Url;

const SEED: &str = "http://site.test/";

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: CrawlArgs,
}

fn settings(out: &Path) -> Settings {
    let out = out.to_string_lossy().into_owned();
    // The made-up names are pinned here (documentation addresses), so that no resolver or
    // hosts file of the machine decides where they lead.
    let cli = Cli::parse_from([
        "webcoop-crawl",
        "--seeds",
        SEED,
        "--out",
        &out,
        "--resolve",
        "site.test=192.0.2.10",
        "--resolve",
        "other.test=192.0.2.20",
        "--allow-net",
        "192.0.2.0/24",
    ]);
    let mut s = config::settings(&cli.args).unwrap();
    s.max_attempts = 2;
    s.host_give_up = 3;
    // No delay between requests and no cooperation requests: the pages come out in turn.
    s.politeness.min_delay = Duration::ZERO;
    s.politeness.factor = 0.0;
    s.coop.mode = crate::coop::CoopMode::Off;
    s
}

/// An engine on `out` with its seed queued.
fn open(out: &Path) -> Engine {
    let (mut e, seeds) = Engine::open(settings(out)).unwrap();
    e.seed(&seeds);
    e
}

fn response(url: &str, status: u16, headers: &[(&str, &str)], body: &str) -> FetchResponse {
    FetchResponse {
        url: Url::parse(url).unwrap(),
        status,
        version: "HTTP/1.1",
        reason: "Whatever".into(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: Bytes::from(body.to_string()),
        truncated: false,
        fetched_at: chrono::Utc::now(),
        elapsed: Duration::from_millis(5),
        remote: None,
        request_head: format!("GET {url} HTTP/1.1\r\n\r\n"),
    }
}

/// What the frontier hands out next at `at`, counted as under way as the loop counts it.
fn take(e: &mut Engine, at: Instant) -> Option<Dispatch> {
    let d = e.frontier.next(&e.store, at).unwrap()?;
    if let Dispatch::Page(_) = d {
        e.in_flight.page_started();
    } else {
        e.in_flight.request_started();
    }
    Some(d)
}

fn page_job(d: Option<Dispatch>) -> Queued {
    match d {
        Some(Dispatch::Page(job)) => job,
        other => panic!("expected a page, got {other:?}"),
    }
}

/// The robots.txt of the site, read.
fn read_robots(e: &mut Engine) -> HostId {
    let Some(Dispatch::Robots(host)) = take(e, Instant::now()) else {
        panic!("robots.txt first")
    };
    let resp = response(
        &format!("{SEED}robots.txt"),
        200,
        &[],
        "User-agent: *\nDisallow: /private\n",
    );
    e.handle(Outcome::Robots {
        host,
        result: Ok(tasks::robots_from(&resp, 1)),
        elapsed: Duration::from_millis(5),
        source: Source::Request,
    })
    .unwrap();
    host
}

fn page_answer(
    e: &Engine,
    job: &Queued,
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
) -> Outcome {
    let resp = response(&job.url, status, headers, body);
    let f = tasks::examine(
        &resp,
        job.depth,
        None,
        &e.ctx.policy,
        (1 << 20, 1),
        webcoop_protocol::usage::Prefs::NONE,
    );
    Outcome::Page {
        job: job.clone(),
        result: Ok(Box::new(f)),
        elapsed: Duration::from_millis(5),
        source: Source::Request,
    }
}

#[test]
fn a_failed_page_is_retried_after_its_host_is_parked_then_recorded_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = open(dir.path());
    let host = read_robots(&mut e);
    assert_eq!(e.in_flight.requests(), 0);
    let job = page_job(take(&mut e, Instant::now()));
    e.handle(Outcome::Page {
        job: job.clone(),
        result: Err(FetchError::Other("connection reset".into())),
        elapsed: Duration::ZERO,
        source: Source::Request,
    })
    .unwrap();
    assert_eq!(e.unsaved.batch().retry, [(job.seq, 1)]);
    let parked = e
        .unsaved
        .batch()
        .hosts
        .last()
        .unwrap()
        .parked_until
        .unwrap();
    assert!(parked > crate::clock::now_ms(), "the host is parked");
    assert!(
        take(&mut e, Instant::now()).is_none(),
        "not before the park ends"
    );
    let later = Instant::now() + Duration::from_secs(3600);
    let again = page_job(take(&mut e, later));
    assert_eq!(again.seq, job.seq, "the same row, again");
    e.handle(Outcome::Page {
        job: again,
        result: Err(FetchError::Other("connection reset".into())),
        elapsed: Duration::ZERO,
        source: Source::Request,
    })
    .unwrap();
    let failed = e.unsaved.batch().pages.last().unwrap();
    assert_eq!(
        failed.error.as_deref(),
        Some("connection reset (2 attempts)")
    );
    assert_eq!(e.unsaved.batch().done, [job.seq]);
    assert_eq!(
        (
            e.in_flight.requests(),
            e.in_flight.pages(),
            e.run.counts().errors
        ),
        (0, 0, 1)
    );
    assert_eq!(e.frontier.host(host).unwrap().failures, 2);
    e.commit().unwrap();
    assert_eq!(e.store.figures().unwrap().failures, 1);
}

#[test]
fn a_429_waits_as_long_as_retry_after_asks_then_the_answer_is_recorded_with_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = open(dir.path());
    read_robots(&mut e);
    let job = page_job(take(&mut e, Instant::now()));
    let busy = page_answer(&e, &job, 429, &[("Retry-After", "120")], "slow down");
    e.handle(busy).unwrap();
    let parked = e
        .unsaved
        .batch()
        .hosts
        .last()
        .unwrap()
        .parked_until
        .unwrap();
    let wait = parked - crate::clock::now_ms();
    assert!((118_000..=120_000).contains(&wait), "{wait} ms");
    assert!(take(&mut e, Instant::now() + Duration::from_secs(100)).is_none());
    let again = page_job(take(&mut e, Instant::now() + Duration::from_secs(121)));
    let html =
        r#"<a href="/a">a</a> <a href="/private/b">b</a> <a href="http://other.test/">o</a>"#;
    let ok = page_answer(&e, &again, 200, &[("Content-Type", "text/html")], html);
    e.handle(ok).unwrap();
    let page = e.unsaved.batch().pages.last().unwrap();
    assert_eq!((page.status, page.url.as_str()), (Some(200), SEED));
    assert!(page.warc.is_some() && page.content.is_some());
    // The in-scope link robots.txt allows is queued; the one it forbids is recorded as such
    // when found, never queued.
    assert_eq!(e.frontier.queued(), 1);
    let forbidden = e
        .unsaved
        .batch()
        .pages
        .iter()
        .find(|p| p.url.ends_with("/private/b"))
        .unwrap();
    assert_eq!(forbidden.error.as_deref(), Some(crate::state::DISALLOWED));
    assert!(forbidden.status.is_none() && forbidden.warc.is_none());
    e.commit().unwrap();
    assert!(e.frontier.seen(
        crate::analyze::Link::to(&url::Url::parse(&format!("{}private/b", SEED)).unwrap()).fp
    ));
    let log = std::fs::read_to_string(dir.path().join("crawl.log")).unwrap();
    assert!(log.contains("retry in 120 s"), "{log}");
}

#[test]
fn records_written_after_the_last_batch_are_replayed_not_fetched_again_and_a_torn_one_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    let seed_fp;
    {
        let mut e = open(dir.path());
        read_robots(&mut e);
        e.commit().unwrap();
        let job = page_job(take(&mut e, Instant::now()));
        seed_fp = job.fp;
        let html = r#"<a href="/a">a</a> <a href="/b">b</a>"#;
        let ok = page_answer(&e, &job, 200, &[("Content-Type", "text/html")], html);
        e.handle(ok).unwrap();
        // The record is written; the batch that would point at it is not saved (a crash).
        e.warc.sync().unwrap();
    }
    let warc = std::fs::read_dir(dir.path().join("warc"))
        .unwrap()
        .map(|f| f.unwrap().path())
        .next()
        .unwrap();
    let whole = std::fs::metadata(&warc).unwrap().len();
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&warc)
            .unwrap();
        f.write_all(b"WARC/1.1\r\nWARC-Type: respo").unwrap();
    }
    let (mut e, seeds) = Engine::open(settings(dir.path())).unwrap();
    assert_eq!(
        e.store.page(seed_fp).unwrap(),
        None,
        "not saved before the crash"
    );
    e.replay().unwrap();
    e.seed(&seeds);
    assert_eq!(e.run.counts().replayed, 1);
    let page = e
        .store
        .page(seed_fp)
        .unwrap()
        .expect("replayed into the state");
    assert!(page.content.is_some());
    assert_eq!(
        std::fs::metadata(&warc).unwrap().len(),
        whole,
        "the torn record is cut"
    );
    // Its links are queued, and the seed is not handed out again.
    assert_eq!(e.frontier.queued(), 2);
    let mut urls = Vec::new();
    let mut at = Instant::now();
    while let Some(d) = take(&mut e, at) {
        let job = page_job(Some(d));
        urls.push(job.url.clone());
        e.frontier.finished(job.host, at);
        at += Duration::from_secs(3600);
    }
    urls.sort();
    assert_eq!(urls, ["http://site.test/a", "http://site.test/b"]);
}

const LAST_MODIFIED: &str = "Tue, 01 Sep 2026 10:00:00 GMT";

/// The agent's answer to a delta request: `new` coded against `old`, with the delta's head.
fn delta_answer(url: &str, old: &str, new: &str) -> FetchResponse {
    use webcoop_protocol::delta::dcz;
    use webcoop_protocol::validator::Sha256Digest;
    let etag = Sha256Digest::of(new.as_bytes()).etag().to_string();
    let mut resp = response(
        url,
        200,
        &[
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Encoding", "dcz"),
            ("ETag", &etag),
            ("Vary", "Available-Dictionary"),
            ("Last-Modified", LAST_MODIFIED),
        ],
        "",
    );
    resp.reason = "OK".into();
    resp.body = Bytes::from(dcz::encode(old.as_bytes(), new.as_bytes(), 3).unwrap());
    resp
}

/// Queues the seed again (saved), takes it, and hands the engine its rebuild from `old` to `new`
/// through a delta, as the delta task does.
fn rebuild(e: &mut Engine, seed: &Queued, old: &str, new: &str, at: Instant) {
    use crate::coop::requests;
    use crate::coop::shared::DeltaPlan;
    e.frontier
        .push_revisit(seed.host, seed.url.clone(), seed.fp, seed.depth);
    e.commit().unwrap();
    let job = page_job(take(e, at));
    assert_eq!(job.url, seed.url);
    let known = e.store.page(job.fp).unwrap().expect("held");
    let plan = DeltaPlan {
        url: Url::parse(&format!("{SEED}.well-known/webcoop/delta/")).unwrap(),
        announced: None,
        inline: None,
    };
    let answer = delta_answer(plan.url.as_str(), old, new);
    let page = Url::parse(&job.url).unwrap();
    let (resp, used, made) =
        requests::answered(&e.ctx, &page, old.as_bytes(), &plan, answer).unwrap();
    let f = requests::examined(
        &e.ctx,
        &resp,
        (job.depth, &known),
        used,
        made,
        webcoop_protocol::usage::Prefs::NONE,
    );
    e.handle(Outcome::Page {
        job,
        result: Ok(Box::new(f)),
        elapsed: Duration::from_millis(5),
        source: Source::Request,
    })
    .unwrap();
}

#[test]
fn a_page_rebuilt_from_a_delta_is_archived_as_made_and_replayed_after_a_crash_as_such() {
    use crate::archive::{cdxj, copies, warc};
    use webcoop_protocol::validator::Sha256Digest;
    let dir = tempfile::tempdir().unwrap();
    let filler = "words that stay the same ".repeat(100);
    let v = |n: u32| {
        format!("<html><body><p>version {n}</p><a href=\"/x{n}\">x</a>{filler}</body></html>")
    };
    let etag_of = |s: &str| Sha256Digest::of(s.as_bytes()).etag().to_string();
    let held = |dir: &Path| copies::content(dir, SEED).unwrap().unwrap();
    let seed;
    {
        let mut e = open(dir.path());
        read_robots(&mut e);
        e.commit().unwrap();
        seed = page_job(take(&mut e, Instant::now()));
        let first = page_answer(&e, &seed, 200, &[("Content-Type", "text/html")], &v(1));
        e.handle(first).unwrap();
        e.commit().unwrap();
        rebuild(
            &mut e,
            &seed,
            &v(1),
            &v(2),
            Instant::now() + Duration::from_secs(3600),
        );
        e.commit().unwrap();
        assert_eq!(held(dir.path()), v(2).as_bytes());
        let page = e.store.page(seed.fp).unwrap().unwrap();
        assert_eq!(page.etag.as_deref(), Some(etag_of(&v(2)).as_str()));

        // The delta as received, then the page made from it, which says so.
        let file = dir
            .path()
            .join("warc")
            .join(&*page.content.as_ref().unwrap().0);
        let records = warc::read_records(&file, 0).unwrap();
        let [.., delta, made] = &records[..] else {
            panic!("too few records")
        };
        assert_eq!(delta.header("WARC-Type"), Some("response"));
        let http = warc::parse_http(&delta.block).unwrap();
        assert!(http.head.contains("Content-Encoding: dcz"), "{}", http.head);
        assert_ne!(http.body, v(2).as_bytes(), "the delta, not the page");
        assert_eq!(made.header("WARC-Type"), Some("resource"));
        assert_eq!(made.header("WARC-Target-URI"), Some(SEED));
        assert_eq!(
            made.header("WARC-Refers-To"),
            delta.header("WARC-Record-ID")
        );
        assert_eq!(
            made.header("WARC-Refers-To-Target-URI"),
            delta.header("WARC-Target-URI")
        );
        assert!(
            made.header(warc::DELTA_FIELD)
                .unwrap()
                .starts_with("dcz from ")
        );
        assert_eq!(
            made.header("Content-Type"),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(made.block, v(2).as_bytes());
        assert_eq!(page.content.as_ref().unwrap().1, made.offset);
        let line = cdxj::line_of(made, "f.warc.gz").unwrap();
        assert!(
            line.json.contains("\"mime\": \"text/html\""),
            "{}",
            line.json
        );
        assert!(!line.json.contains("status"), "{}", line.json);
        // The delta's head is the page's: its Last-Modified kept, its links queued.
        assert_eq!(page.last_modified.as_deref(), Some(LAST_MODIFIED));
        let link = |n: u32| {
            crate::analyze::url_norm::fingerprint(&Url::parse(&format!("{SEED}x{n}")).unwrap())
        };
        assert!(e.frontier.seen(link(2)));

        // A second rebuild written, its batch not saved: a crash.
        rebuild(
            &mut e,
            &seed,
            &v(2),
            &v(3),
            Instant::now() + Duration::from_secs(7200),
        );
        e.warc.sync().unwrap();
    }
    let (mut e, seeds) = Engine::open(settings(dir.path())).unwrap();
    assert_eq!(held(dir.path()), v(2).as_bytes(), "before the replay");
    e.replay().unwrap();
    e.seed(&seeds);
    assert_eq!(e.run.counts().replayed, 1, "the page, not its delta");
    assert_eq!(held(dir.path()), v(3).as_bytes());
    let page = e.store.page(seed.fp).unwrap().unwrap();
    assert_eq!(
        page.etag.as_deref(),
        Some(etag_of(&v(3)).as_str()),
        "the head rebuilt from the delta's, as when it was made"
    );
    assert_eq!(page.last_modified.as_deref(), Some(LAST_MODIFIED));
    assert!(e.frontier.seen(crate::analyze::url_norm::fingerprint(
        &Url::parse(&format!("{SEED}x3")).unwrap()
    )));
}

#[test]
fn a_host_without_delay_gets_requests_ahead_until_a_429_which_sends_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = open(dir.path());
    let host = read_robots(&mut e);
    let seed = page_job(take(&mut e, Instant::now()));
    let links = "<a href=/a>a</a> <a href=/b>b</a> <a href=/c>c</a> <a href=/d>d</a>";
    let answer = page_answer(&e, &seed, 200, &[("Content-Type", "text/html")], links);
    e.handle(answer).unwrap();
    // Its delay is zero: one connection, and two more handed out to wait on the fetching side.
    let now = Instant::now();
    let jobs: Vec<Queued> = (0..3).map(|_| page_job(take(&mut e, now))).collect();
    assert!(take(&mut e, now).is_none(), "one connection and two ahead");
    assert_eq!(e.frontier.surplus(), 2);
    let tickets: Vec<_> = jobs.iter().map(|j| e.lane(j.host)).collect();
    // The first is answered 429 with `Retry-After: 0`; the fetching side stops the lane.
    tickets[0].0.stop();
    let busy = page_answer(&e, &jobs[0], 429, &[("Retry-After", "0")], "slow down");
    e.handle(busy).unwrap();
    // Read by the scheduler, the 429 no longer holds the lane: what it hands over now goes.
    let lane = tickets[0].0.clone();
    assert!(e.rt.block_on(lane.turn(lane.enter())).is_some());
    // What waited comes back unfetched and first in line again, without any ahead now.
    for (lane, ticket) in &tickets[1..] {
        assert!(e.rt.block_on(lane.turn(*ticket)).is_none());
    }
    for job in &jobs[1..] {
        e.handle(Outcome::Returned { job: job.clone() }).unwrap();
    }
    assert_eq!(
        (
            e.in_flight.requests(),
            e.in_flight.pages(),
            e.frontier.surplus()
        ),
        (0, 0, 0)
    );
    let first = page_job(take(&mut e, Instant::now()));
    assert_eq!(first.seq, jobs[0].seq, "the 429'd page, retried at once");
    assert!(
        take(&mut e, Instant::now()).is_none(),
        "none ahead after a 429"
    );
    e.handle(page_answer(&e, &first, 200, &[], "served"))
        .unwrap();
    let order: Vec<i64> = (0..3)
        .filter_map(|_| take(&mut e, Instant::now()).map(|d| page_job(Some(d)).seq))
        .collect();
    assert_eq!(
        order[..2],
        [jobs[1].seq, jobs[2].seq],
        "what came back, in the order handed out"
    );
    assert_eq!(e.frontier.host(host).map(|h| h.in_flight), Some(3));
}

#[test]
fn a_restart_soon_after_a_save_keeps_hosts_waiting_the_longest_delay_an_answer_sets() {
    use super::open::HostStart;
    use crate::frontier::politeness::Politeness;
    use crate::state::HostRecord;
    let now = Instant::now();
    let now_ms = crate::clock::now_ms();
    let start = |quiet| HostStart {
        token: "webcoop".into(),
        politeness: Politeness::default(),
        robots_ttl: Duration::from_secs(86_400),
        now,
        now_ms,
        quiet,
    };
    let contacted = HostRecord {
        id: HostId(1),
        origin: "http://a.test".into(),
        robots_status: Some(200),
        robots_body: Some(b"User-agent: *\nDisallow:\n".to_vec()),
        robots_fetched: Some(now_ms - 10_000),
        ..Default::default()
    };
    let never = HostRecord {
        id: HostId(2),
        origin: "http://b.test".into(),
        ..Default::default()
    };
    // Saved 2 s ago, answers of up to 30 s: the longest delay (30 s, the response-time
    // rule's cap) counted from the save, for a host not known to have been asked too (its
    // first request may have followed the save).
    let crashed = start(Some((Duration::from_secs(2), Duration::from_secs(30))));
    assert_eq!(crashed.state(&contacted).2, now + Duration::from_secs(28));
    assert_eq!(crashed.state(&never).2, now + Duration::from_secs(28));
    // The twins: a save long ago, and a new crawl, wait one delay.
    let one_delay = now + Duration::from_secs(1);
    let long_ago = start(Some((Duration::from_secs(60), Duration::from_secs(30))));
    assert_eq!(long_ago.state(&contacted).2, one_delay);
    assert_eq!(start(None).state(&contacted).2, one_delay);
    // Answers of at most 100 ms set at most the minimum delay.
    let quick = start(Some((Duration::ZERO, Duration::from_millis(100))));
    assert_eq!(quick.state(&contacted).2, one_delay);
}

/// Every page the frontier hands out, an hour apart, by the last segment of its path.
fn take_all(e: &mut Engine) -> std::collections::HashMap<String, Queued> {
    let mut jobs = std::collections::HashMap::new();
    let mut at = Instant::now();
    while let Some(d) = take(e, at) {
        let job = page_job(Some(d));
        e.frontier.finished(job.host, at);
        at += Duration::from_secs(3600);
        jobs.insert(job.url.rsplit('/').next().unwrap().to_string(), job);
    }
    jobs
}

#[test]
fn a_duplicate_is_found_in_the_batch_after_a_save_and_after_a_restart_without_a_digest_index() {
    let dir = tempfile::tempdir().unwrap();
    let same = "<p>the same words at every address</p>";
    let html = [("Content-Type", "text/html")];
    // The seed links to four pages; /a holds the words first, /b and /c repeat them, /d
    // holds others.
    let duplicates = |e: &Engine| e.store.figures().unwrap().duplicates;
    let mut jobs;
    {
        let mut e = open(dir.path());
        read_robots(&mut e);
        let seed = page_job(take(&mut e, Instant::now()));
        let links = r#"<a href="/a">a</a> <a href="/a2">a2</a> <a href="/b">b</a>
            <a href="/c">c</a> <a href="/d">d</a>"#;
        e.handle(page_answer(&e, &seed, 200, &html, links)).unwrap();
        e.commit().unwrap();
        jobs = take_all(&mut e);
        e.handle(page_answer(&e, &jobs["a"], 200, &html, same))
            .unwrap();
        // In the batch not saved yet.
        e.handle(page_answer(&e, &jobs["a2"], 200, &html, same))
            .unwrap();
        e.commit().unwrap();
        assert_eq!(duplicates(&e), 1, "found in the batch");
        // Saved: found through the fingerprint index.
        e.handle(page_answer(&e, &jobs["b"], 200, &html, same))
            .unwrap();
        e.commit().unwrap();
        assert_eq!(duplicates(&e), 2, "found in the state");
    }
    let (mut e, _) = Engine::open(settings(dir.path())).unwrap();
    // What was not fetched before the restart is handed out again.
    let left = take_all(&mut e);
    let mut names: Vec<&str> = left.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["c", "d"]);
    jobs.extend(left);
    e.handle(page_answer(&e, &jobs["c"], 200, &html, same))
        .unwrap();
    // The twin: other words are no duplicate.
    e.handle(page_answer(
        &e,
        &jobs["d"],
        200,
        &html,
        "<p>other words</p>",
    ))
    .unwrap();
    e.commit().unwrap();
    assert_eq!(duplicates(&e), 3, "found after a restart, /d not");
    let original = e.store.page(jobs["c"].fp).unwrap().unwrap();
    assert!(original.content.is_some(), "its content is /a's");
}

/// `outcome` with its content digest replaced: a site that made its page's xxh3 collide.
fn with_digest(mut outcome: Outcome, digest: u64) -> Outcome {
    if let Outcome::Page { result: Ok(f), .. } = &mut outcome {
        f.analysis.digest = Some(digest);
    }
    outcome
}

#[test]
fn a_page_made_to_collide_with_anothers_digest_is_not_archived_as_its_copy() {
    let dir = tempfile::tempdir().unwrap();
    let html = [("Content-Type", "text/html")];
    let duplicates = |e: &Engine| e.store.figures().unwrap().duplicates;
    let mut e = open(dir.path());
    read_robots(&mut e);
    let seed = page_job(take(&mut e, Instant::now()));
    let links = r#"<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a> <a href="/d">d</a>"#;
    e.handle(page_answer(&e, &seed, 200, &html, links)).unwrap();
    e.commit().unwrap();
    let jobs = take_all(&mut e);
    let victim = page_answer(&e, &jobs["a"], 200, &html, "<p>the victim's words</p>");
    let Outcome::Page { result: Ok(f), .. } = &victim else {
        panic!("a page")
    };
    let digest = f.analysis.digest.unwrap();
    e.handle(victim).unwrap();
    // Other words under the victim's digest, in the same batch, then after a save.
    let forged = |e: &Engine, job: &Queued| {
        with_digest(
            page_answer(e, job, 200, &html, "<p>the site's own</p>"),
            digest,
        )
    };
    e.handle(forged(&e, &jobs["b"])).unwrap();
    e.commit().unwrap();
    e.handle(forged(&e, &jobs["c"])).unwrap();
    e.commit().unwrap();
    assert_eq!(duplicates(&e), 0, "no copy claimed by a digest alone");
    // The twin: the victim's own words are its copy.
    let copy = page_answer(&e, &jobs["d"], 200, &html, "<p>the victim's words</p>");
    e.handle(copy).unwrap();
    e.commit().unwrap();
    assert_eq!(duplicates(&e), 1);
}

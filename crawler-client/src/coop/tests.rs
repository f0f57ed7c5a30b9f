//! Cooperation decisions on an in-memory frontier and schedule: what an announcement does to a
//! page, how trust moves with checked claims, how polls are paced by answers and failures.

use super::shared::{Effects, KnownPages, Reach};
use super::site::{CoopConfig, SiteCoop};
use super::state::CoopState;
use super::{CoopJob, MetaKind};
use crate::analyze::scope::{Limits, LinkPolicy, Scope};
use crate::analyze::url_norm;
use crate::clock::now_ms;
use crate::fetch::FetchError;
use crate::fetch::outcome::{CoopFetched, DeltaUse};
use crate::frontier::queue_store::memory::MemoryQueue;
use crate::frontier::robots::Rules;
use crate::frontier::{Dispatch, Frontier, RobotsState};
use crate::ids::{Fp, HostId};
use crate::refresh::allocation::Policy;
use crate::refresh::schedule::{Schedule, ScheduleConfig};
use crate::state::KnownPage;
use chrono::{TimeZone, Utc};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use url::Url;
use webcoop_protocol::changes_feed::{self, ChangeEntry, ChangeKind, ChangesFeed};

mod feeds;

const SITE: &str = "http://site.test";
const CHANGES: &str = "http://site.test/.well-known/webcoop/changes";

/// Pages held, by fingerprint.
#[derive(Default)]
struct PagesInMemory(HashMap<Fp, KnownPage>);

impl KnownPages for PagesInMemory {
    fn known(&self, fp: Fp) -> Option<KnownPage> {
        self.0.get(&fp).cloned()
    }
}

/// One site, its pages, and everything cooperation reaches.
struct World {
    queue: MemoryQueue,
    frontier: Frontier,
    schedule: Option<Schedule>,
    held: PagesInMemory,
    policy: LinkPolicy,
    host: HostId,
    coop: CoopState,
}

impl World {
    /// A site that offers a changes feed, discovered and believed, its robots.txt read.
    fn new(config: CoopConfig) -> World {
        let queue = MemoryQueue::default();
        let mut frontier = Frontier::load(&queue, 1, 0.15, |_| {
            (RobotsState::Unknown, None, Instant::now())
        })
        .unwrap();
        let host = frontier.host_for(&queue, SITE).unwrap();
        frontier.robots_known(
            host,
            Rules::AllowAll,
            Instant::now() + Duration::from_secs(3600),
        );
        let schedule = Schedule::new(ScheduleConfig {
            policy: Policy::Optimal,
            budget: None,
            cycle_secs: 86_400.0,
            min_interval_secs: 1.0,
            max_interval_secs: 30.0 * 86_400.0,
            prior_rate: 1.0 / 86_400.0,
        });
        let seeds = [Url::parse(SITE).unwrap()];
        let mut coop = CoopState::new(config, 42);
        *coop.site(host) = SiteCoop {
            discovered: true,
            listing: Some(format!("{SITE}/robots.rdf")),
            changes: Some(CHANGES.into()),
            cursor: Some(10),
            ..SiteCoop::default()
        };
        World {
            queue,
            frontier,
            schedule: Some(schedule),
            held: PagesInMemory::default(),
            policy: LinkPolicy::new(Scope::Host, &seeds, Limits::default()),
            host,
            coop,
        }
    }

    /// Runs a decision; returns what it left to the loop.
    fn decide<T>(&mut self, f: impl FnOnce(&mut CoopState, &mut Reach<'_>) -> T) -> (T, Effects) {
        let mut out = Effects::default();
        let mut reach = Reach {
            frontier: &mut self.frontier,
            schedule: self.schedule.as_mut(),
            pages: &self.held,
            policy: &self.policy,
            out: &mut out,
        };
        let t = f(&mut self.coop, &mut reach);
        (t, out)
    }

    /// A page visited `ago` ms ago with this validator, tracked by the schedule, and left to
    /// the site's announcements as a covering site's page is.
    fn held_page(&mut self, path: &str, ago: i64, validator: &str) -> Fp {
        let url = Url::parse(&format!("{SITE}{path}")).unwrap();
        let fp = url_norm::fingerprint(&url);
        let at = now_ms() - ago;
        self.held.0.insert(
            fp,
            KnownPage {
                fetched_at: at,
                validator: Some(validator.into()),
                content: Some(("w.warc.gz".into(), 0)),
                ..KnownPage::default()
            },
        );
        assert!(self.frontier.push(self.host, url.to_string(), fp, 1, 0));
        let schedule = self.schedule.as_mut().unwrap();
        schedule.visited(fp, self.host, url.as_str(), 1, at, None, 1.0);
        schedule.cover(fp);
        fp
    }

    fn due(&self, fp: Fp) -> i64 {
        self.schedule.as_ref().unwrap().page(fp).unwrap().due
    }

    fn covered(&self, fp: Fp) -> bool {
        self.schedule.as_ref().unwrap().page(fp).unwrap().covered
    }

    /// The site's changes feed with these entries, as the agent writes it.
    fn feed(entries: Vec<ChangeEntry>) -> CoopFetched {
        let feed = ChangesFeed {
            id: CHANGES.into(),
            title: "changes".into(),
            updated: Utc::now(),
            self_link: Url::parse(CHANGES).unwrap(),
            hub: None,
            next: None,
            head_seq: entries.last().map(|e| e.seq),
            resync: None,
            content_usage: None,
            entries,
        };
        let body = changes_feed::write(&feed).into_bytes();
        CoopFetched {
            status: 200,
            headers: Vec::new(),
            size: body.len() as u64,
            body,
            record: None,
        }
    }

    /// The changes feed polled, answering `got`.
    fn poll_changes(&mut self, got: Result<CoopFetched, FetchError>) -> Effects {
        let host = self.host;
        let job = CoopJob::Fetch {
            kind: MetaKind::Changes,
            url: Url::parse(CHANGES).unwrap(),
            etag: None,
            last_modified: None,
        };
        self.decide(|c, r| c.answered(r, host, job, got)).1
    }
}

fn change(seq: u64, kind: ChangeKind, path: &str, etag: Option<&str>) -> ChangeEntry {
    let url = Url::parse(&format!("{SITE}{path}")).unwrap();
    let time = Utc.timestamp_millis_opt(now_ms() - 1_000).unwrap();
    let mut e = ChangeEntry::new(seq, kind, url, time);
    e.etag = etag.and_then(|t| t.parse().ok());
    e
}

fn not_modified() -> CoopFetched {
    CoopFetched {
        status: 304,
        headers: Vec::new(),
        body: Vec::new(),
        size: 0,
        record: None,
    }
}

#[test]
fn an_announced_change_makes_a_held_page_due_now_with_a_delta_and_new_urls_are_queued() {
    let mut w = World::new(CoopConfig::default());
    let a = w.held_page("/a", 60_000, "\"sha256-old\"");
    let quiet = w.held_page("/quiet", 60_000, "\"sha256-q\"");
    assert!(w.due(a) > now_ms() + 3_600_000, "visited a minute ago");
    let before_quiet = w.due(quiet);
    let out = w.poll_changes(Ok(World::feed(vec![
        change(11, ChangeKind::Modified, "/a", Some("\"sha256-new\"")),
        change(12, ChangeKind::Created, "/new", Some("\"sha256-n\"")),
        change(9, ChangeKind::Modified, "/quiet", Some("\"sha256-x\"")),
    ])));
    assert!(w.due(a) <= now_ms(), "the change is fetched at once");
    assert_eq!(
        w.due(quiet),
        before_quiet,
        "an entry before the cursor is old news"
    );
    assert!(w.coop.announced_change(a), "visited without validators");
    let plan = w.coop.delta_plan(a).expect("a delta is planned");
    assert_eq!(
        plan.url.as_str(),
        "http://site.test/.well-known/webcoop/delta/a"
    );
    assert_eq!(plan.announced.as_deref(), Some("\"sha256-new\""));
    let new: Vec<&str> = out.links.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(new, ["http://site.test/new"]);
    let site = w.coop.site_state(w.host).unwrap();
    assert_eq!(site.cursor, Some(12));
    assert_eq!(site.stats.announced, 2);
}

#[test]
fn a_deletion_is_recorded_and_a_page_of_another_origin_is_counted_and_ignored() {
    let mut w = World::new(CoopConfig::default());
    let gone = w.held_page("/gone", 60_000, "\"sha256-g\"");
    let mut foreign = change(12, ChangeKind::Modified, "/x", None);
    foreign.url = Url::parse("http://victim.test/x").unwrap();
    let out = w.poll_changes(Ok(World::feed(vec![
        change(11, ChangeKind::Deleted, "/gone", None),
        foreign,
    ])));
    assert_eq!(out.gone.len(), 1);
    assert!(out.gone[0].gone && out.gone[0].url.ends_with("/gone"));
    assert!(w.schedule.as_ref().unwrap().page(gone).is_none());
    assert!(out.links.is_empty(), "the other origin's URL is not queued");
    assert_eq!(w.coop.site_state(w.host).unwrap().stats.foreign, 1);
}

#[test]
fn claims_proved_wrong_end_belief_and_claims_proved_right_restore_it() {
    let mut w = World::new(CoopConfig {
        check_share: 0.0,
        ..CoopConfig::default()
    });
    let host = w.host;
    let a = w.held_page("/a", 60_000, "\"sha256-v0\"");
    assert!(w.coop.covers(host) && w.covered(a));
    let mut seq = 10;
    let mut claim_and_visit = |w: &mut World, changed: bool| {
        seq += 1;
        let tag = format!("\"sha256-v{seq}\"");
        w.poll_changes(Ok(World::feed(vec![change(
            seq,
            ChangeKind::Modified,
            "/a",
            Some(&tag),
        )])));
        // The visit takes the delta planned for it, as the loop does when it starts it.
        let planned = w.coop.delta_plan(a).is_some();
        w.decide(|c, r| c.visited(r, host, a, (changed, None, false), None, true));
        planned
    };
    // "Changed", and the fetch finds the same content: each time the site is believed less.
    let mut wrong = 0;
    while w.coop.covers(host) {
        assert!(
            claim_and_visit(&mut w, false),
            "believed: a delta is planned"
        );
        wrong += 1;
        assert!(wrong < 20, "trust never fell");
    }
    assert!(
        wrong >= 3,
        "one wrong claim is not enough to stop believing ({wrong})"
    );
    assert!(!w.covered(a), "its pages are polled again");
    // A claim not believed is weighed but not acted on: no delta is planned.
    assert!(!claim_and_visit(&mut w, true));
    let mut right = 1;
    while !w.coop.covers(host) {
        claim_and_visit(&mut w, true);
        right += 1;
        assert!(right < 40, "trust never came back");
    }
    assert!(w.covered(a), "believed again: left to the announcements");
}

#[test]
fn polls_are_paced_by_answers_and_failures_hand_the_site_back_to_polling() {
    let config = CoopConfig::default();
    let mut w = World::new(config);
    let host = w.host;
    let a = w.held_page("/a", 60_000, "\"sha256-a\"");
    // Due now: the tick asks for the changes since the cursor.
    w.decide(|c, r| c.tick(r));
    assert!(w.coop.polling.contains(&host));
    let job = loop {
        match w.frontier.next(&w.queue, Instant::now()).unwrap() {
            Some(Dispatch::Coop(h, job)) => break (h, job),
            Some(Dispatch::Page(_)) => continue,
            other => panic!("expected the poll, got {other:?}"),
        }
    };
    let (h, CoopJob::Fetch { kind, url, .. }) = job else {
        panic!("a fetch")
    };
    assert_eq!((h, kind), (host, MetaKind::Changes));
    // Caught up, with deltas in use: the changes alone (a changed page comes as a delta).
    assert_eq!(url.as_str(), format!("{CHANGES}?since=10"));
    w.frontier.finished(host, Instant::now());
    // Nothing changed: the next poll is planned at the site's interval, not sooner.
    w.poll_changes(Ok(not_modified()));
    let site = w.coop.site_state(host).unwrap();
    let interval = site.poll_interval(&config);
    let next = site.next_poll.expect("planned");
    assert!(!w.coop.polling.contains(&host));
    assert!((next - now_ms() - (interval * 1000.0) as i64).abs() < 1_000);
    assert_eq!(site.stats.not_modified, 1);
    w.decide(|c, r| c.tick(r));
    assert!(!w.coop.polling.contains(&host), "not due again yet");
    // Failures in a row: the site no longer covers its pages.
    for _ in 0..config.failures_to_degrade {
        assert!(w.covered(a));
        w.poll_changes(Err(FetchError::Other("connection refused".into())));
    }
    assert!(!w.coop.covers(host));
    assert!(!w.covered(a), "polled like any other page");
    // It answers again: cooperation is back.
    w.poll_changes(Ok(not_modified()));
    assert!(w.coop.covers(host) && w.covered(a));
}

#[test]
fn a_pushed_inline_delta_for_a_held_copy_is_applied_without_a_request() {
    let mut w = World::new(CoopConfig::default());
    let a = w.held_page("/a", 60_000, "\"sha256-old\"");
    let mut e = change(11, ChangeKind::Modified, "/a", Some("\"sha256-new\""));
    e.delta = Some(webcoop_protocol::changes_feed::InlineDelta {
        encoding: webcoop_protocol::delta::DeltaEncoding::Dcz,
        base: "\"sha256-old\"".parse().unwrap(),
        data: b"delta bytes".to_vec(),
    });
    let out = w.poll_changes(Ok(World::feed(vec![e])));
    assert_eq!(out.inline.len(), 1, "rebuilt from the delta");
    assert_eq!(out.inline[0].link.fp, a);
    assert_eq!(
        out.inline[0].plan.inline.as_ref().unwrap().1,
        b"delta bytes"
    );
    assert!(w.due(a) > now_ms(), "no fetch is queued for it");
    // It could not be applied: the page is fetched after all.
    let url = out.inline[0].link.url.clone();
    let host = w.host;
    w.decide(|c, r| c.inline_failed(r, host, a, url, "base not held"));
    assert!(w.due(a) <= now_ms());
    let stats = &w.coop.site_state(w.host).unwrap().stats;
    assert_eq!(stats.delta_fallbacks, 1);
    w.decide(|c, r| {
        c.visited(
            r,
            host,
            a,
            (true, None, false),
            Some(&DeltaUse::Pushed),
            true,
        )
    });
    assert_eq!(w.coop.site_state(w.host).unwrap().stats.deltas, 1);
}

/// The site's changes with the content of `pages` (URL, body), as a batch.
fn batch_of(entries: Vec<ChangeEntry>, pages: &[(&str, &[u8])]) -> CoopFetched {
    use webcoop_protocol::snapshot::Entry;
    use webcoop_protocol::validator::Sha256Digest;
    let feed = World::feed(entries);
    let content: Vec<Entry> = pages
        .iter()
        .map(|(url, body)| Entry {
            url: (*url).to_string(),
            content_type: "text/html".into(),
            sha256: Sha256Digest::of(body),
            body: body.to_vec(),
        })
        .collect();
    let mut n = 0u8;
    let body = webcoop_protocol::batch::write(CHANGES, &feed.body, &content, Utc::now(), || {
        n += 1;
        webcoop_protocol::warc::record::record_id([n; 16])
    });
    CoopFetched {
        status: 200,
        headers: vec![("content-type".into(), "application/warc".into())],
        size: body.len() as u64,
        body,
        record: None,
    }
}

#[test]
fn a_batch_gives_the_pages_its_changes_vouch_for_and_the_rest_is_fetched() {
    use webcoop_protocol::validator::Sha256Digest;
    let tag = |b: &[u8]| Sha256Digest::of(b).etag().to_string();
    let mut w = World::new(CoopConfig::default());
    // Back after a restart: catching up.
    w.coop.site(w.host).catching_up = true;
    let a = w.held_page("/a", 60_000, "\"sha256-old-a\"");
    let b = w.held_page("/b", 60_000, "\"sha256-old-b\"");
    let a_url = format!("{SITE}/a");
    let b_url = format!("{SITE}/b");
    let out = w.poll_changes(Ok(batch_of(
        vec![
            change(11, ChangeKind::Modified, "/a", Some(&tag(b"new a"))),
            // The change names one digest, the batch carries other bytes: a lie.
            change(12, ChangeKind::Modified, "/b", Some(&tag(b"new b"))),
            change(13, ChangeKind::Created, "/c", Some(&tag(b"new c"))),
            {
                let mut e = change(14, ChangeKind::Created, "/x", Some(&tag(b"elsewhere")));
                e.url = Url::parse("http://other.test/x").unwrap();
                e
            },
        ],
        &[
            (&a_url, b"new a"),
            (&b_url, b"not what the change says"),
            (&format!("{SITE}/c"), b"new c"),
            ("http://other.test/x", b"elsewhere"),
        ],
    )));
    let taken: Vec<(&str, bool)> = out
        .batch
        .iter()
        .map(|p| (p.link.url.as_str(), p.known.is_some()))
        .collect();
    assert_eq!(
        taken,
        [
            (a_url.as_str(), true),
            (format!("{SITE}/c").as_str(), false)
        ]
    );
    let site = w.coop.site_state(w.host).unwrap();
    assert_eq!((site.stats.from_batch, site.stats.refuted), (2, 1));
    assert_eq!(site.cursor, Some(14));
    assert!(
        site.stats.foreign >= 1,
        "another origin's page is not taken"
    );
    // The page whose content was refused is fetched as announced; the one taken is not.
    assert!(w.due(b) <= now_ms(), "b is fetched");
    assert!(w.due(a) > now_ms() + 3_600_000, "a came with the batch");

    // A site no longer believed: nothing is taken from its batches.
    let mut w = World::new(CoopConfig::default());
    w.coop.site(w.host).catching_up = true;
    w.held_page("/a", 60_000, "\"sha256-old-a\"");
    w.coop.site(w.host).trust.refute(50.0);
    let out = w.poll_changes(Ok(batch_of(
        vec![change(11, ChangeKind::Modified, "/a", Some(&tag(b"new a")))],
        &[(&a_url, b"new a")],
    )));
    assert!(out.batch.is_empty());
    // A batch that does not read is a failed poll, and the site's changes are asked without
    // content from then on.
    let mut w = World::new(CoopConfig::default());
    w.coop.site(w.host).catching_up = true;
    let mut broken = batch_of(vec![], &[(&a_url, b"more pages than changes")]);
    broken.body.truncate(broken.body.len() - 3);
    w.poll_changes(Ok(broken));
    let site = w.coop.site_state(w.host).unwrap();
    assert_eq!(site.failures, 1);
    assert!(site.no_batches);
    let host = w.host;
    let (job, _) = w.decide(|c, r| c.poll_job(r, host));
    let Some(CoopJob::Fetch { url, .. }) = job else {
        panic!("a poll")
    };
    assert_eq!(url.as_str(), format!("{CHANGES}?since=10"));
}

#[test]
fn a_sites_stated_usage_preferences_only_ever_restrict_and_junk_refuses_everything() {
    use webcoop_protocol::usage::{Prefs, Purpose};
    let mut w = World::new(CoopConfig::default());
    let host = w.host;
    assert_eq!(w.coop.usage_of(host), Prefs::NONE, "nothing stated");
    w.coop.site(host).usage = Some("search=y, train-ai=n".into());
    let stated = w.coop.usage_of(host);
    assert!(stated.allows(Purpose::Search) && !stated.allows(Purpose::AiTrain));
    // What cannot be read might be a refusal: it refuses every purpose.
    for junk in ["train-ai=maybe", "\u{0}\u{1}", "search", ""] {
        w.coop.site(host).usage = Some(junk.into());
        assert_eq!(w.coop.usage_of(host), Prefs::REFUSE_ALL, "{junk:?}");
    }
    // A term no one knows is ignored, not a refusal.
    w.coop.site(host).usage = Some("future-term=n, search=y".into());
    assert!(w.coop.usage_of(host).allows(Purpose::AiTrain));
}

#[test]
fn stated_popularity_raises_pages_within_the_sites_share_and_only_from_a_believed_site() {
    let mut w = World::new(CoopConfig::default());
    w.coop.site(w.host).listed_urls = 4;
    let mut popular = change(11, ChangeKind::Created, "/popular", None);
    popular.popularity = Some(0.5);
    let mut rare = change(12, ChangeKind::Created, "/rare", None);
    rare.popularity = Some(0.0625);
    let quiet = change(13, ChangeKind::Created, "/quiet", None);
    let out = w.poll_changes(Ok(World::feed(vec![popular, rare, quiet])));
    let weights: Vec<f64> = out.boosts.iter().map(|(_, _, b)| *b).collect();
    assert_eq!(weights.len(), 2, "the page that states none gets none");
    // Shares are kept in proportion, scaled by the trust (0.8 for a new site) and bounded by
    // the site's share of the crawl (4 listed URLs of at least 4 known: all of it here).
    assert!((weights[0] - 0.5 * 0.8).abs() < 1e-9, "{weights:?}");
    assert!((weights[1] - 0.0625 * 0.8).abs() < 1e-9, "{weights:?}");
    let fp = out.boosts[0].1;
    assert!(w.coop.popularity_of(fp) > 0.0);
    // In the refresh schedule a stating site's pages weigh what people read, as far as the
    // site is trusted: importance counts for 1 - 0.8, the stated weight beside it; a page it
    // gives no figure keeps only its share of importance; another site's page is untouched.
    let importance = 0.01;
    let popular = w.coop.refresh_weight(w.host, fp, importance);
    assert!(
        (popular - (0.2 * importance + 0.5 * 0.8)).abs() < 1e-9,
        "{popular}"
    );
    let unread = w.coop.refresh_weight(w.host, Fp(999), importance);
    assert!((unread - 0.2 * importance).abs() < 1e-12, "{unread}");
    assert_eq!(
        w.coop.refresh_weight(HostId(77), fp, importance),
        importance
    );
    // A site whose claims are not believed states nothing, and what it stated goes.
    w.coop.site(w.host).trust.refute(50.0);
    let mut again = change(14, ChangeKind::Modified, "/popular", None);
    again.popularity = Some(0.5);
    let out = w.poll_changes(Ok(World::feed(vec![again])));
    assert!(out.boosts.is_empty());
    assert_eq!(w.coop.popularity_of(fp), 0.0);
    assert_eq!(w.coop.refresh_weight(w.host, fp, importance), importance);
    // The crawl's weight 0 ignores popularity altogether.
    let mut off = World::new(CoopConfig {
        popularity_weight: 0.0,
        ..CoopConfig::default()
    });
    let mut p = change(11, ChangeKind::Created, "/popular", None);
    p.popularity = Some(1.0);
    assert!(off.poll_changes(Ok(World::feed(vec![p]))).boosts.is_empty());
}

#[test]
fn a_handed_over_page_edited_since_is_explained_by_the_feed_and_an_unexplained_one_refutes() {
    use super::ledger::Claim;
    use webcoop_protocol::validator::Sha256Digest;
    let tag = |b: &[u8]| Sha256Digest::of(b).etag().to_string();
    // A site handed over /a and /b; /a's live page is not what it handed over.
    let handed = |w: &mut World| {
        let host = w.host;
        let a = w.held_page("/a", 1_000, &tag(b"handed a"));
        let b = w.held_page("/b", 1_000, &tag(b"handed b"));
        w.coop
            .ledger
            .expect(a, host, Claim::Matches(Sha256Digest::of(b"handed a")));
        w.coop.handed.hand(
            host,
            a,
            &format!("{SITE}/a"),
            Some(Sha256Digest::of(b"handed a")),
        );
        w.coop.handed.hand(
            host,
            b,
            &format!("{SITE}/b"),
            Some(Sha256Digest::of(b"handed b")),
        );
        let live = tag(b"edited a");
        w.decide(|c, r| c.visited(r, host, a, (true, Some(&live), false), None, true));
        a
    };
    let refuted = |w: &World| w.coop.site_state(w.host).unwrap().stats.refuted;
    // Edited after it was handed over: the feed's next reading announces it.
    let mut w = World::new(CoopConfig::default());
    let host = w.host;
    let a = handed(&mut w);
    assert!(w.coop.covers(host), "a question weighs nothing yet");
    assert_eq!(refuted(&w), 0);
    let next = w.coop.site_state(host).unwrap().next_poll.unwrap();
    assert!(
        next <= now_ms() + super::questions::SETTLE_MS,
        "the feed is read again soon"
    );
    w.coop.questions.ask(host, a, now_ms() - 6_000);
    let out = w.poll_changes(Ok(World::feed(vec![change(
        11,
        ChangeKind::Modified,
        "/a",
        Some(&tag(b"edited a")),
    )])));
    assert!(w.coop.questions.len() == 0 && out.disowned.is_empty());
    assert!(
        w.coop.covers(host) && refuted(&w) == 0,
        "explained: still believed"
    );

    // The twin: the feed, read after the settling time, says nothing of /a.
    let mut w = World::new(CoopConfig::default());
    let a = handed(&mut w);
    // Read too early, the feed does not settle it.
    w.poll_changes(Ok(World::feed(vec![change(
        11,
        ChangeKind::Modified,
        "/c",
        None,
    )])));
    assert_eq!((refuted(&w), w.coop.questions.len()), (0, 1));
    w.coop.questions.ask(w.host, a, now_ms() - 6_000);
    let out = w.poll_changes(Ok(World::feed(vec![change(
        12,
        ChangeKind::Modified,
        "/c",
        None,
    )])));
    assert!(!w.coop.covers(w.host), "unexplained: no longer believed");
    assert_eq!(refuted(&w), 1);
    let disowned: Vec<&str> = out.disowned.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(
        disowned,
        [format!("{SITE}/b").as_str()],
        "what else it handed over goes"
    );

    // A feed that does not answer: the question ends refuting after its longest wait.
    let mut w = World::new(CoopConfig::default());
    let a = handed(&mut w);
    let old = now_ms() - super::questions::QUESTION_MAX_MS - 1;
    w.coop.questions.ask(w.host, a, old);
    w.coop.next_tick = None;
    w.decide(|c, r| c.tick(r));
    assert!(!w.coop.covers(w.host) && refuted(&w) == 1);

    // A crawl not kept fresh reads no feed again: the live page refutes at once.
    let mut w = World::new(CoopConfig::default());
    w.schedule = None;
    let host = w.host;
    let a = url_norm::fingerprint(&Url::parse(&format!("{SITE}/a")).unwrap());
    w.coop
        .ledger
        .expect(a, host, Claim::Matches(Sha256Digest::of(b"handed a")));
    let live = tag(b"edited a");
    w.decide(|c, r| c.visited(r, host, a, (true, Some(&live), false), None, true));
    assert!(!w.coop.covers(host) && refuted(&w) == 1 && w.coop.questions.len() == 0);
}

//! A site's feeds (RSS, Atom, JSON Feed): the web's own way of saying what is new. A feed is
//! found where the web names it (a page's `<link rel="alternate" type="application/rss+xml">`,
//! a `Link` header), never probed for. Each reading is compared with the last: an entry not
//! seen before announces a page, an entry whose date moved announces a change, and an entry
//! that left the feed says nothing (a feed lists its newest entries only): its page returns to
//! the refresh schedule. The pages a feed lists are left to it while it lists them, kept by the
//! schedule's safety-net visit. A feed is read again conditionally, at the pace its own dates
//! show.
//!
//! This is the owner of a site's feeds, saved with the site ([`super::site::SiteCoop`]): which
//! feeds (at most [`MAX_FEEDS`]), their validators, the entries remembered (at most
//! [`MAX_REMEMBERED`] per feed), when each is read next, and which pages they list. The
//! coordinator reads them (`super::feed_reading`).

use super::poll_rate::poll_interval;
use crate::ids::Fp;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use url::Url;
use webcoop_protocol::web_feed::FeedFormat;

/// Feeds followed per site, at most: a blog names its posts' feed and its comments' feed,
/// a news site a feed per section; more are not needed to learn what is new.
const MAX_FEEDS: usize = 4;

/// Entries remembered per feed, at most: a feed lists tens, and what is remembered is saved
/// with the site at each reading that changes it.
const MAX_REMEMBERED: usize = 500;

/// The pace of a feed: changes seen over the seconds they were seen in, forgotten beyond a
/// day. Its prior (a change in five minutes, weighing five minutes) reads a feed nothing is
/// known of every few minutes, and gives way to what the first readings show within minutes:
/// a feed's changes come in bursts a one-hour prior would miss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct FeedPace {
    changes: f64,
    secs: f64,
}

impl FeedPace {
    const PRIOR_CHANGES: f64 = 0.05;
    const PRIOR_SECS: f64 = 300.0;
    const HORIZON_SECS: f64 = 86_400.0;

    fn observe(&mut self, changes: f64, secs: f64) {
        let secs = secs.max(0.0);
        if self.secs + secs > Self::HORIZON_SECS && self.secs > 0.0 {
            let keep = ((Self::HORIZON_SECS - secs) / self.secs).clamp(0.0, 1.0);
            self.changes *= keep;
            self.secs *= keep;
        }
        self.changes += changes;
        self.secs += secs;
    }

    /// Changes a second.
    fn rate(&self) -> f64 {
        (self.changes + Self::PRIOR_CHANGES) / (self.secs + Self::PRIOR_SECS)
    }

    /// The pace `dates` (ms, newest anywhere) show at `now`: of every k newest, the k changes
    /// since the k-th, taking the k that says most (a minute added to each span, so that two
    /// entries of the same second do not say "every second").
    fn from_dates(dates: &mut [i64], now: i64) -> FeedPace {
        dates.sort_unstable_by(|a, b| b.cmp(a));
        // No dates: the prior alone.
        let mut best: Option<FeedPace> = None;
        for (k, t) in dates.iter().enumerate() {
            let secs = (now - (*t).min(now)) as f64 / 1000.0 + 60.0;
            let candidate = FeedPace {
                changes: (k + 1) as f64,
                secs,
            };
            if best.is_none_or(|b| candidate.rate() > b.rate()) {
                best = Some(candidate);
            }
        }
        best.unwrap_or_default()
    }
}

/// Failed reads in a row after which a feed is dropped (it is found again if a page names it).
const MAX_FAILURES: u32 = 5;

/// An entry as last read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Seen {
    /// Its page's fingerprint.
    fp: u64,
    /// Its date (ms), as the feed gave it.
    date: Option<i64>,
    /// The digest of its text.
    #[serde(default)]
    digest: u64,
}

/// One feed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Feed {
    url: String,
    format: Option<FeedFormat>,
    etag: Option<String>,
    last_modified: Option<String>,
    /// Entries of the last reading, by identity.
    entries: BTreeMap<String, Seen>,
    /// When it was last read (ms), and when it is due again.
    read_at: Option<i64>,
    next_read: Option<i64>,
    /// Its pace of change: new and changed entries per time read.
    #[serde(default)]
    pace: FeedPace,
    failures: u32,
    /// The WebSub topic (`rel="self"`) and hubs it names.
    topic: Option<String>,
    hubs: Vec<String>,
}

/// What one reading of a feed changed.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Reading {
    /// Whether it was the feed's first reading (its entries only seed the crawl).
    pub(crate) first: bool,
    /// Entries not seen before, or whose date or text moved: their index in the reading,
    /// and the date to state of their page (the entry's; for an entry rewritten without a
    /// new date, the previous reading's: it changed since then).
    pub(crate) announced: Vec<(usize, Option<i64>)>,
    /// Pages that left the feed (and no other feed of the site lists).
    pub(crate) fell_off: Vec<Fp>,
}

/// An entry of a reading: identity, its page, its date (ms) and the digest of its text.
pub(crate) type Entry = (String, Fp, Option<i64>, u64);

/// A site's feeds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SiteFeeds {
    feeds: Vec<Feed>,
}

/// The pacing of feed reads: the outdated-probability target and the bounds, seconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    /// Largest acceptable probability that the picture of the feed is outdated.
    pub(crate) max_outdated: f64,
    /// Shortest time between reads.
    pub(crate) min: f64,
    /// Longest time between reads.
    pub(crate) max: f64,
}

impl SiteFeeds {
    /// A page or header names `url` as a feed: followed from now on (`true`) unless it is
    /// followed already or the site has its share of feeds.
    pub(crate) fn found(&mut self, url: &Url) -> bool {
        let url = url.as_str();
        if self.feeds.len() >= MAX_FEEDS || self.feeds.iter().any(|f| f.url == url) {
            return false;
        }
        self.feeds.push(Feed {
            url: url.to_string(),
            ..Feed::default()
        });
        true
    }

    /// Whether `url` is one of the site's feeds.
    pub(crate) fn follows(&self, url: &Url) -> bool {
        self.feeds.iter().any(|f| f.url == url.as_str())
    }

    /// Whether a feed of the site was read as one (a feed named but never readable, such as a
    /// page that only starts like RSS, is no cooperation).
    pub(crate) fn any_read(&self) -> bool {
        self.feeds.iter().any(|f| f.format.is_some())
    }

    /// The feed due first at `now` (ms), with its validators: never read, or due; a feed a
    /// hub pushes as `pushed` (its topic) only once `backup` ms passed since it was read.
    pub(crate) fn due(
        &self,
        now: i64,
        (pushed, backup): (Option<&str>, i64),
    ) -> Option<(Url, Option<String>, Option<String>)> {
        self.feeds
            .iter()
            .filter(|f| f.next_read.is_none_or(|t| t <= now))
            .filter(|f| {
                let is_pushed = pushed.is_some_and(|t| f.url == t || f.topic.as_deref() == Some(t));
                !is_pushed || f.read_at.is_none_or(|r| now - r >= backup)
            })
            .min_by_key(|f| f.next_read.unwrap_or(i64::MIN))
            .and_then(|f| {
                Some((
                    Url::parse(&f.url).ok()?,
                    f.etag.clone(),
                    f.last_modified.clone(),
                ))
            })
    }

    /// A feed never read, with no validators: a crawl that keeps nothing fresh reads each
    /// feed once, for the pages it names.
    pub(crate) fn unread(&self) -> Option<Url> {
        self.feeds
            .iter()
            .find(|f| f.read_at.is_none() && f.failures == 0)
            .and_then(|f| Url::parse(&f.url).ok())
    }

    /// When a feed is due next (ms): one never read is due now (0, the epoch: a time, never
    /// a sentinel the caller's arithmetic could overflow on).
    pub(crate) fn next_due(&self) -> Option<i64> {
        self.feeds.iter().map(|f| f.next_read.unwrap_or(0)).min()
    }

    /// Whether a feed of the site lists page `fp` now.
    pub(crate) fn lists(&self, fp: Fp) -> bool {
        self.feeds
            .iter()
            .any(|f| f.entries.values().any(|s| s.fp == fp.0))
    }

    /// The hub and topic to subscribe to: the first feed read that names both.
    pub(crate) fn hub(&self) -> Option<(String, String)> {
        self.feeds
            .iter()
            .find_map(|f| Some((f.hubs.first()?.clone(), f.topic.clone()?)))
    }

    /// Whether `topic` is one of the site's feeds (as read, or as it names itself).
    pub(crate) fn is_topic(&self, topic: &str) -> Option<Url> {
        self.feeds
            .iter()
            .find(|f| f.url == topic || f.topic.as_deref() == Some(topic))
            .and_then(|f| Url::parse(&f.url).ok())
    }

    fn get(&mut self, url: &Url) -> Option<&mut Feed> {
        self.feeds.iter_mut().find(|f| f.url == url.as_str())
    }

    /// The feed at `url` was read at `now` (ms): its `entries`, in the feed's order, the ones
    /// of the site's own pages. Returns what moved; the caller announces the pages of entries
    /// new or moved.
    pub(crate) fn read(
        &mut self,
        url: &Url,
        (format, topic, hubs, updated): (FeedFormat, Option<&Url>, &[Url], Option<i64>),
        entries: &[Entry],
        validators: (Option<String>, Option<String>),
        (now, pace): (i64, Pace),
    ) -> Reading {
        let Some(at) = self.feeds.iter().position(|f| f.url == url.as_str()) else {
            return Reading::default();
        };
        let before_all: BTreeSet<u64> = self.listed();
        let feed = &mut self.feeds[at];
        let first = feed.read_at.is_none();
        let mut next: BTreeMap<String, Seen> = BTreeMap::new();
        let mut announced = Vec::new();
        for (i, (id, fp, date, digest)) in entries.iter().enumerate() {
            if next.len() >= MAX_REMEMBERED || next.contains_key(id) {
                continue;
            }
            match feed.entries.get(id) {
                Some(seen) if seen.fp == fp.0 && seen.date == *date && seen.digest == *digest => {}
                Some(seen) if seen.fp == fp.0 && seen.date == *date => {
                    announced.push((i, feed.read_at.map(|t| t + 1)));
                }
                _ => announced.push((i, *date)),
            }
            next.insert(
                id.clone(),
                Seen {
                    fp: fp.0,
                    date: *date,
                    digest: *digest,
                },
            );
        }
        let elapsed = feed.read_at.map(|t| (now - t).max(0) as f64 / 1000.0);
        match elapsed {
            // The first reading's pace is what its dates show, the feed's own among them.
            None => {
                let mut dates: Vec<i64> =
                    entries.iter().filter_map(|e| e.2).chain(updated).collect();
                feed.pace = FeedPace::from_dates(&mut dates, now);
            }
            Some(secs) => feed.pace.observe(announced.len() as f64, secs),
        }
        feed.entries = next;
        feed.format = Some(format);
        feed.topic = topic.map(Url::to_string);
        feed.hubs = hubs.iter().map(Url::to_string).collect();
        (feed.etag, feed.last_modified) = validators;
        feed.failures = 0;
        feed.read_at = Some(now);
        feed.next_read = Some(now + next_read_ms(&feed.pace, pace));
        let after_all = self.listed();
        Reading {
            first,
            announced,
            fell_off: before_all
                .difference(&after_all)
                .map(|&fp| Fp(fp))
                .collect(),
        }
    }

    /// A hub delivered the feed at `url`: its `entries` are merged with those remembered (a
    /// delivery may carry only what changed, so an entry it omits says nothing). Returns the
    /// entries to announce, as [`SiteFeeds::read`] does.
    pub(crate) fn read_pushed(
        &mut self,
        url: &Url,
        entries: &[Entry],
    ) -> Vec<(usize, Option<i64>)> {
        let Some(feed) = self.get(url) else {
            return Vec::new();
        };
        let mut announced = Vec::new();
        for (i, (id, fp, date, digest)) in entries.iter().enumerate() {
            let seen = Seen {
                fp: fp.0,
                date: *date,
                digest: *digest,
            };
            match feed.entries.get(id) {
                Some(old) if *old == seen => continue,
                Some(old) if old.fp == seen.fp && old.date == seen.date => {
                    announced.push((i, feed.read_at.map(|t| t + 1)));
                }
                _ => announced.push((i, *date)),
            }
            if feed.entries.len() < MAX_REMEMBERED || feed.entries.contains_key(id) {
                feed.entries.insert(id.clone(), seen);
            }
        }
        announced
    }

    /// The feed at `url` answered 304 at `now`: nothing new.
    pub(crate) fn unchanged(&mut self, url: &Url, now: i64, pace: Pace) {
        if let Some(feed) = self.get(url) {
            let secs = feed
                .read_at
                .map_or(0.0, |t| (now - t).max(0) as f64 / 1000.0);
            feed.pace.observe(0.0, secs);
            feed.failures = 0;
            feed.read_at = Some(now);
            feed.next_read = Some(now + next_read_ms(&feed.pace, pace));
        }
    }

    /// The feed at `url` could not be read at `now`: tried again later, dropped after
    /// [`MAX_FAILURES`] in a row (its pages return to the schedule). Returns the pages it
    /// listed when it was dropped.
    pub(crate) fn failed(&mut self, url: &Url, now: i64, pace: Pace) -> Option<Vec<Fp>> {
        let at = self.feeds.iter().position(|f| f.url == url.as_str())?;
        let feed = &mut self.feeds[at];
        feed.failures += 1;
        if feed.failures < MAX_FAILURES {
            let backoff = (pace.max * 1000.0) as i64 / 4 * i64::from(feed.failures);
            feed.next_read = Some(now + backoff.max((pace.min * 1000.0) as i64));
            return None;
        }
        let before = self.listed();
        self.feeds.remove(at);
        let after = self.listed();
        Some(before.difference(&after).map(|&fp| Fp(fp)).collect())
    }

    /// Every page the site's feeds list.
    fn listed(&self) -> BTreeSet<u64> {
        self.feeds
            .iter()
            .flat_map(|f| f.entries.values().map(|s| s.fp))
            .collect()
    }
}

/// Milliseconds to the next read of a feed changing at `feed`'s pace.
fn next_read_ms(feed: &FeedPace, pace: Pace) -> i64 {
    (poll_interval(feed.rate(), pace.max_outdated, pace.min, pace.max) * 1000.0) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACE: Pace = Pace {
        max_outdated: 0.05,
        min: 10.0,
        max: 3_600.0,
    };

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn entry(id: &str, fp: u64, date: Option<i64>) -> Entry {
        (id.to_string(), Fp(fp), date, 0)
    }

    fn read(f: &mut SiteFeeds, url: &Url, entries: &[Entry], now: i64) -> (Reading, Vec<usize>) {
        let r = f.read(
            url,
            (FeedFormat::Atom, None, &[], None),
            entries,
            (Some("\"v\"".into()), None),
            (now, PACE),
        );
        let said = r.announced.iter().map(|(i, _)| *i).collect();
        (r, said)
    }

    #[test]
    fn new_and_moved_entries_are_announced_and_one_that_left_returns_its_page() {
        let mut f = SiteFeeds::default();
        let feed = u("https://a.test/feed/");
        assert!(f.found(&feed) && !f.found(&feed));
        assert!(f.due(0, (None, 0)).is_some());
        // Never read: due now, as a time the loop can subtract from.
        assert_eq!(f.next_due(), Some(0));
        let day = 86_400_000;
        let now = 10 * day;
        let (r, said) = read(
            &mut f,
            &feed,
            &[
                entry("1", 11, Some(now - day)),
                entry("2", 12, Some(now - 2 * day)),
            ],
            now,
        );
        assert!(r.first && said == [0, 1] && r.fell_off.is_empty());
        assert_eq!(r.announced[0].1, Some(now - day));
        assert!(f.lists(Fp(11)) && f.lists(Fp(12)));
        // Read with validators, not due again at once.
        let (_, etag, _) = f.due(i64::MAX, (None, 0)).unwrap();
        assert_eq!(etag.as_deref(), Some("\"v\""));
        assert!(f.due(now + 1, (None, 0)).is_none());

        // A new entry at the top; entry 1 edited; entry 2 fell off the end.
        let (r, said) = read(
            &mut f,
            &feed,
            &[entry("3", 13, Some(now + 5)), entry("1", 11, Some(now + 4))],
            now + 60_000,
        );
        assert!(!r.first);
        assert_eq!(said, [0, 1]);
        assert_eq!(r.fell_off, [Fp(12)]);
        assert!(!f.lists(Fp(12)) && f.lists(Fp(13)));
        // The same again: nothing announced.
        let (r, said) = read(
            &mut f,
            &feed,
            &[entry("3", 13, Some(now + 5)), entry("1", 11, Some(now + 4))],
            now + 120_000,
        );
        assert_eq!((said.len(), r.fell_off.len()), (0, 0));
        // Entry 3 rewritten without a new date: changed since the last reading.
        let mut rewritten = entry("3", 13, Some(now + 5));
        rewritten.3 = 7;
        let (r, _) = read(
            &mut f,
            &feed,
            &[rewritten, entry("1", 11, Some(now + 4))],
            now + 180_000,
        );
        assert_eq!(r.announced, [(0, Some(now + 120_001))]);
    }

    #[test]
    fn a_busy_feed_is_read_often_and_a_quiet_one_rarely() {
        let hour = 3_600_000;
        let now = 100 * hour;
        let busy: Vec<_> = (0..20)
            .map(|i| {
                entry(
                    &i.to_string(),
                    i,
                    Some(now - 7 * hour + i as i64 * (hour / 3)),
                )
            })
            .collect();
        let quiet: Vec<_> = (0..20)
            .map(|i| entry(&i.to_string(), i, Some(now - (30 + i as i64) * 24 * hour)))
            .collect();
        let mut a = SiteFeeds::default();
        let mut b = SiteFeeds::default();
        let feed = u("https://a.test/feed/");
        a.found(&feed);
        b.found(&feed);
        read(&mut a, &feed, &busy, now);
        read(&mut b, &feed, &quiet, now);
        let (ta, tb) = (a.next_due().unwrap() - now, b.next_due().unwrap() - now);
        assert!(ta < tb, "{ta} {tb}");
        assert!(ta <= 600_000, "{ta}");
        assert_eq!(tb, 3_600_000);
    }

    #[test]
    fn a_feed_its_hub_pushes_is_read_only_as_a_backup_however_fast_its_pace() {
        let now = 1_000_000_000_000;
        let feed = u("https://a.test/feed/");
        let mut f = SiteFeeds::default();
        f.found(&feed);
        // Ten entries in the last ten seconds: read again at the 10-s floor.
        let busy: Vec<Entry> = (0..10)
            .map(|i| entry(&i.to_string(), i, Some(now - i as i64 * 1_000)))
            .collect();
        read(&mut f, &feed, &busy, now);
        let soon = now + 15_000;
        assert!(f.due(soon, (None, 0)).is_some());
        let pushed = (Some(feed.as_str()), 600_000);
        assert!(f.due(soon, pushed).is_none());
        assert!(f.due(now + 600_000, pushed).is_some());
        // Another topic pushed: this feed keeps its pace.
        assert!(
            f.due(soon, (Some("https://a.test/other/"), 600_000))
                .is_some()
        );
    }

    #[test]
    fn a_burst_of_recent_entries_is_read_again_within_seconds_and_learnt_from() {
        let now = 1_000_000_000_000;
        // Three edits in the last four seconds, the rest two weeks old.
        let mut dates: Vec<i64> = vec![now - 1_000, now - 2_500, now - 4_000];
        dates.extend((0..7).map(|i| now - 14 * 86_400_000 - i));
        let p = FeedPace::from_dates(&mut dates, now);
        let first = next_read_ms(&p, PACE);
        assert!(first <= 12_000, "{first}");
        // Nothing known: a few minutes.
        let none = next_read_ms(&FeedPace::default(), PACE);
        assert!((200_000..=400_000).contains(&none), "{none}");
        // Readings a second apart that each find a change: read every second or so.
        let mut p = p;
        for _ in 0..20 {
            p.observe(1.0, 1.0);
        }
        assert!(next_read_ms(&p, PACE) <= 10_000 * 2);
    }

    #[test]
    fn a_site_follows_a_few_feeds_and_drops_one_that_keeps_failing() {
        let mut f = SiteFeeds::default();
        for i in 0..MAX_FEEDS + 2 {
            f.found(&u(&format!("https://a.test/f{i}")));
        }
        assert_eq!(f.feeds.len(), MAX_FEEDS);
        let feed = u("https://a.test/f0");
        read(&mut f, &feed, &[entry("1", 1, None)], 0);
        for _ in 1..MAX_FAILURES {
            assert!(f.failed(&feed, 0, PACE).is_none());
        }
        assert_eq!(f.failed(&feed, 0, PACE), Some(vec![Fp(1)]));
        assert_eq!(f.feeds.len(), MAX_FEEDS - 1);
        // Entries past what is remembered, and an identity listed twice, are not kept.
        let g = u("https://a.test/f1");
        let many: Vec<_> = (0..MAX_REMEMBERED as u64 + 10)
            .map(|i| entry(&i.to_string(), i, None))
            .chain([entry("0", 1 << 40, None)])
            .collect();
        let (r, _) = read(&mut f, &g, &many, 0);
        assert_eq!(r.announced.len(), MAX_REMEMBERED);
        assert!(!f.lists(Fp(1 << 40)));
    }

    #[test]
    fn the_hub_of_a_feed_that_names_itself_is_subscribed_to() {
        let mut f = SiteFeeds::default();
        let feed = u("https://a.test/feed/");
        f.found(&feed);
        let hub = u("https://hub.example/");
        let topic = u("https://a.test/feed/");
        f.read(
            &feed,
            (
                FeedFormat::Rss2,
                Some(&topic),
                std::slice::from_ref(&hub),
                None,
            ),
            &[],
            (None, None),
            (0, PACE),
        );
        assert_eq!(
            f.hub(),
            Some(("https://hub.example/".into(), "https://a.test/feed/".into()))
        );
        // A delivery of one new entry: announced, and nothing else forgotten.
        f.read(
            &feed,
            (FeedFormat::Rss2, Some(&topic), &[], None),
            &[entry("1", 1, Some(5))],
            (None, None),
            (10, PACE),
        );
        assert!(f.unread().is_none());
        let pushed = f.read_pushed(&feed, &[entry("2", 2, Some(9))]);
        assert_eq!(pushed, [(0, Some(9))]);
        assert!(f.lists(Fp(1)) && f.lists(Fp(2)));
        assert!(f.read_pushed(&feed, &[entry("2", 2, Some(9))]).is_empty());
        assert_eq!(f.is_topic("https://a.test/feed/"), Some(feed));
        assert_eq!(f.is_topic("https://a.test/other/"), None);
    }
}

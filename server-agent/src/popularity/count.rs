//! Reads counted per page: each page's number of distinct visitors, decayed exponentially
//! (a week's half-life by default) so the figure says what people read lately. A visitor is
//! counted once per page per day: a client reading one page 100,000 times is one reader.
//!
//! Visitors are known only by a keyed hash of their address and user agent, the key drawn anew
//! each day and forgotten with it; the state keeps the decayed counts and, for the current day
//! only, which (page, visitor) pairs were counted.

use crate::store::{PageReads, Unsaved};
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

/// Seconds in a counting day.
pub(crate) const DAY: i64 = 86_400;
/// Pairs remembered for one day at most; past it, new pairs are not counted that day (a flood
/// of distinct clients costs memory no further).
const MAX_PAIRS: usize = 2_000_000;
/// Distinct visitors one address can be for one page in a day: a household or an office
/// behind one address reads as several people, but a client that changes its user agent with
/// every request is not a crowd.
pub(crate) const MAX_VISITORS_PER_ADDRESS: u32 = 4;

/// The counts.
#[derive(Debug)]
pub(crate) struct Counts {
    half_life: f64,
    pages: HashMap<String, PageReads>,
    /// The day counted now (days since the epoch), its key, and the pairs counted in it.
    day: i64,
    key: [u64; 2],
    pairs: HashSet<u64>,
    /// Pairs counted since the last save, and whether the day turned since then.
    unsaved: Vec<u64>,
    fresh_day: bool,
    /// Pages whose count changed, and pages forgotten, since the last save.
    touched: HashSet<String>,
    forgotten: Vec<String>,
}

impl Counts {
    /// Empty counts decaying with `half_life` seconds.
    pub(crate) fn new(half_life: f64) -> Counts {
        Counts {
            half_life: half_life.max(1.0),
            pages: HashMap::new(),
            day: i64::MIN,
            key: [0; 2],
            pairs: HashSet::new(),
            unsaved: Vec::new(),
            fresh_day: false,
            touched: HashSet::new(),
            forgotten: Vec::new(),
        }
    }

    /// Counts as saved: pages, and the current day's key and pairs.
    pub(crate) fn restore(
        &mut self,
        pages: HashMap<String, PageReads>,
        day: Option<(i64, [u64; 2], HashSet<u64>)>,
    ) {
        self.pages = pages;
        if let Some((d, key, pairs)) = day {
            self.day = d;
            self.key = key;
            self.pairs = pairs;
        }
    }

    fn decayed(&self, r: PageReads, now: i64) -> f64 {
        let dt = (now - r.at).max(0) as f64;
        r.visitors * 0.5f64.powf(dt / self.half_life)
    }

    /// The (page, client) pair as kept: a SipHash under the day's key (a client is never
    /// stored, only this, and the key goes with the day).
    fn pair(&self, page: &str, client: &str) -> u64 {
        siphash(self.key, page, client)
    }

    /// A visitor (`client`: its address and user agent, as logged, from `address`) read `page`
    /// at `at`.
    pub(crate) fn read(&mut self, page: &str, address: &str, client: &str, at: i64) {
        let day = at.div_euclid(DAY);
        if day > self.day {
            self.day = day;
            self.key = [rand::random(), rand::random()];
            self.pairs.clear();
            self.unsaved.clear();
            self.fresh_day = true;
        } else if day < self.day {
            // A line older than the day counted now (a log read late): its pairs are gone.
            return;
        }
        if self.pairs.len() >= MAX_PAIRS {
            return;
        }
        let pair = self.pair(page, client);
        if self.pairs.contains(&pair) {
            return;
        }
        // The address's places for this page: the first free one is taken, none left means
        // this address has been counted enough for the page today.
        let Some(place) = (0..MAX_VISITORS_PER_ADDRESS)
            .map(|k| self.pair(page, &format!("{address}\u{0}{k}")))
            .find(|h| !self.pairs.contains(h))
        else {
            return;
        };
        self.pairs.insert(pair);
        self.pairs.insert(place);
        self.unsaved.push(pair);
        self.unsaved.push(place);
        let now = at;
        let (visitors, readers) = match self.pages.get(page) {
            Some(r) => (self.decayed(*r, now), r.readers),
            None => (0.0, 0),
        };
        self.pages.insert(
            page.to_string(),
            PageReads {
                visitors: visitors + 1.0,
                at: now,
                readers: readers.saturating_add(1),
            },
        );
        self.touched.insert(page.to_string());
    }

    /// Forgets pages no longer published.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        let forgotten = &mut self.forgotten;
        self.pages.retain(|p, _| {
            let kept = keep(p);
            if !kept {
                forgotten.push(p.clone());
            }
            kept
        });
    }

    /// Each page's decayed visitors at `now`.
    pub(crate) fn visitors(&self, now: i64) -> impl Iterator<Item = (&str, f64)> {
        self.pages
            .iter()
            .map(move |(p, r)| (p.as_str(), self.decayed(*r, now)))
    }

    /// Each page's decayed visitors at `now`, with the distinct visitors it was read by (not
    /// decayed): the figure and what the threshold weighs.
    pub(crate) fn readers(&self, now: i64) -> impl Iterator<Item = (&str, f64, u64)> {
        self.pages
            .iter()
            .map(move |(p, r)| (p.as_str(), self.decayed(*r, now), r.readers))
    }

    /// The day counted now and its key.
    pub(crate) fn day(&self) -> (i64, [u64; 2]) {
        (self.day, self.key)
    }

    /// What changed since the last call.
    pub(crate) fn take_unsaved(&mut self) -> Unsaved {
        let touched = std::mem::take(&mut self.touched);
        Unsaved {
            pages: touched
                .into_iter()
                .filter_map(|p| self.pages.get(&p).map(|r| (p, *r)))
                .collect(),
            forgotten: std::mem::take(&mut self.forgotten),
            pairs: std::mem::take(&mut self.unsaved),
            fresh_day: std::mem::take(&mut self.fresh_day),
        }
    }
}

/// SipHash-1-3 of (page, client) under `key`.
fn siphash(key: [u64; 2], page: &str, client: &str) -> u64 {
    let mut h = siphasher::sip::SipHasher13::new_with_keys(key[0], key[1]);
    page.hash(&mut h);
    client.hash(&mut h);
    h.finish()
}

/// Each page's share of reads as published (`pages`: its decayed visitors and the distinct
/// visitors it was read by): pages read by fewer than `min_visitors` distinct visitors get
/// none (a rarely read page never reveals its few readers; counted whole, not decayed, so
/// that exactly the threshold passes); the rest their share of all reads, rounded to a power
/// of two.
pub(crate) fn published_shares(
    pages: impl Iterator<Item = (String, f64, u64)>,
    min_visitors: u64,
) -> HashMap<String, f64> {
    let all: Vec<(String, f64, u64)> = pages.collect();
    let total: f64 = all.iter().map(|(_, v, _)| v).sum();
    if total <= 0.0 {
        return HashMap::new();
    }
    all.into_iter()
        .filter(|(_, _, readers)| *readers >= min_visitors)
        .map(|(p, v, _)| (p, round_pow2(v / total)))
        .collect()
}

/// `x` (0 < x <= 1) rounded to the nearest power of two (in log scale).
pub(crate) fn round_pow2(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 0.0;
    }
    2f64.powi(x.log2().round().clamp(-60.0, 0.0) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visitor_counts_once_a_day_and_counts_fade() {
        let mut c = Counts::new(7.0 * 86_400.0);
        let t0 = 100 * DAY;
        for _ in 0..100_000 {
            c.read("a.html", "10.0.0.1", "10.0.0.1 Firefox", t0 + 5);
        }
        c.read("a.html", "10.0.0.2", "10.0.0.2 Firefox", t0 + 6);
        c.read("b.html", "10.0.0.1", "10.0.0.1 Firefox", t0 + 7);
        let v: HashMap<&str, f64> = c.visitors(t0 + 7).collect();
        assert!((v["a.html"] - 2.0).abs() < 1e-4, "{v:?}");
        assert!((v["b.html"] - 1.0).abs() < 1e-6);
        // The next day the same visitor counts again; a week later a count is halved.
        c.read("b.html", "10.0.0.1", "10.0.0.1 Firefox", t0 + DAY + 1);
        let v: HashMap<&str, f64> = c.visitors(t0 + DAY + 1).collect();
        let faded = 1.0 + 0.5f64.powf(1.0 / 7.0);
        assert!((v["b.html"] - faded).abs() < 1e-4, "{v:?}");
        let later: HashMap<&str, f64> = c.visitors(t0 + 7 + 7 * DAY).collect();
        assert!((later["a.html"] - 1.0).abs() < 1e-3, "{later:?}");
        // A line from a day already past is not counted (its pairs are forgotten).
        c.read("c.html", "10.0.0.9", "10.0.0.9 x", t0);
        assert!(!c.visitors(t0).any(|(p, _)| p == "c.html"));
    }

    #[test]
    fn one_address_is_a_few_visitors_at_most() {
        let mut c = Counts::new(7.0 * 86_400.0);
        let t0 = 100 * DAY;
        for i in 0..1000 {
            c.read("a.html", "10.0.0.1", &format!("10.0.0.1 Agent/{i}"), t0 + i);
            let address = format!("10.1.{}.{}", i / 256, i % 256);
            c.read("b.html", &address, &format!("{address} Firefox"), t0 + i);
        }
        let v: HashMap<&str, f64> = c.visitors(t0 + 1000).collect();
        assert!(
            (v["a.html"] - f64::from(MAX_VISITORS_PER_ADDRESS)).abs() < 0.01,
            "{v:?}"
        );
        assert!((v["b.html"] - 1000.0).abs() < 1.0, "{v:?}");
    }

    #[test]
    fn shares_are_rounded_and_rare_pages_get_none() {
        let visitors = vec![
            ("home".to_string(), 600.0, 600),
            ("news".to_string(), 300.0, 300),
            ("rare".to_string(), 9.0, 9),
            ("other".to_string(), 91.0, 91),
        ];
        let s = published_shares(visitors.into_iter(), 10);
        assert_eq!(s.get("home"), Some(&0.5), "0.6 rounds to 1/2");
        assert_eq!(s.get("news"), Some(&0.25), "0.3 rounds to 1/4");
        assert_eq!(s.get("other"), Some(&0.125), "0.091 rounds to 1/8");
        assert_eq!(s.get("rare"), None);
        assert_eq!(round_pow2(1.0), 1.0);
        assert_eq!(round_pow2(0.0), 0.0);
        assert_eq!(round_pow2(f64::NAN), 0.0);
    }

    #[test]
    fn pages_read_by_k_and_k_plus_one_visitors_get_a_figure_as_their_counts_decay_and_k_minus_one_none()
     {
        let mut c = Counts::new(7.0 * 86_400.0);
        let t0 = 100 * DAY;
        for i in 0..10 {
            c.read(
                "ten.html",
                &format!("10.0.0.{i}"),
                &format!("10.0.0.{i} F"),
                t0,
            );
        }
        for i in 0..11 {
            c.read(
                "eleven.html",
                &format!("10.0.3.{i}"),
                &format!("10.0.3.{i} F"),
                t0,
            );
        }
        for i in 0..9 {
            c.read(
                "nine.html",
                &format!("10.0.1.{i}"),
                &format!("10.0.1.{i} F"),
                t0,
            );
        }
        for i in 0..100 {
            c.read(
                "home.html",
                &format!("10.0.2.{i}"),
                &format!("10.0.2.{i} F"),
                t0,
            );
        }
        // A second and a day later the decayed counts are below ten; the readers are not.
        for later in [1, DAY] {
            let pages = c.readers(t0 + later).map(|(p, v, n)| (p.to_string(), v, n));
            let s = published_shares(pages, 10);
            assert!(s.contains_key("ten.html"), "{later} s later: {s:?}");
            assert!(s.contains_key("eleven.html"), "{later} s later: {s:?}");
            assert!(
                !s.contains_key("nine.html"),
                "nine readers are fewer than ten"
            );
        }
    }
}

//! robots.rdf in parts: an index naming each part with its version (`wc:part`). A site read
//! for the first time (or again from scratch) has every part asked for and its listing taken
//! whole once the last one answered; a site read again has only the parts whose version moved
//! asked for, each taken as it comes. The versions held are this owner's; a part is asked
//! for only on the site's own origin, and one that names parts of its own is refused.

use crate::ids::HostId;
use std::collections::{BTreeMap, HashMap};
use url::Url;
use webcoop_protocol::robots_rdf::{RdfLimits, RobotsRdf};

/// What a part's answer completes.
#[derive(Debug)]
pub(super) enum Arrived {
    /// More parts of the whole listing are awaited.
    Wait,
    /// The whole listing, from the index and every part that could be read: how many could
    /// not, and whether it is the site's first reading.
    Whole(Box<RobotsRdf>, usize, bool),
    /// One part of a listing read again.
    Part(Box<RobotsRdf>),
    /// Nothing asked for this part (or it named parts of its own): ignored.
    Unasked,
}

/// A whole listing being gathered.
#[derive(Debug)]
struct Assembly {
    index: RobotsRdf,
    /// Parts not answered yet, with the version the index gave them.
    waiting: HashMap<String, String>,
    parts: Vec<RobotsRdf>,
    failed: usize,
    first: bool,
}

/// The parts of every site's listing: versions held and reads under way.
#[derive(Debug, Default)]
pub(super) struct ListingParts {
    held: HashMap<HostId, HashMap<String, String>>,
    assembling: HashMap<HostId, Assembly>,
    updating: HashMap<HostId, HashMap<String, String>>,
}

impl ListingParts {
    /// The parts of `index` (of the site at `origin`) to ask for: every one when `whole` is
    /// given (saying whether it is the site's first reading), else those whose version moved
    /// since they were read. Parts on another origin are left out and returned apart.
    pub(super) fn plan(
        &mut self,
        host: HostId,
        origin: &str,
        index: RobotsRdf,
        whole: Option<bool>,
    ) -> (Vec<Url>, Vec<Url>) {
        let (own, foreign): (Vec<_>, Vec<_>) = index
            .channel
            .parts
            .iter()
            .partition(|p| crate::analyze::url_norm::origin_key(&p.url) == origin);
        let foreign: Vec<Url> = foreign.into_iter().map(|p| p.url.clone()).collect();
        let named: HashMap<String, String> = own
            .iter()
            .map(|p| (p.url.to_string(), p.version.clone()))
            .collect();
        let held = self.held.entry(host).or_default();
        held.retain(|url, _| named.contains_key(url));
        let asked: HashMap<String, String> = if whole.is_some() {
            named
        } else {
            named
                .into_iter()
                .filter(|(url, version)| held.get(url) != Some(version))
                .collect()
        };
        let urls = asked
            .keys()
            .filter_map(|u| Url::parse(u).ok())
            .collect::<Vec<_>>();
        if let Some(first) = whole {
            self.updating.remove(&host);
            self.assembling.insert(
                host,
                Assembly {
                    index,
                    waiting: asked,
                    parts: Vec::new(),
                    failed: 0,
                    first,
                },
            );
        } else {
            self.updating.entry(host).or_default().extend(asked);
        }
        (urls, foreign)
    }

    /// The versions of `host`'s parts held by an earlier run (as [`ListingParts::held`] gave
    /// them).
    pub(super) fn restore(&mut self, host: HostId, versions: &BTreeMap<String, String>) {
        let held = self.held.entry(host).or_default();
        held.extend(versions.iter().map(|(u, v)| (u.clone(), v.clone())));
    }

    /// The versions of `host`'s parts held now, to be saved.
    pub(super) fn held(&self, host: HostId) -> BTreeMap<String, String> {
        self.held
            .get(&host)
            .map(|h| h.iter().map(|(u, v)| (u.clone(), v.clone())).collect())
            .unwrap_or_default()
    }

    /// Whether a whole listing of `host` is being gathered, and whether it is the first.
    pub(super) fn assembling(&self, host: HostId) -> Option<bool> {
        self.assembling.get(&host).map(|a| a.first)
    }

    /// The whole listing of `host` when no part is awaited (an index naming none of its own
    /// origin's).
    pub(super) fn complete(&mut self, host: HostId) -> Option<(RobotsRdf, bool)> {
        if self.assembling.get(&host)?.waiting.is_empty() {
            let a = self.assembling.remove(&host)?;
            return Some((a.index, a.first));
        }
        None
    }

    /// The part at `url` of `host`'s listing answered with `doc` (`None`: it failed or could
    /// not be read).
    pub(super) fn arrived(&mut self, host: HostId, url: &Url, doc: Option<RobotsRdf>) -> Arrived {
        let key = url.to_string();
        // A part naming parts of its own is not read (an index is one level deep).
        let doc = doc.filter(|d| d.channel.parts.is_empty());
        if let Some(a) = self.assembling.get_mut(&host)
            && let Some(version) = a.waiting.remove(&key)
        {
            match doc {
                Some(d) => {
                    self.held.entry(host).or_default().insert(key, version);
                    a.parts.push(d);
                }
                None => a.failed += 1,
            }
            if !a.waiting.is_empty() {
                return Arrived::Wait;
            }
            let Some(a) = self.assembling.remove(&host) else {
                return Arrived::Wait;
            };
            let max = RdfLimits::default().max_items;
            let (failed, first) = (a.failed, a.first);
            return match a.index.assemble(a.parts, max) {
                Ok(whole) => Arrived::Whole(Box::new(whole), failed, first),
                Err(e) => {
                    tracing::warn!("{url}: the listing's parts do not make one: {e}");
                    self.held.remove(&host);
                    Arrived::Unasked
                }
            };
        }
        let Some(version) = self.updating.get_mut(&host).and_then(|u| u.remove(&key)) else {
            return Arrived::Unasked;
        };
        match doc {
            Some(d) => {
                self.held.entry(host).or_default().insert(key, version);
                Arrived::Part(Box::new(d))
            }
            None => Arrived::Unasked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use webcoop_protocol::robots_rdf::{Channel, ListingPart, RdfItem};

    fn channel(about: &str, parts: Vec<ListingPart>) -> Channel {
        Channel {
            seq: Some(3),
            parts,
            ..Channel::new(
                Url::parse(about).unwrap(),
                Url::parse("https://e.org/").unwrap(),
            )
        }
    }

    fn index(versions: &[(&str, &str)]) -> RobotsRdf {
        let parts = versions
            .iter()
            .map(|(url, v)| ListingPart {
                url: Url::parse(url).unwrap(),
                date: Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
                version: v.to_string(),
                items: 1,
            })
            .collect();
        RobotsRdf {
            channel: channel("https://e.org/robots.rdf", parts),
            items: Vec::new(),
        }
    }

    fn part(url: &str, page: &str) -> RobotsRdf {
        RobotsRdf {
            channel: channel(url, Vec::new()),
            items: vec![RdfItem {
                url: Url::parse(page).unwrap(),
                title: String::new(),
                modified: Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
                size: None,
                content_type: None,
                etag: None,
                delta: None,
                extensions: Default::default(),
            }],
        }
    }

    const A: &str = "https://e.org/robots-a.rdf";
    const B: &str = "https://e.org/robots-b.rdf";
    const ORIGIN: &str = "https://e.org";

    fn sorted(mut urls: Vec<Url>) -> Vec<String> {
        urls.sort();
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn a_first_reading_waits_for_every_part_and_a_later_one_asks_for_what_moved() {
        let mut p = ListingParts::default();
        let h = HostId(1);
        let (asked, foreign) = p.plan(h, ORIGIN, index(&[(A, "1"), (B, "1")]), Some(true));
        assert_eq!(sorted(asked), [A, B]);
        assert!(foreign.is_empty());
        let a = Url::parse(A).unwrap();
        let b = Url::parse(B).unwrap();
        assert!(matches!(
            p.arrived(h, &a, Some(part(A, "https://e.org/1"))),
            Arrived::Wait
        ));
        let Arrived::Whole(whole, 0, true) = p.arrived(h, &b, Some(part(B, "https://e.org/2")))
        else {
            panic!("whole")
        };
        assert_eq!(whole.items.len(), 2);
        assert_eq!(whole.channel.seq, Some(3), "the index's channel");
        assert!(whole.channel.parts.is_empty());

        // Read again: only B moved.
        let (asked, _) = p.plan(h, ORIGIN, index(&[(A, "1"), (B, "2")]), None);
        assert_eq!(sorted(asked), [B]);
        assert!(matches!(
            p.arrived(h, &b, Some(part(B, "https://e.org/2"))),
            Arrived::Part(_)
        ));
        let (asked, _) = p.plan(h, ORIGIN, index(&[(A, "1"), (B, "2")]), None);
        assert!(asked.is_empty(), "nothing moved");
        // A part nobody asked for is not taken.
        assert!(matches!(
            p.arrived(h, &a, Some(part(A, "https://e.org/1"))),
            Arrived::Unasked
        ));
    }

    #[test]
    fn versions_saved_by_one_run_spare_the_next_a_whole_reading() {
        let mut p = ListingParts::default();
        let h = HostId(1);
        p.plan(h, ORIGIN, index(&[(A, "1"), (B, "1")]), Some(true));
        let a = Url::parse(A).unwrap();
        let b = Url::parse(B).unwrap();
        p.arrived(h, &a, Some(part(A, "https://e.org/1")));
        p.arrived(h, &b, Some(part(B, "https://e.org/2")));
        let saved = p.held(h);
        assert_eq!(saved.len(), 2);
        let mut next = ListingParts::default();
        next.restore(h, &saved);
        let (asked, _) = next.plan(h, ORIGIN, index(&[(A, "1"), (B, "2")]), None);
        assert_eq!(sorted(asked), [B], "only the part that moved");
        // The twin: without the saved versions every part is read.
        let (asked, _) =
            ListingParts::default().plan(h, ORIGIN, index(&[(A, "1"), (B, "2")]), None);
        assert_eq!(sorted(asked), [A, B]);
    }

    #[test]
    fn hostile_parts_are_left_out_or_refused() {
        let mut p = ListingParts::default();
        let h = HostId(1);
        let other = "https://attacker.example/robots-x.rdf";
        let (asked, foreign) = p.plan(h, ORIGIN, index(&[(A, "1"), (other, "1")]), Some(true));
        assert_eq!(sorted(asked), [A]);
        assert_eq!(sorted(foreign), [other]);
        // A part that names parts of its own counts as failed.
        let nested = index(&[(B, "1")]);
        let a = Url::parse(A).unwrap();
        let Arrived::Whole(whole, 1, true) = p.arrived(h, &a, Some(nested)) else {
            panic!("whole with one failure")
        };
        assert!(whole.items.is_empty());
        // It was not held: asked for again next time.
        let (asked, _) = p.plan(h, ORIGIN, index(&[(A, "1")]), None);
        assert_eq!(sorted(asked), [A]);
        // A failed part of a reading again leaves its version unheld.
        assert!(matches!(p.arrived(h, &a, None), Arrived::Unasked));
        let (asked, _) = p.plan(h, ORIGIN, index(&[(A, "1")]), None);
        assert_eq!(sorted(asked), [A]);
    }
}

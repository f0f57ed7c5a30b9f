//! The site's resources cut into parts for the documents too large for one file (robots.rdf,
//! the sitemaps, the ResourceSync resource list): ranges of path order that begin at anchor
//! paths, those whose hash is a multiple of the target size. Where the cuts fall depends on the
//! paths alone, so a new file changes its own part and no other (at worst it is an anchor and
//! splits one part in two), a restart cuts the site where the last run did, and the parts of
//! an unchanged site are never written again. A part grown past the cap (paths that happen to
//! hash to no anchor) is cut at its middle.

use crate::inventory::Inventory;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

/// One part of the site: the range from its first path to the next part's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartInfo {
    /// A name for its files, from its first path (0 for the part that starts the site).
    pub(crate) id: u64,
    /// Resources in it.
    pub(crate) count: usize,
    /// The publication stamp at which its content last changed.
    pub(crate) changed: u64,
}

/// The parts of the site and the changes not yet taken into them.
#[derive(Debug)]
pub(crate) struct Parting {
    target: u64,
    cap: usize,
    /// First path of each part (`""` for the first).
    parts: BTreeMap<Box<str>, PartInfo>,
    /// Paths changed since the last sync, and whether each was in the inventory then.
    dirty: BTreeMap<Box<str>, bool>,
    stamp: u64,
    built: bool,
}

fn hash(path: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(path.as_bytes())
}

impl Parting {
    /// Parts of about `target` resources, none over `cap`.
    pub(crate) fn new(target: usize, cap: usize) -> Parting {
        Parting {
            target: target.max(1) as u64,
            cap: cap.max(2),
            parts: BTreeMap::new(),
            dirty: BTreeMap::new(),
            stamp: 0,
            built: false,
        }
    }

    fn is_anchor(&self, path: &str) -> bool {
        !path.is_empty() && hash(path).is_multiple_of(self.target)
    }

    fn id_of(path: &str) -> u64 {
        if path.is_empty() { 0 } else { hash(path) | 1 }
    }

    /// Notes that `path` changed; `existed_before` says whether it was in the inventory at the
    /// last sync. Only the first note of a path between syncs counts.
    pub(crate) fn note(&mut self, path: &str, existed_before: bool) {
        if self.built {
            self.dirty.entry(path.into()).or_insert(existed_before);
        }
    }

    /// Forgets the parts: the next sync cuts the whole inventory again.
    pub(crate) fn reset(&mut self) {
        self.built = false;
        self.parts.clear();
        self.dirty.clear();
    }

    /// Brings the parts up to date with `inventory`: work proportional to the parts the notes
    /// touched, or to the whole site the first time.
    pub(crate) fn sync(&mut self, inventory: &Inventory) {
        self.stamp += 1;
        if !self.built {
            self.build(inventory);
            return;
        }
        let dirty = std::mem::take(&mut self.dirty);
        for (path, existed) in dirty {
            let now = inventory.get(&path).is_some();
            let key = self.key_of(&path);
            if let Some(p) = self.parts.get_mut(&*key) {
                p.changed = self.stamp;
                match (existed, now) {
                    (false, true) => p.count += 1,
                    (true, false) => p.count = p.count.saturating_sub(1),
                    _ => {}
                }
            }
            if now && !existed && self.is_anchor(&path) && *key != *path {
                self.split_at(inventory, &key, &path);
            } else if existed && !now && *key == *path && !path.is_empty() {
                self.merge_into_previous(&key);
            }
            let key = self.key_of(&path);
            if self.parts.get(&*key).is_some_and(|p| p.count > self.cap) {
                self.cut_in_half(inventory, &key);
            }
        }
    }

    fn build(&mut self, inventory: &Inventory) {
        self.parts.clear();
        self.dirty.clear();
        let mut chunk: Vec<&str> = Vec::new();
        for (path, _) in inventory.iter() {
            if !chunk.is_empty() && self.is_anchor(path) {
                self.insert_halved(&chunk);
                chunk.clear();
            }
            chunk.push(path);
        }
        if chunk.is_empty() {
            self.insert("".into(), 0);
        } else {
            self.insert_halved(&chunk);
        }
        // The first part starts the site, whatever its first path.
        if let Some((_, mut info)) = self.parts.pop_first() {
            info.id = Self::id_of("");
            self.parts.insert("".into(), info);
        }
        self.built = true;
    }

    /// One chunk between anchors as parts: halved at its middle while over the cap, as a part
    /// that grows past it is.
    fn insert_halved(&mut self, chunk: &[&str]) {
        if chunk.len() > self.cap {
            let middle = chunk.len() / 2;
            self.insert_halved(&chunk[..middle]);
            self.insert_halved(&chunk[middle..]);
        } else if let Some(first) = chunk.first() {
            self.insert((*first).into(), chunk.len());
        }
    }

    fn insert(&mut self, key: Box<str>, count: usize) {
        let info = PartInfo {
            id: Self::id_of(&key),
            count,
            changed: self.stamp,
        };
        self.parts.insert(key, info);
    }

    /// The first path of the part `path` falls in.
    fn key_of(&self, path: &str) -> Box<str> {
        self.parts
            .range::<str, _>((Bound::Unbounded, Bound::Included(path)))
            .next_back()
            .map_or_else(|| "".into(), |(k, _)| k.clone())
    }

    fn id_taken(&self, id: u64) -> bool {
        self.parts.values().any(|p| p.id == id)
    }

    /// Starts a new part at `at`, inside the part beginning at `key`.
    fn split_at(&mut self, inventory: &Inventory, key: &str, at: &str) {
        if self.parts.contains_key(at) || self.id_taken(Self::id_of(at)) {
            return;
        }
        let end = self.end_of(at);
        let moved = inventory.count_range(at, end.as_deref());
        if let Some(p) = self.parts.get_mut(key) {
            p.count = p.count.saturating_sub(moved);
            p.changed = self.stamp;
        }
        self.insert(at.into(), moved);
    }

    /// The first path of the part after the one holding `path`.
    fn end_of(&self, path: &str) -> Option<Box<str>> {
        self.parts
            .range::<str, _>((Bound::Excluded(path), Bound::Unbounded))
            .next()
            .map(|(k, _)| k.clone())
    }

    fn merge_into_previous(&mut self, key: &str) {
        let Some(gone) = self.parts.remove(key) else {
            return;
        };
        let previous = self.key_of(key);
        if let Some(p) = self.parts.get_mut(&*previous) {
            p.count += gone.count;
            p.changed = self.stamp;
        }
    }

    fn cut_in_half(&mut self, inventory: &Inventory, key: &str) {
        let Some(count) = self.parts.get(key).map(|p| p.count) else {
            return;
        };
        let end = self.end_of(key);
        let middle = inventory
            .paths_from(key, end.as_deref())
            .nth(count / 2)
            .map(Box::<str>::from);
        if let Some(middle) = middle {
            self.split_at(inventory, key, &middle);
        }
    }

    /// The parts in path order: each one's first path, the next one's (none for the last), and
    /// what is known of it.
    pub(crate) fn parts(&self) -> impl Iterator<Item = (&str, Option<&str>, PartInfo)> {
        let next = self.parts.keys().skip(1).map(|k| Some(k.as_ref()));
        self.parts
            .iter()
            .zip(next.chain(std::iter::once(None)))
            .map(|((k, info), end)| (k.as_ref(), end, *info))
    }

    /// The stamp of the last sync: a part whose `changed` is newer than what was rendered
    /// at some stamp has changed since.
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// How many parts there are.
    pub(crate) fn len(&self) -> usize {
        self.parts.len()
    }

    /// The ids of the parts, for telling which files are no longer named.
    pub(crate) fn ids(&self) -> BTreeSet<u64> {
        self.parts.values().map(|p| p.id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::FileEntry;
    use chrono::DateTime;
    use webcoop_protocol::validator::Sha256Digest;

    fn entry() -> FileEntry {
        FileEntry {
            size: 1,
            mtime_ns: 0,
            ctime_ns: 0,
            sha256: Sha256Digest::of(b""),
            fast: 0,
            modified: DateTime::UNIX_EPOCH,
            seen: false,
        }
    }

    fn site(n: usize) -> Inventory {
        Inventory::from_entries(
            (0..n)
                .map(|i| (format!("d{}/p{i}.html", i % 37).into(), entry()))
                .collect(),
        )
    }

    /// The parts as (first path, count), checked against the inventory.
    fn shape(p: &Parting, inv: &Inventory) -> Vec<(String, usize)> {
        let shape: Vec<(String, usize)> = p
            .parts()
            .map(|(k, _, i)| (k.to_string(), i.count))
            .collect();
        for (k, end, info) in p.parts() {
            assert_eq!(
                inv.count_range(k, end),
                info.count,
                "count of part at {k:?}"
            );
        }
        assert_eq!(shape.iter().map(|s| s.1).sum::<usize>(), inv.len());
        shape
    }

    #[test]
    fn the_cut_depends_on_the_paths_alone() {
        let inv = site(20_000);
        let mut a = Parting::new(200, 1600);
        a.sync(&inv);
        assert!(
            (60..=140).contains(&a.len()),
            "about 100 parts: {}",
            a.len()
        );
        assert!(a.parts().all(|(_, _, i)| i.count <= 1600));
        let mut b = Parting::new(200, 1600);
        b.sync(&inv);
        assert_eq!(
            shape(&a, &inv),
            shape(&b, &inv),
            "a restart cuts where the last run did"
        );
    }

    #[test]
    fn an_edit_touches_its_own_part_and_an_incremental_cut_matches_a_fresh_one() {
        let mut inv = site(5_000);
        let mut p = Parting::new(100, 800);
        p.sync(&inv);
        let mut rng = 11u64;
        let mut next = move || {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            rng >> 33
        };
        for round in 0..300 {
            let mut touched = 0;
            for _ in 0..(1 + next() % 4) {
                let path = format!("d{}/p{}.html", next() % 40, next() % 7_000);
                let existed = inv.get(&path).is_some();
                p.note(&path, existed);
                if existed && next() % 2 == 0 {
                    inv.remove(&path);
                } else {
                    inv.insert(&path, entry());
                }
                touched += 1;
            }
            let before = p.stamp;
            p.sync(&inv);
            let changed = p.parts().filter(|(_, _, i)| i.changed > before).count();
            assert!(
                changed <= 2 * touched,
                "round {round}: {changed} parts changed for {touched} paths"
            );
            let fresh = {
                let mut f = Parting::new(100, 800);
                f.sync(&inv);
                shape(&f, &inv)
            };
            let ours = shape(&p, &inv);
            // Halved parts aside (where the incremental cut may differ), the same cut.
            if ours.iter().all(|(_, c)| *c < 400) && fresh.iter().all(|(_, c)| *c < 400) {
                assert_eq!(ours, fresh, "round {round}");
            }
        }
    }

    #[test]
    fn a_part_past_the_cap_is_halved_and_an_anchor_gone_merges_two_parts() {
        let mut inv = Inventory::default();
        // No path hashes to an anchor at this target: every cut comes from the cap.
        let mut p = Parting::new(u64::MAX as usize, 10);
        p.sync(&inv);
        for i in 0..50 {
            let path = format!("p{i:03}");
            p.note(&path, false);
            inv.insert(&path, entry());
            p.sync(&inv);
            assert!(p.parts().all(|(_, _, info)| info.count <= 10), "after {i}");
            shape(&p, &inv);
        }
        let mut q = Parting::new(7, 100);
        let mut inv = site(2_000);
        q.sync(&inv);
        let (anchor, _, _) = q.parts().nth(3).unwrap();
        let anchor = anchor.to_string();
        let parts = q.len();
        q.note(&anchor, true);
        inv.remove(&anchor);
        q.sync(&inv);
        assert_eq!(q.len(), parts - 1);
        shape(&q, &inv);
    }
}

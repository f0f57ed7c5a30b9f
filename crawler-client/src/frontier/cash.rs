//! OPIC cash of every URL the crawl knows, kept in memory as the paper prescribes (history goes
//! to disk with the page). The map is also the crawl's seen-set.
//!
//! Each URL holds a key; its cash is `key + u`, where `u` is the credit every page has received
//! from the virtual page so far. Crediting all pages is then O(1), and the order of URLs by cash
//! is the order of their keys, which is what the queue stores as priority.

use crate::ids::Fp;
use std::collections::HashMap;

/// The cash book.
#[derive(Debug, Clone)]
pub(crate) struct CashBook {
    keys: HashMap<Fp, f64>,
    u: f64,
    virtual_cash: f64,
    clock: f64,
    eps: f64,
}

/// The scalar part of the book, saved with each batch.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct CashTotals {
    /// Credit per page from the virtual page.
    pub(crate) u: f64,
    /// The virtual page's cash.
    pub(crate) virtual_cash: f64,
    /// The clock G: the cash of all reads so far.
    pub(crate) clock: f64,
}

impl CashBook {
    /// A book over `keys` (from the store) with its saved totals; `eps` of a page's cash goes to
    /// the virtual page.
    pub(crate) fn new(keys: HashMap<Fp, f64>, totals: CashTotals, eps: f64) -> Self {
        CashBook {
            keys,
            u: totals.u,
            virtual_cash: totals.virtual_cash,
            clock: totals.clock,
            eps: eps.clamp(0.0, 1.0),
        }
    }

    /// The totals to save.
    pub(crate) fn totals(&self) -> CashTotals {
        CashTotals {
            u: self.u,
            virtual_cash: self.virtual_cash,
            clock: self.clock,
        }
    }

    /// The key a URL would get if discovered now (no cash).
    pub(crate) fn zero_key(&self) -> f64 {
        -self.u
    }

    /// Whether a URL is known.
    pub(crate) fn contains(&self, fp: Fp) -> bool {
        self.keys.contains_key(&fp)
    }

    /// URLs known.
    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Adds a URL with no cash; returns its key, or None if it was known.
    pub(crate) fn discover(&mut self, fp: Fp) -> Option<f64> {
        let key = self.zero_key();
        match self.keys.entry(fp) {
            std::collections::hash_map::Entry::Occupied(_) => None,
            std::collections::hash_map::Entry::Vacant(v) => Some(*v.insert(key)),
        }
    }

    /// The key of a known URL.
    pub(crate) fn key(&self, fp: Fp) -> Option<f64> {
        self.keys.get(&fp).copied()
    }

    /// The cash of a URL (0 if unknown).
    pub(crate) fn cash(&self, fp: Fp) -> f64 {
        self.keys.get(&fp).map_or(0.0, |k| k + self.u)
    }

    /// The clock G.
    pub(crate) fn clock(&self) -> f64 {
        self.clock
    }

    /// Gives each of these known URLs an equal share of `total` cash (the seeds of a new crawl;
    /// the total cash of the system is 1).
    pub(crate) fn endow(&mut self, fps: &[Fp], total: f64) {
        let known: Vec<Fp> = fps.iter().copied().filter(|f| self.contains(*f)).collect();
        if known.is_empty() {
            return;
        }
        let each = total / known.len() as f64;
        for fp in known {
            if let Some(k) = self.keys.get_mut(&fp) {
                *k += each;
            }
        }
    }

    /// A page was read: its cash goes to the clock and is shared among its known children
    /// (`1 - eps` of it) and the virtual page (the rest, or all of it without children).
    /// Returns the cash the page had.
    pub(crate) fn read(&mut self, fp: Fp, children: &[Fp]) -> f64 {
        let cash = self.cash(fp);
        if let Some(k) = self.keys.get_mut(&fp) {
            *k = -self.u;
        }
        self.clock += cash;
        let known = children
            .iter()
            .filter(|c| self.keys.contains_key(c))
            .count();
        if known == 0 {
            self.virtual_cash += cash;
            return cash;
        }
        let each = cash * (1.0 - self.eps) / known as f64;
        self.virtual_cash += cash * self.eps;
        for c in children {
            if let Some(k) = self.keys.get_mut(c) {
                *k += each;
            }
        }
        cash
    }

    /// Takes all the cash of a known URL (it leaves this book: another shard owns the URL).
    pub(crate) fn take(&mut self, fp: Fp) -> f64 {
        let u = self.u;
        match self.keys.get_mut(&fp) {
            Some(k) => std::mem::replace(k, -u) + u,
            None => 0.0,
        }
    }

    /// Adds `cash` to a known URL (paid by a page another shard read); unknown URLs are left.
    pub(crate) fn give(&mut self, fp: Fp, cash: f64) -> bool {
        match self.keys.get_mut(&fp) {
            Some(k) if cash.is_finite() && cash > 0.0 => {
                *k += cash;
                true
            }
            _ => false,
        }
    }

    /// The virtual page is read: its cash goes to every known URL equally.
    pub(crate) fn spread_virtual(&mut self) {
        if self.keys.is_empty() || self.virtual_cash <= 0.0 {
            return;
        }
        self.clock += self.virtual_cash;
        self.u += self.virtual_cash / self.keys.len() as f64;
        self.virtual_cash = 0.0;
    }

    /// The sum of all cash, URLs and virtual page (1 in a crawl that started with this code,
    /// up to rounding; less after a crash lost unsaved cash).
    pub(crate) fn total(&self) -> f64 {
        self.keys.values().map(|k| k + self.u).sum::<f64>() + self.virtual_cash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cash_is_conserved_and_order_follows_keys() {
        let mut b = CashBook::new(HashMap::new(), CashTotals::default(), 0.15);
        for fp in 1..=4 {
            assert!(b.discover(Fp(fp)).is_some());
        }
        assert!(b.discover(Fp(1)).is_none(), "seen");
        b.endow(&[Fp(1)], 1.0);
        assert!((b.total() - 1.0).abs() < 1e-12);
        // 1 -> 2, 3; 2 -> 3; 3 -> nothing known (all to the virtual page).
        assert!((b.read(Fp(1), &[Fp(2), Fp(3), Fp(99)]) - 1.0).abs() < 1e-12);
        assert!((b.cash(Fp(2)) - 0.425).abs() < 1e-12 && (b.cash(Fp(3)) - 0.425).abs() < 1e-12);
        b.read(Fp(2), &[Fp(3)]);
        b.read(Fp(3), &[]);
        assert!((b.total() - 1.0).abs() < 1e-12);
        b.spread_virtual();
        assert!((b.total() - 1.0).abs() < 1e-12);
        assert!((b.cash(Fp(4)) - 0.25).abs() < 1e-12, "{}", b.cash(Fp(4)));
        // Keys order URLs as cash does.
        b.read(Fp(4), &[Fp(1)]);
        assert!(b.key(Fp(1)).unwrap() > b.key(Fp(2)).unwrap());
        assert!(b.cash(Fp(1)) > b.cash(Fp(2)));
        // The clock is the cash of every read, the virtual page's included.
        assert!((b.clock() - (1.0 + 0.425 + 0.425 + 0.36125 + 1.0 + 0.25)).abs() < 1e-9);
    }

    #[test]
    fn cash_taken_for_another_shard_leaves_the_book_and_only_known_urls_are_given_cash() {
        let mut b = CashBook::new(HashMap::new(), CashTotals::default(), 0.15);
        b.discover(Fp(1));
        b.discover(Fp(2));
        b.endow(&[Fp(1)], 1.0);
        b.read(Fp(1), &[Fp(2)]);
        let owed = b.take(Fp(2));
        assert!((owed - 0.85).abs() < 1e-12, "{owed}");
        assert_eq!(b.cash(Fp(2)), 0.0);
        assert!(
            (b.total() - 0.15).abs() < 1e-12,
            "what left is the virtual page's"
        );
        assert_eq!(b.take(Fp(99)), 0.0);
        // The owner's book: cash given to a URL it knows, never to one it does not.
        assert!(b.give(Fp(2), owed));
        assert!((b.cash(Fp(2)) - 0.85).abs() < 1e-12);
        assert!(!b.give(Fp(99), 1.0) && !b.contains(Fp(99)));
        assert!(!b.give(Fp(2), f64::NAN) && !b.give(Fp(2), -1.0));
        assert!((b.total() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn totals_survive_a_reload() {
        let mut b = CashBook::new(HashMap::new(), CashTotals::default(), 0.15);
        b.discover(Fp(1));
        b.discover(Fp(2));
        b.endow(&[Fp(1), Fp(2)], 1.0);
        b.read(Fp(1), &[Fp(2)]);
        b.spread_virtual();
        let keys: HashMap<Fp, f64> = [Fp(1), Fp(2)]
            .iter()
            .map(|f| (*f, b.key(*f).unwrap()))
            .collect();
        let c = CashBook::new(keys, b.totals(), 0.15);
        assert_eq!(c.cash(Fp(2)), b.cash(Fp(2)));
        assert!((c.total() - 1.0).abs() < 1e-12);
    }
}

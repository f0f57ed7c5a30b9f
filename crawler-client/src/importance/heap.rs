//! A binary max-heap over items `0..n` that keeps each item's position, so an item's key can
//! change in place (OPIC's cash, a site's backlog).

/// The heap.
pub(crate) struct MaxHeap {
    items: Vec<u32>,
    keys: Vec<f64>,
    pos: Vec<u32>,
}

const ABSENT: u32 = u32::MAX;

impl MaxHeap {
    /// An empty heap over items `0..n`.
    pub(crate) fn new(n: usize) -> Self {
        MaxHeap {
            items: Vec::new(),
            keys: vec![0.0; n],
            pos: vec![ABSENT; n],
        }
    }

    /// The item with the largest key.
    pub(crate) fn top(&self) -> Option<usize> {
        self.items.first().map(|i| *i as usize)
    }

    /// Adds an item (or changes its key if present).
    pub(crate) fn insert(&mut self, i: usize, key: f64) {
        if self.pos[i] != ABSENT {
            return self.update(i, key);
        }
        self.keys[i] = key;
        self.pos[i] = self.items.len() as u32;
        self.items.push(i as u32);
        self.up(self.items.len() - 1);
    }

    /// Changes the key of an item in the heap (nothing if absent).
    pub(crate) fn update(&mut self, i: usize, key: f64) {
        let p = self.pos[i];
        if p == ABSENT {
            return;
        }
        let old = self.keys[i];
        self.keys[i] = key;
        if key > old {
            self.up(p as usize);
        } else {
            self.down(p as usize);
        }
    }

    /// Takes an item out (nothing if absent).
    pub(crate) fn remove(&mut self, i: usize) {
        let p = self.pos[i];
        if p == ABSENT {
            return;
        }
        let p = p as usize;
        let last = self.items.len() - 1;
        self.swap(p, last);
        self.items.pop();
        self.pos[i] = ABSENT;
        if p < self.items.len() {
            self.up(p);
            self.down(p);
        }
    }

    fn key_at(&self, p: usize) -> f64 {
        self.keys[self.items[p] as usize]
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.items.swap(a, b);
        self.pos[self.items[a] as usize] = a as u32;
        self.pos[self.items[b] as usize] = b as u32;
    }

    fn up(&mut self, mut p: usize) {
        while p > 0 {
            let parent = (p - 1) / 2;
            if self.key_at(parent) >= self.key_at(p) {
                break;
            }
            self.swap(p, parent);
            p = parent;
        }
    }

    fn down(&mut self, mut p: usize) {
        loop {
            let (l, r) = (2 * p + 1, 2 * p + 2);
            let mut best = p;
            if l < self.items.len() && self.key_at(l) > self.key_at(best) {
                best = l;
            }
            if r < self.items.len() && self.key_at(r) > self.key_at(best) {
                best = r;
            }
            if best == p {
                break;
            }
            self.swap(p, best);
            p = best;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_follows_changing_keys() {
        let mut h = MaxHeap::new(10);
        for (i, k) in [3.0, 1.0, 4.0, 1.5, 9.0, 2.6].iter().enumerate() {
            h.insert(i, *k);
        }
        assert_eq!(h.top(), Some(4));
        h.update(4, 0.0);
        assert_eq!(h.top(), Some(2));
        h.update(1, 10.0);
        assert_eq!(h.top(), Some(1));
        h.remove(1);
        h.remove(2);
        let mut order = Vec::new();
        while let Some(t) = h.top() {
            order.push(t);
            h.remove(t);
        }
        assert_eq!(order, [0, 5, 3, 4]);
    }
}

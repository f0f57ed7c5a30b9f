//! OPIC, on-line page importance (Abiteboul, Preda, Cobena 2003), over a whole graph held in
//! memory: the model the crawler's cash book follows, and what the simulations replay.
//!
//! Choices the paper leaves open, decided here (see docs/IMPORTANCE.md for why):
//! - A virtual page V (index `n`) makes the graph strongly connected: every page links to it,
//!   it links to every page. With [`VirtualShare::Fixed`] `eps`, V takes `eps` of a page's
//!   cash and the children share the rest, so the fixpoint is PageRank with damping `1 - eps`;
//!   [`VirtualShare::Equal`] is the paper's literal rule (V is one more child). A page without
//!   out-links gives all its cash to V.
//! - V's cash, when V is read, goes to every page equally. It is credited lazily: a page's
//!   cash is `key + u`, where `u` is the credit per page so far, so crediting costs O(1) and
//!   the order of pages by cash is the order of their keys.
//! - A page's cash is reset before it is distributed, so a self-link keeps its share and the
//!   total cash stays exactly constant.
//! - Adaptive OPIC (interpolation window `T`, in units of the clock G) keeps one history per
//!   page; the history is updated with G as it was before the read.

use super::graph::Graph;
use super::heap::MaxHeap;

/// How much of a page's cash goes to the virtual page.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum VirtualShare {
    #[cfg(test)]
    /// V is one more child: `1/(d+1)` of the cash.
    Equal,
    /// V takes this fraction; the children share the rest.
    Fixed(f64),
}

/// OPIC state over a graph of `n` pages plus the virtual page.
pub(crate) struct Opic<'g> {
    g: &'g Graph,
    share: VirtualShare,
    key: Vec<f64>,
    u: f64,
    v_cash: f64,
    hist: Vec<f64>,
    last_g: Vec<f64>,
    clock: f64,
    window: Option<f64>,
    heap: Option<MaxHeap>,
}

impl<'g> Opic<'g> {
    /// Every page and V start with cash `1/(n+1)`, no history. With `window`, histories are
    /// interpolated over that many units of G (Adaptive OPIC).
    pub(crate) fn new(g: &'g Graph, share: VirtualShare, window: Option<f64>) -> Self {
        let n = g.len();
        let c0 = 1.0 / (n + 1) as f64;
        Opic {
            g,
            share,
            key: vec![c0; n],
            u: 0.0,
            v_cash: c0,
            hist: vec![0.0; n + 1],
            last_g: vec![0.0; n + 1],
            clock: 0.0,
            window,
            heap: None,
        }
    }

    /// Starts tracking the page with the most cash among `members` (for Greedy); pages join
    /// with [`Opic::track`] and leave when read with [`Opic::read_untrack`].
    pub(crate) fn with_greedy(mut self, members: impl IntoIterator<Item = usize>) -> Self {
        let mut heap = MaxHeap::new(self.g.len());
        for i in members {
            heap.insert(i, self.key[i]);
        }
        self.heap = Some(heap);
        self
    }

    /// Number of real pages (V is index `len()`).
    pub(crate) fn len(&self) -> usize {
        self.g.len()
    }

    /// The clock G: the sum of all histories (plain OPIC).
    pub(crate) fn clock(&self) -> f64 {
        self.clock
    }

    /// Cash of page `i` (V is `len()`).
    pub(crate) fn cash(&self, i: usize) -> f64 {
        if i == self.len() {
            self.v_cash
        } else {
            self.key[i] + self.u
        }
    }

    #[cfg(test)]
    /// History of page `i` (V is `len()`).
    pub(crate) fn history(&self, i: usize) -> f64 {
        self.hist[i]
    }

    #[cfg(test)]
    /// Total cash, pages and V (constant: 1 up to rounding).
    pub(crate) fn total_cash(&self) -> f64 {
        self.key.iter().map(|k| k + self.u).sum::<f64>() + self.v_cash
    }

    /// Adds a page to the Greedy candidates.
    pub(crate) fn track(&mut self, i: usize) {
        if let Some(h) = &mut self.heap {
            h.insert(i, self.key[i]);
        }
    }

    /// The page Greedy reads next: the candidate with most cash, or V (`len()`) if V has more
    /// (when `with_virtual`). None when there is no candidate.
    pub(crate) fn greedy(&self, with_virtual: bool) -> Option<usize> {
        let top = self.heap.as_ref()?.top();
        match top {
            Some(i) if !with_virtual || self.cash(i) >= self.v_cash => Some(i),
            _ if with_virtual => Some(self.len()),
            _ => None,
        }
    }

    /// Reads page `i` (V is `len()`): its cash goes to its history and to its children; returns
    /// the cash it had.
    pub(crate) fn read(&mut self, i: usize) -> f64 {
        let n = self.len();
        let c = self.cash(i);
        self.record(i, c);
        if i == n {
            self.v_cash = 0.0;
            if n > 0 {
                self.u += c / n as f64;
            }
            return c;
        }
        self.key[i] = -self.u;
        self.touch(i);
        let children = self.g.children(i);
        let d = children.len();
        let (to_v, each) = match (d, self.share) {
            (0, _) => (c, 0.0),
            #[cfg(test)]
            (d, VirtualShare::Equal) => (c / (d + 1) as f64, c / (d + 1) as f64),
            (d, VirtualShare::Fixed(eps)) => (c * eps, c * (1.0 - eps) / d as f64),
        };
        self.v_cash += to_v;
        for j in children {
            let j = *j as usize;
            self.key[j] += each;
            self.touch(j);
        }
        c
    }

    /// Reads page `i` and takes it out of the Greedy candidates.
    pub(crate) fn read_untrack(&mut self, i: usize) -> f64 {
        let c = self.read(i);
        if let Some(h) = &mut self.heap {
            h.remove(i);
        }
        c
    }

    fn touch(&mut self, i: usize) {
        if let Some(h) = &mut self.heap {
            h.update(i, self.key[i]);
        }
    }

    fn record(&mut self, i: usize, c: f64) {
        match self.window {
            None => self.hist[i] += c,
            Some(t) => self.hist[i] = interpolate(self.hist[i], c, self.clock - self.last_g[i], t),
        }
        self.last_g[i] = self.clock;
        self.clock += c;
    }

    /// Importance estimate of page `i`: `(H + C)/(G + 1)`, or with a window the history
    /// interpolated up to now over `T`.
    pub(crate) fn estimate(&self, i: usize) -> f64 {
        let c = self.cash(i);
        match self.window {
            None => (self.hist[i] + c) / (self.clock + 1.0),
            Some(t) => interpolate(self.hist[i], c, self.clock - self.last_g[i], t) / t,
        }
    }

    /// Estimates of the real pages, renormalised to sum to 1 (the form PageRank is in).
    pub(crate) fn estimates(&self) -> Vec<f64> {
        let mut x: Vec<f64> = (0..self.len()).map(|i| self.estimate(i)).collect();
        let total: f64 = x.iter().sum();
        if total > 0.0 {
            x.iter_mut().for_each(|v| *v /= total);
        }
        x
    }
}

/// Adaptive OPIC's interpolated history: the cash a page gathered over the last `t` units of
/// the clock, from its history `h`, the cash `c` gathered over the last `dg` units.
pub(crate) fn interpolate(h: f64, c: f64, dg: f64, t: f64) -> f64 {
    if dg < t {
        h * (t - dg) / t + c
    } else {
        c * t / dg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::importance::pagerank::pagerank;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// The digest's golden trace (opic.md 7.1.5): pages 0,1,2 with 0->1, 0->2, 1->2, 2->0,
    /// equal shares with V, cyclic order 0,1,2,V.
    #[test]
    fn golden_trace() {
        let g = Graph::numbered(3, vec![(0, 1), (0, 2), (1, 2), (2, 0)]);
        let mut o = Opic::new(&g, VirtualShare::Equal, None);
        let state = |o: &Opic| -> (Vec<f64>, Vec<f64>, f64) {
            (
                (0..4).map(|i| o.cash(i)).collect(),
                (0..4).map(|i| o.history(i)).collect(),
                o.clock(),
            )
        };
        let expect = |got: (Vec<f64>, Vec<f64>, f64), c: [f64; 4], h: [f64; 4], g: f64| {
            for i in 0..4 {
                assert!(close(got.0[i], c[i]), "cash {:?} != {c:?}", got.0);
                assert!(close(got.1[i], h[i]), "history {:?} != {h:?}", got.1);
            }
            assert!(close(got.2, g), "G {} != {g}", got.2);
        };
        let trace: [(usize, [f64; 4], [f64; 4], f64); 4] = [
            (0, [0., 1. / 3., 1. / 3., 1. / 3.], [0.25, 0., 0., 0.], 0.25),
            (1, [0., 0., 0.5, 0.5], [0.25, 1. / 3., 0., 0.], 7. / 12.),
            (2, [0.25, 0., 0., 0.75], [0.25, 1. / 3., 0.5, 0.], 13. / 12.),
            (
                3,
                [0.5, 0.25, 0.25, 0.],
                [0.25, 1. / 3., 0.5, 0.75],
                11. / 6.,
            ),
        ];
        for (page, c, h, g) in trace {
            o.read(page);
            expect(state(&o), c, h, g);
        }
        for i in 0..4 {
            o.read(i);
        }
        expect(
            state(&o),
            [13. / 24., 11. / 48., 11. / 48., 0.],
            [0.75, 0.75, 9. / 8., 23. / 16.],
            65. / 16.,
        );
        // Towards the fixpoint (21, 16, 24)/61 over the real pages, error about 0.1/G.
        for step in 0..4000 {
            o.read(step % 4);
        }
        let x = o.estimates();
        for (a, b) in x.iter().zip([21. / 61., 16. / 61., 24. / 61.]) {
            assert!((a - b).abs() < 1e-3, "{x:?}");
        }
    }

    /// A small graph with a dangling page and a self-link, for the invariants.
    fn sample() -> Graph {
        Graph::numbered(
            6,
            vec![
                (0, 1),
                (0, 2),
                (1, 2),
                (2, 0),
                (2, 3),
                (3, 3),
                (3, 4),
                (4, 0),
                (4, 1),
                (4, 2),
            ],
        )
    }

    #[test]
    fn cash_is_conserved_and_the_clock_is_the_sum_of_histories() {
        let g = sample();
        for share in [VirtualShare::Equal, VirtualShare::Fixed(0.15)] {
            let mut o = Opic::new(&g, share, None);
            for step in 0..500 {
                o.read((step * 7 + step / 3) % 7);
                assert!((o.total_cash() - 1.0).abs() < 1e-12);
                let h: f64 = (0..7).map(|i| o.history(i)).sum();
                assert!((h - o.clock()).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn fixed_share_converges_to_pagerank_with_damping_one_minus_eps() {
        let g = sample();
        let (pr, _) = pagerank(&g, 0.85, 1e-15, 10_000);
        let mut o = Opic::new(&g, VirtualShare::Fixed(0.15), None).with_greedy(0..6);
        for _ in 0..200_000 {
            let i = o.greedy(true).unwrap();
            o.read(i);
        }
        let x = o.estimates();
        for (a, b) in x.iter().zip(&pr) {
            assert!((a - b).abs() / b < 1e-3, "{x:?} vs {pr:?}");
        }
        // The per-coordinate bound of Theorem 2.1: |(P^T X) - X| <= 1/G with X = H/G over
        // pages and V (P includes V's edges).
        let n = 6;
        let gsum = o.clock();
        let xh: Vec<f64> = (0..=n).map(|i| o.history(i) / gsum).collect();
        let mut px = vec![0.0; n + 1];
        #[allow(clippy::needless_range_loop)]
        for i in 0..n {
            let d = g.out_degree(i);
            if d == 0 {
                px[n] += xh[i];
                continue;
            }
            px[n] += 0.15 * xh[i];
            for j in g.children(i) {
                px[*j as usize] += 0.85 * xh[i] / d as f64;
            }
        }
        for j in px.iter_mut().take(n) {
            *j += xh[n] / n as f64;
        }
        for j in 0..=n {
            assert!((px[j] - xh[j]).abs() <= 1.0 / gsum, "coordinate {j}");
        }
    }

    #[test]
    fn interpolation_cases() {
        assert!(close(interpolate(5.0, 3.0, 4.0, 10.0), 6.0));
        assert!(close(interpolate(123.0, 8.0, 20.0, 10.0), 4.0));
        assert!(close(interpolate(7.0, 3.0, 10.0, 10.0), 3.0));
        // Constant inflow r per unit of G, read every delta < T: H tends to r*T.
        let (r, t, delta) = (0.2, 10.0, 3.0);
        let mut h = 0.0;
        for _ in 0..200 {
            h = interpolate(h, r * delta, delta, t);
        }
        assert!((h - r * t).abs() < 1e-9, "{h}");
        assert!(close(interpolate(0.0, r * 15.0, 15.0, t), r * t));
    }
}

//! Castillo's crawl-order experiment (thesis ch. 4): crawl a known graph one page at a time
//! with a strategy that sees only what a crawler would have seen, and measure how much of the
//! final PageRank it has captured after each fraction of the pages.

use crate::importance::graph::Graph;
use crate::importance::heap::MaxHeap;
use crate::importance::opic::{Opic, VirtualShare};
use crate::importance::pagerank::pagerank;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use std::collections::VecDeque;

/// The order in which discovered pages are fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Strategy {
    /// First discovered, first fetched.
    Bfs,
    /// Most links from fetched pages first.
    Backlink,
    /// PageRank of the graph seen so far, recomputed every batch of pages.
    PagerankBatch,
    /// Most OPIC cash first.
    Opic,
    /// The site with the most pages waiting first; breadth-first within it.
    LargerSitesFirst,
    /// Uniformly at random among discovered pages.
    Random,
}

/// What a simulated crawl captured.
#[derive(Debug, Clone)]
pub(crate) struct OrderResult {
    /// Pages reachable from the seeds (all of them get fetched).
    pub(crate) fetched: usize,
    /// Cumulative PageRank (normalised to 1 over the fetched pages) after each tenth.
    pub(crate) deciles: [f64; 10],
    /// Mean of the normalised cumulative PageRank over the whole crawl (area under the curve;
    /// 0.5 for an order unrelated to PageRank).
    pub(crate) average: f64,
    /// Kendall's tau between fetch order and PageRank order, on a sample of pages.
    pub(crate) tau: f64,
}

/// Knobs of the simulation.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// PageRank damping.
    pub(crate) alpha: f64,
    /// Pages per batch for `pagerank-batch` (0: a 30th of the graph, as in the thesis).
    pub(crate) batch: usize,
    /// Pages sampled for Kendall's tau (the thesis: 5,000).
    pub(crate) tau_sample: usize,
    /// Random seed.
    pub(crate) seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.85,
            batch: 0,
            tau_sample: 5000,
            seed: 1,
        }
    }
}

/// Sites inferred from node order: in graphs numbered by sorted URL (as the LAW graphs are), a
/// site's pages are consecutive and most of its links stay inside it, so sites are taken as the
/// maximal runs of nodes held together by arcs spanning at most `span` nodes.
pub(crate) fn sites_by_order(g: &Graph, span: usize) -> Vec<u32> {
    let n = g.len();
    let mut delta = vec![0i64; n + 1];
    for u in 0..n {
        for v in g.children(u) {
            let (lo, hi) = (u.min(*v as usize), u.max(*v as usize));
            if hi > lo && hi - lo <= span {
                delta[lo + 1] += 1;
                delta[hi + 1] -= 1;
            }
        }
    }
    let mut site = vec![0u32; n];
    let (mut current, mut crossing) = (0u32, 0i64);
    for b in 1..n {
        crossing += delta[b];
        if crossing == 0 {
            current += 1;
        }
        site[b] = current;
    }
    site
}

/// The fetch order of a strategy.
pub(crate) fn crawl_order(
    g: &Graph,
    site: &[u32],
    seeds: &[usize],
    strategy: Strategy,
    opts: &Options,
) -> (Vec<usize>, u32) {
    let n = g.len();
    let mut known = vec![false; n];
    let mut order = Vec::new();
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let mut recomputations = 0;
    let mut frontier = Frontier::new(strategy, g, site);
    for s in seeds {
        if !known[*s] {
            known[*s] = true;
            frontier.discover(*s, site);
        }
    }
    let batch = if opts.batch == 0 {
        (n / 30).max(1)
    } else {
        opts.batch
    };
    let mut planned: Vec<usize> = Vec::new();
    loop {
        let next = if strategy == Strategy::PagerankBatch {
            if planned.is_empty() {
                planned = plan_batch(g, &known, &order, &frontier.pool, batch, opts.alpha);
                planned.reverse();
                recomputations += 1;
            }
            planned.pop().inspect(|p| frontier.take_from_pool(*p))
        } else {
            frontier.pick(&mut rng)
        };
        let Some(page) = next else {
            break;
        };
        order.push(page);
        frontier.fetched(page);
        for c in g.children(page) {
            let c = *c as usize;
            if !known[c] {
                known[c] = true;
                frontier.discover(c, site);
            }
            frontier.link_seen(c);
        }
    }
    (order, recomputations)
}

/// The pages waiting to be fetched, kept as each strategy needs them.
struct Frontier<'g> {
    strategy: Strategy,
    fifo: VecDeque<usize>,
    pool: Vec<usize>,
    pool_pos: Vec<u32>,
    heap: MaxHeap,
    backlinks: Vec<u32>,
    opic: Option<Opic<'g>>,
    site_queues: Vec<VecDeque<usize>>,
    sites: MaxHeap,
}

const NOT_IN_POOL: u32 = u32::MAX;

impl<'g> Frontier<'g> {
    fn new(strategy: Strategy, g: &'g Graph, site: &[u32]) -> Self {
        let n = g.len();
        let n_sites = site.iter().max().map_or(0, |m| *m as usize + 1);
        Frontier {
            strategy,
            fifo: VecDeque::new(),
            pool: Vec::new(),
            pool_pos: vec![NOT_IN_POOL; n],
            heap: MaxHeap::new(if strategy == Strategy::Backlink { n } else { 0 }),
            backlinks: vec![0; if strategy == Strategy::Backlink { n } else { 0 }],
            opic: (strategy == Strategy::Opic)
                .then(|| Opic::new(g, VirtualShare::Fixed(0.15), None).with_greedy([])),
            site_queues: vec![VecDeque::new(); n_sites],
            sites: MaxHeap::new(n_sites),
        }
    }

    fn discover(&mut self, p: usize, site: &[u32]) {
        match self.strategy {
            Strategy::Bfs => self.fifo.push_back(p),
            Strategy::Backlink => self.heap.insert(p, 0.0),
            Strategy::Opic => {
                if let Some(o) = &mut self.opic {
                    o.track(p);
                }
            }
            Strategy::LargerSitesFirst => {
                let s = site[p] as usize;
                self.site_queues[s].push_back(p);
                self.sites.insert(s, self.site_queues[s].len() as f64);
            }
            Strategy::PagerankBatch | Strategy::Random => {
                self.pool_pos[p] = self.pool.len() as u32;
                self.pool.push(p);
            }
        }
    }

    fn link_seen(&mut self, p: usize) {
        if self.strategy == Strategy::Backlink {
            self.backlinks[p] += 1;
            self.heap.update(p, self.backlinks[p] as f64);
        }
    }

    fn take_from_pool(&mut self, p: usize) {
        let at = self.pool_pos[p];
        if at == NOT_IN_POOL {
            return;
        }
        let last = *self.pool.last().unwrap_or(&p);
        self.pool.swap_remove(at as usize);
        if last != p {
            self.pool_pos[last] = at;
        }
        self.pool_pos[p] = NOT_IN_POOL;
    }

    fn pick(&mut self, rng: &mut StdRng) -> Option<usize> {
        match self.strategy {
            Strategy::Bfs => self.fifo.pop_front(),
            Strategy::Backlink => {
                let p = self.heap.top()?;
                self.heap.remove(p);
                Some(p)
            }
            Strategy::Opic => self.opic.as_ref()?.greedy(false),
            Strategy::LargerSitesFirst => {
                let s = self.sites.top()?;
                let p = self.site_queues[s].pop_front()?;
                let left = self.site_queues[s].len();
                if left == 0 {
                    self.sites.remove(s);
                } else {
                    self.sites.update(s, left as f64);
                }
                Some(p)
            }
            Strategy::Random => {
                if self.pool.is_empty() {
                    return None;
                }
                let p = self.pool[rng.random_range(0..self.pool.len())];
                self.take_from_pool(p);
                Some(p)
            }
            Strategy::PagerankBatch => None,
        }
    }

    fn fetched(&mut self, p: usize) {
        if let Some(o) = &mut self.opic {
            o.read_untrack(p);
        }
    }
}

/// The next batch: the waiting pages with the highest PageRank in the graph known so far
/// (fetched pages, their links, and the pages they point to).
fn plan_batch(
    g: &Graph,
    known: &[bool],
    fetched: &[usize],
    waiting: &[usize],
    batch: usize,
    alpha: f64,
) -> Vec<usize> {
    if waiting.is_empty() {
        return Vec::new();
    }
    let mut index = vec![u32::MAX; g.len()];
    let mut nodes = Vec::new();
    for (p, k) in known.iter().enumerate() {
        if *k {
            index[p] = nodes.len() as u32;
            nodes.push(p);
        }
    }
    let mut arcs = Vec::new();
    for p in fetched {
        for c in g.children(*p) {
            arcs.push((index[*p], index[*c as usize]));
        }
    }
    let sub = Graph::from_arcs(vec![String::new(); nodes.len()], arcs);
    let (x, _) = pagerank(&sub, alpha, 1e-6, 50);
    let mut best: Vec<usize> = waiting.to_vec();
    best.sort_by(|a, b| x[index[*b] as usize].total_cmp(&x[index[*a] as usize]));
    best.truncate(batch);
    best
}

/// Cumulative PageRank and Kendall's tau of a fetch order.
pub(crate) fn measure(order: &[usize], pr: &[f64], opts: &Options) -> OrderResult {
    let total: f64 = order.iter().map(|p| pr[*p]).sum();
    let n = order.len();
    let mut deciles = [0.0; 10];
    let mut cum = 0.0;
    let mut area = 0.0;
    for (k, p) in order.iter().enumerate() {
        cum += pr[*p] / total;
        area += cum;
        for (d, slot) in deciles.iter_mut().enumerate() {
            if k + 1 == ((d + 1) * n).div_ceil(10) {
                *slot = cum;
            }
        }
    }
    // Kendall's tau-a on a sample: position in the order against PageRank.
    let mut rng = StdRng::seed_from_u64(opts.seed ^ 0x5eed);
    let mut sample: Vec<usize> = (0..n).collect();
    if n > opts.tau_sample {
        for i in 0..opts.tau_sample {
            let j = rng.random_range(i..n);
            sample.swap(i, j);
        }
        sample.truncate(opts.tau_sample);
    }
    let (mut concordant, mut pairs) = (0i64, 0i64);
    for a in 0..sample.len() {
        for b in a + 1..sample.len() {
            let (i, j) = (sample[a], sample[b]);
            let by_order = i.cmp(&j);
            let by_rank = pr[order[j]].total_cmp(&pr[order[i]]);
            pairs += 1;
            if by_rank != std::cmp::Ordering::Equal {
                concordant += if by_order == by_rank { 1 } else { -1 };
            }
        }
    }
    OrderResult {
        fetched: n,
        deciles,
        average: if n == 0 { 0.0 } else { area / n as f64 },
        tau: if pairs == 0 {
            0.0
        } else {
            concordant as f64 / pairs as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::opic_sim::power_law_graph;

    #[test]
    fn every_strategy_fetches_each_reachable_page_once() {
        let g = power_law_graph(2000, 2.1, 9);
        let site: Vec<u32> = (0..2000).map(|i| i / 100).collect();
        let seeds: Vec<usize> = (0..20).map(|s| s * 100).collect();
        let opts = Options::default();
        let reference = crawl_order(&g, &site, &seeds, Strategy::Bfs, &opts).0;
        let mut expected = reference.clone();
        expected.sort_unstable();
        for s in [
            Strategy::Backlink,
            Strategy::PagerankBatch,
            Strategy::Opic,
            Strategy::LargerSitesFirst,
            Strategy::Random,
        ] {
            let (mut order, _) = crawl_order(&g, &site, &seeds, s, &opts);
            order.sort_unstable();
            assert_eq!(order, expected, "{s:?}");
        }
    }

    #[test]
    fn importance_orders_capture_pagerank_sooner_than_random() {
        let g = power_law_graph(3000, 2.1, 4);
        let site = sites_by_order(&g, 10);
        let seeds: Vec<usize> = (0..10).collect();
        let opts = Options::default();
        let (pr, _) = pagerank(&g, opts.alpha, 1e-12, 1000);
        let run = |s| crawl_order(&g, &site, &seeds, s, &opts);
        let avg = |s| measure(&run(s).0, &pr, &opts);
        let random = avg(Strategy::Random);
        let opic = avg(Strategy::Opic);
        let batch = avg(Strategy::PagerankBatch);
        let bfs = avg(Strategy::Bfs);
        assert!(opic.average > random.average + 0.02, "{opic:?} {random:?}");
        assert!(opic.average > bfs.average, "{opic:?} {bfs:?}");
        assert!(batch.average > random.average + 0.02, "{batch:?}");
        assert!(opic.tau > random.tau, "{opic:?} {random:?}");
        assert!((opic.deciles[9] - 1.0).abs() < 1e-9);
        assert!(run(Strategy::PagerankBatch).1 >= 10);
    }

    #[test]
    fn sites_are_runs_held_together_by_short_links() {
        // 0-1-2 linked, 3 alone, 4<->5; a long link 0->5 is ignored at span 2.
        let g = Graph::numbered(6, vec![(0, 1), (2, 1), (4, 5), (5, 4), (0, 5)]);
        assert_eq!(sites_by_order(&g, 2), [0, 0, 0, 1, 2, 2]);
        assert_eq!(sites_by_order(&g, 5), [0; 6]);
    }
}

//! The OPIC paper's experiment: replay OPIC on a graph with a page-selection policy and measure
//! its estimates against exact PageRank.

use crate::importance::graph::Graph;
use crate::importance::opic::{Opic, VirtualShare};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// Which page OPIC reads next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Policy {
    /// The page (or the virtual page) with the most cash.
    Greedy,
    /// Uniformly at random among the pages and the virtual page.
    Random,
    /// Every page in order, then the virtual page.
    Cycle,
}

/// The error of the estimates at one moment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Pages read so far.
    pub(crate) steps: u64,
    /// The clock G.
    pub(crate) clock: f64,
    /// Mean relative error over all pages, in percent (the paper's metric).
    pub(crate) err_all: f64,
    /// The same over the 10% of pages with the highest PageRank.
    pub(crate) err_top: f64,
}

/// Mean relative error (percent) of `x` against `reference`, over all pages and over the top
/// tenth by reference score.
pub(crate) fn errors(x: &[f64], reference: &[f64]) -> (f64, f64) {
    let rel: Vec<f64> = x
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b).abs() / b)
        .collect();
    let all = 100.0 * rel.iter().sum::<f64>() / rel.len().max(1) as f64;
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|a, b| reference[*b].total_cmp(&reference[*a]));
    let top = (x.len() / 10).max(1).min(x.len());
    let err_top = 100.0 * order[..top].iter().map(|i| rel[*i]).sum::<f64>() / top.max(1) as f64;
    (all, err_top)
}

/// Replays `steps` reads with `policy` and virtual-page share `eps`, sampling the error
/// against `reference` (PageRank with damping `1 - eps`) every `every` reads and at the end.
pub(crate) fn simulate(
    g: &Graph,
    reference: &[f64],
    policy: Policy,
    eps: f64,
    steps: u64,
    every: u64,
    seed: u64,
) -> Vec<Sample> {
    let n = g.len();
    let mut o = Opic::new(g, VirtualShare::Fixed(eps), None);
    if policy == Policy::Greedy {
        o = o.with_greedy(0..n);
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    let every = every.max(1);
    for step in 1..=steps {
        let i = match policy {
            Policy::Greedy => o.greedy(true).unwrap_or(n),
            Policy::Random => rng.random_range(0..=n),
            Policy::Cycle => ((step - 1) % (n as u64 + 1)) as usize,
        };
        o.read(i);
        if step % every == 0 || step == steps {
            let (err_all, err_top) = errors(&o.estimates(), reference);
            out.push(Sample {
                steps: step,
                clock: o.clock(),
                err_all,
                err_top,
            });
        }
    }
    out
}

/// A directed graph whose in-degrees follow a power law `P(k) ~ k^-exponent` (the paper's
/// synthetic graphs): each page gets its in-degree drawn from the law and its parents uniformly
/// at random; a few pages are left without out-links.
pub fn power_law_graph(n: usize, exponent: f64, seed: u64) -> Graph {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut arcs = Vec::new();
    for j in 0..n as u32 {
        // Inverse transform of a continuous Pareto with minimum 1, cut at n.
        let u: f64 = rng.random_range(0.0..1.0);
        let k = ((1.0 - u).powf(-1.0 / (exponent - 1.0)) as usize).clamp(1, n - 1);
        for _ in 0..k {
            let i = rng.random_range(0..n as u32);
            if i % 50 != 7 {
                arcs.push((i, j));
            }
        }
    }
    Graph::numbered(n, arcs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::importance::pagerank::pagerank;

    #[test]
    fn greedy_beats_random_on_a_power_law_graph() {
        let n = 3000;
        let g = power_law_graph(n, 2.1, 3);
        let (pr, _) = pagerank(&g, 0.85, 1e-13, 1000);
        let steps = 10 * n as u64;
        let last = |p| *simulate(&g, &pr, p, 0.15, steps, steps, 5).last().unwrap();
        let greedy = last(Policy::Greedy);
        let random = last(Policy::Random);
        let cycle = last(Policy::Cycle);
        assert!(
            greedy.err_all * 1.5 < random.err_all,
            "{greedy:?} {random:?}"
        );
        assert!(greedy.err_top < cycle.err_top, "{greedy:?} {cycle:?}");
        assert!(cycle.err_top < random.err_top, "{cycle:?} {random:?}");
        // Greedy reads pages with about twice the average cash: G grows twice as fast.
        let ratio = greedy.clock / random.clock;
        assert!((1.5..3.5).contains(&ratio), "{ratio}");
    }

    #[test]
    fn errors_of_an_exact_estimate_are_zero() {
        let x = [0.5, 0.3, 0.2];
        assert_eq!(errors(&x, &x), (0.0, 0.0));
        let (all, top) = errors(&[0.25, 0.5, 0.25], &[0.5, 0.25, 0.25]);
        assert!((all - 100.0 * (0.5 + 1.0 + 0.0) / 3.0).abs() < 1e-12);
        assert!((top - 50.0).abs() < 1e-12);
    }
}

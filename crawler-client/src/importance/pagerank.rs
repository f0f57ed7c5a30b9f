//! Exact PageRank by power iteration: the reference that OPIC's estimates and crawl orders
//! are measured against.
//!
//! The definition is the usual one (and NetworkX's): with damping `alpha`, a page's rank is
//! `(1 - alpha)/n + alpha * (sum over parents p of rank(p)/outdeg(p) + dangling/n)`, where
//! `dangling` is the rank held by pages without out-links, spread uniformly.

use super::graph::Graph;
use rayon::prelude::*;

/// How the iteration ended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Convergence {
    /// Iterations run.
    pub(crate) iterations: u32,
    /// L1 change of the last iteration.
    pub(crate) delta: f64,
}

/// PageRank of every node, summing to 1, iterated until the L1 change falls below `tol` or
/// `max_iter` iterations have run.
pub(crate) fn pagerank(g: &Graph, alpha: f64, tol: f64, max_iter: u32) -> (Vec<f64>, Convergence) {
    let n = g.len();
    if n == 0 {
        return (
            Vec::new(),
            Convergence {
                iterations: 0,
                delta: 0.0,
            },
        );
    }
    let inv_out: Vec<f64> = (0..n)
        .map(|i| match g.out_degree(i) {
            0 => 0.0,
            d => 1.0 / d as f64,
        })
        .collect();
    let dangling: Vec<u32> = (0..n as u32)
        .filter(|i| g.out_degree(*i as usize) == 0)
        .collect();
    let mut x = vec![1.0 / n as f64; n];
    let mut share = vec![0.0; n];
    let mut next = vec![0.0; n];
    let mut conv = Convergence {
        iterations: 0,
        delta: f64::INFINITY,
    };
    while conv.iterations < max_iter && conv.delta >= tol {
        share
            .par_iter_mut()
            .zip(x.par_iter().zip(inv_out.par_iter()))
            .for_each(|(s, (xi, w))| *s = xi * w);
        let lost: f64 = dangling.iter().map(|i| x[*i as usize]).sum();
        let base = (1.0 - alpha) / n as f64 + alpha * lost / n as f64;
        next.par_iter_mut().enumerate().for_each(|(j, y)| {
            let sum: f64 = g.parents(j).iter().map(|p| share[*p as usize]).sum();
            *y = base + alpha * sum;
        });
        // Renormalised against rounding drift, so the scores sum to 1 exactly enough.
        let total: f64 = next.par_iter().sum();
        next.par_iter_mut().for_each(|y| *y /= total);
        conv.delta = next
            .par_iter()
            .zip(x.par_iter())
            .map(|(a, b)| (a - b).abs())
            .sum();
        std::mem::swap(&mut x, &mut next);
        conv.iterations += 1;
    }
    (x, conv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangling_rank_is_spread_and_scores_sum_to_one() {
        // 0 -> 1, 1 -> 2, 2 dangling; solved by hand for alpha = 0.5:
        // b = 1/6 + x2/6, x0 = b, x1 = b + x0/2, x2 = b + x1/2, so b = 4/17.
        let g = Graph::numbered(3, vec![(0, 1), (1, 2)]);
        let (x, conv) = pagerank(&g, 0.5, 1e-15, 1000);
        assert!(conv.delta < 1e-15);
        let expected = [4.0 / 17.0, 6.0 / 17.0, 7.0 / 17.0];
        for (a, b) in x.iter().zip(expected) {
            assert!((a - b).abs() < 1e-12, "{x:?}");
        }
    }

    #[test]
    fn a_cycle_is_uniform_and_alpha_zero_is_uniform() {
        let g = Graph::numbered(4, vec![(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]);
        let (x, _) = pagerank(&g, 0.0, 1e-15, 1000);
        assert!(x.iter().all(|v| (v - 0.25).abs() < 1e-15));
        let ring = Graph::numbered(3, vec![(0, 1), (1, 2), (2, 0)]);
        let (x, _) = pagerank(&ring, 0.85, 1e-15, 1000);
        assert!(x.iter().all(|v| (v - 1.0 / 3.0).abs() < 1e-12));
    }
}

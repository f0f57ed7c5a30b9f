//! The crawl's sampling of checks: which claims are checked by a fetch, and which of many
//! pages. Seeded per crawl, so a run can be replayed; uniform, which is all checks need (a
//! site cannot know which of its claims will be checked).

/// A xorshift generator.
pub(crate) struct Sampler {
    state: u64,
}

impl Sampler {
    /// Seeded with `seed` (any value: zero is made odd).
    pub(crate) fn new(seed: u64) -> Sampler {
        Sampler { state: seed | 1 }
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// An index below `n` (0 for none), drawn from the current state without moving it.
    pub(crate) fn index(&self, n: usize) -> usize {
        (self.state as usize) % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chances_are_uniform_and_seeded() {
        let mut s = Sampler::new(42);
        let hits = (0..20_000).filter(|_| s.chance(0.25)).count();
        assert!((4_500..5_500).contains(&hits), "{hits}");
        let mut a = Sampler::new(7);
        let mut b = Sampler::new(7);
        let runs: Vec<(bool, bool)> = (0..50).map(|_| (a.chance(0.5), b.chance(0.5))).collect();
        assert!(runs.iter().all(|(x, y)| x == y));
        let mut z = Sampler::new(0);
        assert!(!z.chance(-1.0));
        assert!(z.chance(1.0));
        assert_eq!(z.index(0), 0);
        assert!(z.index(3) < 3);
    }
}

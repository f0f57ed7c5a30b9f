//! What a bench run is asked to do: the site, the simulated time, the binaries.

use std::path::PathBuf;

/// What a run is asked to do.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Pages of the generated site.
    pub pages: usize,
    /// Simulated seconds measured.
    pub duration: f64,
    /// Simulated seconds per real second.
    pub speed: f64,
    /// The crawler's own revisit cycle (every page once per cycle), simulated seconds.
    pub cycle: f64,
    /// Seed of the site.
    pub seed: u64,
    /// Where runs keep their files.
    pub work: PathBuf,
    /// The agent's binary.
    pub agent: PathBuf,
    /// The crawler's binary.
    pub crawler: PathBuf,
    /// nginx, to serve the site with the shipped server block instead of the built-in server.
    pub nginx: Option<PathBuf>,
    /// Simulated seconds since each page last changed when the measurement begins, as its
    /// file's date (see [`super::changes::ages`]); empty: every file dated when generated.
    pub history: Vec<f64>,
    /// An access log for the agent to count (`--access-log`, `--publish-popularity`).
    pub access_log: Option<PathBuf>,
}

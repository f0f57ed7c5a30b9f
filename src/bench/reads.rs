//! What people read on the bench's site, and the access log that says so. Castillo's
//! navigation model B (thesis, section 5.2): a visitor starting at the home page goes one
//! level deeper with probability `q` (0.55 in his data), so the reads of level `i` (pages at
//! `i` clicks from the home page, breadth-first over the site's links) are in proportion to
//! `(1 - q) q^i`. Within a level, reads follow Zipf's law (exponent 1) over an order drawn
//! from the seed: what people read is not what the links say, which is why a crawler cannot
//! learn it by crawling.

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::Path;

/// Castillo's continuation probability: the share of visitors that go one level deeper.
pub const DEPTH_CONTINUATION: f64 = 0.55;

/// Each page's share of reads (paths from `/`), summing to 1 over the pages reachable from
/// the home page.
#[derive(Debug, Clone, Default)]
pub struct Reads {
    /// Share of reads per path.
    pub shares: HashMap<String, f64>,
    /// Clicks from the home page per path (breadth-first).
    pub depth: HashMap<String, usize>,
}

/// The site-local links (`href="/..."`) of an HTML text, in order.
fn links_of(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("href=\"") {
        rest = &rest[i + 6..];
        let Some(end) = rest.find('"') else { break };
        if rest[..end].starts_with('/') {
            out.push(rest[..end].to_string());
        }
        rest = &rest[end..];
    }
    out
}

impl Reads {
    /// Each of `paths`' share of reads, in their order (none read: 0).
    pub fn weights(&self, paths: &[String]) -> Vec<f64> {
        paths
            .iter()
            .map(|p| self.shares.get(p).copied().unwrap_or(0.0))
            .collect()
    }

    /// The reads of the site in `docroot` whose pages are `paths`, from `/index.html`.
    pub fn of_site(docroot: &Path, paths: &[String], seed: u64) -> Reads {
        let home = "/index.html".to_string();
        let mut depth: HashMap<String, usize> = HashMap::from([(home.clone(), 0)]);
        let mut queue = VecDeque::from([home]);
        let known: std::collections::HashSet<&str> = paths.iter().map(String::as_str).collect();
        while let Some(p) = queue.pop_front() {
            let d = depth[&p];
            let Ok(html) = std::fs::read_to_string(docroot.join(p.trim_start_matches('/'))) else {
                continue;
            };
            for l in links_of(&html) {
                if known.contains(l.as_str()) && !depth.contains_key(&l) {
                    depth.insert(l.clone(), d + 1);
                    queue.push_back(l);
                }
            }
        }
        let mut levels: Vec<Vec<String>> = Vec::new();
        let mut sorted: Vec<(&String, &usize)> = depth.iter().collect();
        sorted.sort();
        for (p, d) in sorted {
            if levels.len() <= *d {
                levels.resize(d + 1, Vec::new());
            }
            levels[*d].push(p.clone());
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x7265_6164);
        let q = DEPTH_CONTINUATION;
        // Levels beyond the deepest hold nobody: the level weights are renormalised.
        let level_total: f64 = (0..levels.len())
            .map(|i| (1.0 - q) * q.powi(i as i32))
            .sum();
        let mut shares = HashMap::new();
        for (i, level) in levels.iter_mut().enumerate() {
            level.shuffle(&mut rng);
            let level_share = (1.0 - q) * q.powi(i as i32) / level_total;
            let harmonic: f64 = (1..=level.len()).map(|r| 1.0 / r as f64).sum();
            for (r, p) in level.iter().enumerate() {
                shares.insert(p.clone(), level_share / ((r + 1) as f64 * harmonic));
            }
        }
        Reads { shares, depth }
    }

    /// The share of reads of the pages in `order`'s first `n`.
    pub fn captured<'a>(&self, order: impl IntoIterator<Item = &'a String>, n: usize) -> f64 {
        order
            .into_iter()
            .take(n)
            .filter_map(|p| self.shares.get(p))
            .sum()
    }

    /// The order in which a breadth-first crawler from the home page reaches the pages.
    pub fn breadth_first(&self) -> Vec<String> {
        let mut v: Vec<(&String, &usize)> = self.depth.iter().collect();
        // Within a level, the order the links were found in is the page number's order
        // (each page links its successor first): a stable stand-in for discovery order.
        v.sort_by_key(|(p, d)| (**d, page_number(p), (*p).clone()));
        v.into_iter().map(|(p, _)| p.clone()).collect()
    }

    /// Writes `visits` lines of nginx's combined format to `log`, each a distinct visitor (an
    /// address of 10/8 and a browser's user agent) reading a page drawn by its share, dated
    /// over the `span` seconds before `end`.
    pub fn write_log(
        &self,
        log: &Path,
        visits: usize,
        span: f64,
        end: chrono::DateTime<chrono::Utc>,
        seed: u64,
    ) -> std::io::Result<()> {
        let mut pages: Vec<(&String, f64)> = self.shares.iter().map(|(p, s)| (p, *s)).collect();
        pages.sort_by(|a, b| a.0.cmp(b.0));
        let mut cumulative = Vec::with_capacity(pages.len());
        let mut sum = 0.0;
        for (_, s) in &pages {
            sum += s;
            cumulative.push(sum);
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x6c6f_6773);
        let mut out = std::io::BufWriter::new(std::fs::File::create(log)?);
        let mut times: Vec<f64> = (0..visits).map(|_| rng.random::<f64>() * span).collect();
        times.sort_by(|a, b| b.total_cmp(a));
        for (k, back) in times.into_iter().enumerate() {
            let u: f64 = rng.random::<f64>() * sum;
            let i = cumulative.partition_point(|c| *c < u).min(pages.len() - 1);
            let at = end - chrono::Duration::milliseconds((back * 1000.0) as i64);
            writeln!(
                out,
                "10.{}.{}.{} - - [{}] \"GET {} HTTP/1.1\" 200 {} \"-\" \"Mozilla/5.0 (X11; Linux x86_64; rv:{}.0) Gecko/20100101 Firefox/{}.0\"",
                (k >> 16) & 0xff,
                (k >> 8) & 0xff,
                k & 0xff,
                at.format("%d/%b/%Y:%H:%M:%S +0000"),
                pages[i].0,
                rng.random_range(2_000..60_000),
                100 + k % 40,
                100 + k % 40,
            )?;
        }
        out.flush()
    }
}

fn page_number(path: &str) -> usize {
    path.trim_start_matches("/p/")
        .trim_end_matches(".html")
        .parse()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::site::GeneratedSite;

    #[test]
    fn reads_follow_the_depth_model_and_the_log_draws_from_them() {
        let dir = tempfile::tempdir().unwrap();
        let site = GeneratedSite::generate(dir.path(), 300, 3).unwrap();
        let reads = Reads::of_site(dir.path(), &site.paths, 3);
        assert_eq!(reads.depth["/index.html"], 0);
        let total: f64 = reads.shares.values().sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        // Each level holds q times the reads of the level above, renormalised.
        let by_level = |d: usize| -> f64 {
            reads
                .depth
                .iter()
                .filter(|(_, x)| **x == d)
                .map(|(p, _)| reads.shares[p])
                .sum()
        };
        assert!((by_level(1) / by_level(0) - DEPTH_CONTINUATION).abs() < 1e-9);
        assert!(reads.shares.len() > 250, "most pages reachable");
        let bfs = reads.breadth_first();
        assert_eq!(bfs[0], "/index.html");
        assert!(
            bfs.windows(2)
                .all(|w| reads.depth[&w[0]] <= reads.depth[&w[1]])
        );

        let log = dir.path().join("access.log");
        let end = chrono::Utc::now();
        reads.write_log(&log, 20_000, 86_400.0, end, 3).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let home = text
            .lines()
            .filter(|l| l.contains("GET /index.html "))
            .count();
        let share = home as f64 / 20_000.0;
        assert!(
            (share - reads.shares["/index.html"]).abs() < 0.02,
            "{share}"
        );
        let first = text.lines().next().unwrap();
        assert!(first.starts_with("10.0.0.0 - - ["), "{first}");
    }
}

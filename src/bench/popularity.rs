//! The `popularity` preset: what a site's access log is worth to a crawler. The bench's site
//! gets an access log drawn from Castillo's navigation model ([`super::reads`]); the agent
//! counts it and publishes each page's share of reads. Two measurements:
//!
//! - the first crawl: the share of all reads held after 10, 25 and 50% of the pages, for a
//!   breadth-first order (computed from the site's links), the crawler's OPIC order, OPIC with
//!   the site's listing, and OPIC with the listing's stated popularity (each a real crawl, one
//!   connection, its order read from its log);
//! - keeping fresh at the same request budget: the crawler polling with the optimal refresh
//!   policy weighted by OPIC alone (`optimal`) against the same policy with the stated
//!   popularity added to the weights (`listing`), scored by plain and read-weighted freshness.

use super::changes::Edit;
use super::reads::Reads;
use super::run::{BenchConfig, Mode, ModeResult, ServedSite, first_visit, io, run_mode};
use super::site::GeneratedSite;

/// The seed of every crawl.
const HOME: &str = "/index.html";

/// The points of the first crawl where the captured reads are reported (share of pages).
pub const POINTS: [f64; 3] = [0.10, 0.25, 0.50];

/// One first crawl's order, scored.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Order {
    /// How the pages were ordered.
    pub strategy: &'static str,
    /// Pages of the site in the order.
    pub pages: usize,
    /// Share of reads held after each of [`POINTS`].
    pub captured: Vec<f64>,
}

/// What the preset measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PopularityResult {
    /// Pages reachable from the home page (the ones people read).
    pub pages: usize,
    /// Visits in the access log.
    pub visits: usize,
    /// The home page's share of reads.
    pub home: f64,
    /// Pages whose share the agent published (`wc:popularity` in robots.rdf).
    pub published: usize,
    /// The first crawl's orders.
    pub orders: Vec<Order>,
    /// The refresh runs.
    pub refresh: Vec<ModeResult>,
}

/// Pages in the order the crawl at `out` first fetched them with success.
fn fetch_order(out: &std::path::Path, base: &str) -> Vec<String> {
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    let mut order = Vec::new();
    for line in log.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(status), Some(url)) = (fields.get(1), fields.get(3)) else {
            continue;
        };
        if *status != "200" {
            continue;
        }
        let Some(path) = url.strip_prefix(base.trim_end_matches('/')) else {
            continue;
        };
        let path = if path == "/" { "/index.html" } else { path };
        if seen.insert(path.to_string()) {
            order.push(path.to_string());
        }
    }
    order
}

/// The reads captured by `order` at each of [`POINTS`] of `pages` pages, as a share of the
/// reads beyond the home page (every order starts there).
fn scored(strategy: &'static str, reads: &Reads, order: &[String], pages: usize) -> Order {
    let pages_only: Vec<&String> = order
        .iter()
        .filter(|p| reads.shares.contains_key(*p) && *p != HOME)
        .collect();
    let beyond = 1.0 - reads.shares.get(HOME).copied().unwrap_or(0.0);
    Order {
        strategy,
        pages: pages_only.len(),
        captured: POINTS
            .iter()
            .map(|x| {
                let n = (x * pages as f64).ceil() as usize;
                reads.captured(pages_only.iter().copied(), n) / beyond.max(f64::MIN_POSITIVE)
            })
            .collect(),
    }
}

/// Runs the preset: `cfg.access_log` is written here.
pub async fn run(
    cfg: &BenchConfig,
    edits: &[Edit],
    visits: usize,
) -> Result<PopularityResult, String> {
    let dir = cfg.work.join("popularity");
    let _ = std::fs::remove_dir_all(&dir);
    let probe = dir.join("probe");
    let site = GeneratedSite::generate(&probe, cfg.pages, cfg.seed).map_err(io("site"))?;
    let reads = Reads::of_site(&probe, &site.paths, cfg.seed);
    let log = dir.join("access.log");
    reads
        .write_log(&log, visits, 3.0 * 86_400.0, chrono::Utc::now(), cfg.seed)
        .map_err(io("access.log"))?;
    let mut cfg = cfg.clone();
    cfg.access_log = Some(log);
    let pages = reads.shares.len();

    let mut best: Vec<(&String, &f64)> = reads.shares.iter().collect();
    best.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    let best: Vec<String> = best.into_iter().map(|(p, _)| p.clone()).collect();
    let mut orders = vec![
        scored("by reads (the best any order can do)", &reads, &best, pages),
        scored("breadth-first", &reads, &reads.breadth_first(), pages),
    ];
    let mut published = 0;
    for (strategy, coop, weight) in [
        ("OPIC", "off", "0"),
        ("OPIC, listing", "listing", "0"),
        ("OPIC, listing, popularity", "listing", "1"),
    ] {
        let run_dir = dir.join(coop).join(weight);
        let served = ServedSite::start(&cfg, &run_dir, &[], chrono::Utc::now()).await?;
        let rdf = std::fs::read_to_string(served.docroot().join("robots.rdf")).unwrap_or_default();
        published = rdf.matches("<wc:popularity>").count();
        let out = run_dir.join("crawl");
        let status = first_visit(&cfg.crawler, &served.base, &out, &run_dir.join("crawl.err"))
            // One connection: the order of the log is the frontier's.
            .args(["--per-host-connections", "1", "--coop", coop])
            .args(["--coop-popularity-weight", weight])
            .status()
            .map_err(io("webcoop-crawl"))?;
        if !status.success() {
            return Err(format!("webcoop-crawl ({strategy}) ended {status}"));
        }
        orders.push(scored(
            strategy,
            &reads,
            &fetch_order(&out, &served.base),
            pages,
        ));
    }

    let mut refresh = Vec::new();
    for mode in [Mode::Optimal, Mode::Listing] {
        eprintln!("webcoop-bench: popularity: {} ...", mode.name());
        refresh.push(
            run_mode(&cfg, mode, edits)
                .await
                .map_err(|e| format!("{}: {e}", mode.name()))?,
        );
    }
    Ok(PopularityResult {
        pages,
        visits,
        home: reads.shares.get(HOME).copied().unwrap_or(0.0),
        published,
        orders,
        refresh,
    })
}

/// The result as markdown tables.
pub fn table(r: &PopularityResult) -> String {
    let mut t = format!(
        "A site of {} pages people read, {} visits in its access log; the agent published the \
         share of {} pages; the home page, where every crawl starts, holds {:.3} of the reads.\n\n\
         First crawl: share of the other pages' reads held after\n\n\
         | order | pages | 10% of pages | 25% | 50% |\n|---|---:|---:|---:|---:|\n",
        r.pages, r.visits, r.published, r.home
    );
    for o in &r.orders {
        let c: Vec<String> = o.captured.iter().map(|x| format!("{:.3}", x)).collect();
        t.push_str(&format!(
            "| {} | {} | {} |\n",
            o.strategy,
            o.pages,
            c.join(" | ")
        ));
    }
    t.push_str(
        "\nKeeping fresh at the same refresh cycle (optimal policy; `listing` adds the stated \
         popularity to the weights):\n\n\
         | mode | requests | bytes | freshness | staleness | read-weighted freshness | read-weighted staleness |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for m in &r.refresh {
        t.push_str(&format!(
            "| {} | {} | {} | {:.4} | {:.4} | {:.4} | {:.4} |\n",
            m.mode.name(),
            m.site.requests,
            m.site.bytes(),
            m.score.freshness,
            1.0 - m.score.freshness,
            m.read_score.freshness,
            1.0 - m.read_score.freshness,
        ));
    }
    if let [a, b] = &r.refresh[..] {
        let (sa, sb) = (1.0 - a.read_score.freshness, 1.0 - b.read_score.freshness);
        if sa > 0.0 {
            t.push_str(&format!(
                "\nRead-weighted staleness, listing / optimal: {:.2}x\n",
                sb / sa
            ));
        }
    }
    t
}

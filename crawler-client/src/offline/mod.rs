//! The commands that work on a link graph or a model instead of the web: `rank`, `opic-sim`,
//! `order-sim` and `refresh-sim`, each printing a plain table to standard output; and the
//! floor's HTTP part (`floor_http`), a measurement for the crawl benchmark.

pub(crate) mod floor_http;
pub(crate) mod inspect;
pub(crate) mod key_server;
pub(crate) mod keys;
pub mod opic_sim;
pub mod order_sim;
pub mod refresh_sim;

use crate::importance::graph::{Graph, GraphError};
use crate::importance::pagerank::pagerank;
use crate::offline::opic_sim::Policy as OpicPolicy;
use crate::offline::order_sim::Strategy;
use crate::offline::refresh_sim::Setup;
use crate::refresh::allocation::Policy as RefreshPolicy;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `rank`: exact PageRank of a link graph.
#[derive(clap::Args, Debug)]
pub struct RankArgs {
    /// Arcs file: `SOURCE<TAB>TARGET` lines, plain or gzip.
    #[arg(long, value_name = "FILE")]
    pub(crate) arcs: PathBuf,
    /// Damping factor (the probability of following a link).
    #[arg(long, default_value_t = 0.85)]
    pub(crate) alpha: f64,
    /// Stop when the L1 change of an iteration falls below this.
    #[arg(long, default_value_t = 1e-12)]
    pub(crate) tol: f64,
    /// Give up after this many iterations.
    #[arg(long, default_value_t = 1000)]
    pub(crate) max_iter: u32,
}

/// `opic-sim`: OPIC replayed on a graph, against exact PageRank.
#[derive(clap::Args, Debug)]
pub struct OpicSimArgs {
    /// Arcs file: `SOURCE<TAB>TARGET` lines, plain or gzip.
    #[arg(long, value_name = "FILE")]
    pub(crate) arcs: PathBuf,
    /// Which page is read next.
    #[arg(long, value_enum, default_value_t = OpicPolicy::Greedy)]
    pub(crate) policy: OpicPolicy,
    /// Pages read (default: ten passes, 10 n).
    #[arg(long)]
    pub(crate) steps: Option<u64>,
    /// Share of a page's cash that goes to the virtual page; the estimates converge to
    /// PageRank with damping 1 - eps.
    #[arg(long, default_value_t = 0.15)]
    pub(crate) eps: f64,
    /// Print the error every this many reads (default: every pass of n reads).
    #[arg(long)]
    pub(crate) every: Option<u64>,
    /// Random seed (for `random`).
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

/// `order-sim`: Castillo's crawl-order comparison on a graph.
#[derive(clap::Args, Debug)]
pub struct OrderSimArgs {
    /// Arcs file: `SOURCE<TAB>TARGET` lines, plain or gzip.
    #[arg(long, value_name = "FILE")]
    pub(crate) arcs: PathBuf,
    /// Crawl orders to compare (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "bfs,backlink,pagerank-batch,opic,larger-sites-first,random"
    )]
    pub(crate) strategy: Vec<Strategy>,
    /// Each node's site: `NODE<TAB>SITE` lines. Without it, sites are inferred from node order
    /// (graphs numbered by sorted URL), see --site-span.
    #[arg(long, value_name = "FILE")]
    pub(crate) sites: Option<PathBuf>,
    /// When inferring sites: the longest id span of a link that holds a site together.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) site_span: usize,
    /// Start nodes (comma-separated labels). Default: the first node of every site, its home
    /// page when nodes are numbered by sorted URL.
    #[arg(long, value_delimiter = ',')]
    pub(crate) seeds: Vec<String>,
    /// PageRank damping.
    #[arg(long, default_value_t = 0.85)]
    pub(crate) alpha: f64,
    /// Pages per batch for pagerank-batch (default: a 30th of the graph).
    #[arg(long, default_value_t = 0)]
    pub(crate) batch: usize,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

/// `refresh-sim`: revisit policies under a budget, on pages with Poisson changes.
#[derive(clap::Args, Debug)]
pub struct RefreshSimArgs {
    /// Pages.
    #[arg(long, default_value_t = 2000)]
    pub(crate) pages: usize,
    /// Visits per day.
    #[arg(long, default_value_t = 200.0)]
    pub(crate) budget: f64,
    /// Policies (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "uniform,proportional,sqrt,optimal"
    )]
    pub(crate) policy: Vec<RefreshPolicy>,
    /// Days simulated.
    #[arg(long, default_value_t = 240.0)]
    pub(crate) days: f64,
    /// Days of warm-up before measuring.
    #[arg(long, default_value_t = 60.0)]
    pub(crate) warmup: f64,
    /// Pareto shape of the change rates (smaller: heavier tail).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) shape: f64,
    /// Smallest change rate, per day.
    #[arg(long, default_value_t = 1.0 / 60.0)]
    pub(crate) min_rate: f64,
    /// Largest change rate, per day.
    #[arg(long, default_value_t = 48.0)]
    pub(crate) max_rate: f64,
    /// Give pages Zipf importance and weigh freshness by it.
    #[arg(long)]
    pub(crate) importance: bool,
    /// The crawler sees no Last-Modified (rates from content changes only).
    #[arg(long)]
    pub(crate) no_last_modified: bool,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

/// What went wrong in an offline command.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// The graph could not be read.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A file named on the command line is wrong.
    #[error("{0}")]
    Input(String),
    /// Standard output failed.
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
}

fn load(path: &Path) -> Result<Graph, OfflineError> {
    let t = Instant::now();
    let g = Graph::read(path)?;
    if g.is_empty() {
        return Err(OfflineError::Input(format!("{}: no arcs", path.display())));
    }
    eprintln!(
        "{}: {} nodes, {} arcs, read in {:.2} s",
        path.display(),
        g.len(),
        g.arcs(),
        t.elapsed().as_secs_f64()
    );
    Ok(g)
}

/// Runs `rank`.
pub fn rank(a: &RankArgs) -> Result<(), OfflineError> {
    if !(0.0..1.0).contains(&a.alpha) {
        return Err(OfflineError::Input(format!(
            "--alpha {} is not in [0, 1)",
            a.alpha
        )));
    }
    let g = load(&a.arcs)?;
    let t = Instant::now();
    let (x, conv) = pagerank(&g, a.alpha, a.tol, a.max_iter);
    eprintln!(
        "PageRank: {} iterations, last L1 change {:.1e}, {:.2} s",
        conv.iterations,
        conv.delta,
        t.elapsed().as_secs_f64()
    );
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, v) in x.iter().enumerate() {
        writeln!(out, "{}\t{v:.17e}", g.label(i))?;
    }
    out.flush()?;
    Ok(())
}

/// Runs `opic-sim`.
pub fn opic_sim(a: &OpicSimArgs) -> Result<(), OfflineError> {
    if !(0.0 < a.eps && a.eps < 1.0) {
        return Err(OfflineError::Input(format!(
            "--eps {} is not in (0, 1)",
            a.eps
        )));
    }
    let g = load(&a.arcs)?;
    let n = g.len() as u64;
    let (pr, _) = pagerank(&g, 1.0 - a.eps, 1e-13, 2000);
    let steps = a.steps.unwrap_or(10 * n);
    let every = a.every.unwrap_or(n);
    let t = Instant::now();
    let samples = opic_sim::simulate(&g, &pr, a.policy, a.eps, steps, every, a.seed);
    let mut out = std::io::stdout().lock();
    writeln!(out, "policy\tsteps\tpasses\tG\terr_all_%\terr_top10_%")?;
    for s in &samples {
        writeln!(
            out,
            "{:?}\t{}\t{:.2}\t{:.3}\t{:.2}\t{:.2}",
            a.policy,
            s.steps,
            s.steps as f64 / n as f64,
            s.clock,
            s.err_all,
            s.err_top
        )?;
    }
    eprintln!("{steps} reads in {:.2} s", t.elapsed().as_secs_f64());
    Ok(())
}

/// Node index by label.
fn label_index(g: &Graph) -> std::collections::HashMap<&str, usize> {
    (0..g.len()).map(|i| (g.label(i), i)).collect()
}

fn read_sites(path: &Path, g: &Graph) -> Result<Vec<u32>, OfflineError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| OfflineError::Input(format!("{}: {e}", path.display())))?;
    let index = label_index(g);
    let mut names = std::collections::HashMap::new();
    let mut site = vec![u32::MAX; g.len()];
    for (no, line) in text.lines().enumerate() {
        let mut parts = line.split_whitespace();
        let (Some(node), Some(name)) = (parts.next(), parts.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(OfflineError::Input(format!(
                "{}:{}: expected `NODE<TAB>SITE`",
                path.display(),
                no + 1
            )));
        };
        if let Some(i) = index.get(node) {
            let next = names.len() as u32;
            site[*i] = *names.entry(name.to_string()).or_insert(next);
        }
    }
    // Nodes the file leaves out are sites of their own.
    let mut next = names.len() as u32;
    for s in &mut site {
        if *s == u32::MAX {
            *s = next;
            next += 1;
        }
    }
    Ok(site)
}

/// Runs `order-sim`.
pub fn order_sim(a: &OrderSimArgs) -> Result<(), OfflineError> {
    let g = load(&a.arcs)?;
    let site = match &a.sites {
        Some(path) => read_sites(path, &g)?,
        None => order_sim::sites_by_order(&g, a.site_span),
    };
    let n_sites = site.iter().max().map_or(0, |m| *m as usize + 1);
    let seeds: Vec<usize> = if a.seeds.is_empty() {
        (0..g.len())
            .filter(|i| *i == 0 || site[*i] != site[i - 1])
            .collect()
    } else {
        let index = label_index(&g);
        a.seeds
            .iter()
            .map(|s| {
                index
                    .get(s.as_str())
                    .copied()
                    .ok_or_else(|| OfflineError::Input(format!("seed {s:?} is not a node")))
            })
            .collect::<Result<_, _>>()?
    };
    eprintln!("{n_sites} sites, {} seeds", seeds.len());
    let opts = order_sim::Options {
        alpha: a.alpha,
        batch: a.batch,
        seed: a.seed,
        ..Default::default()
    };
    let (pr, _) = pagerank(&g, a.alpha, 1e-12, 1000);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "strategy\tpages\t10%\t20%\t30%\t40%\t50%\t60%\t70%\t80%\t90%\tavg_pagerank\tkendall_tau\tseconds"
    )?;
    for s in &a.strategy {
        let t = Instant::now();
        let (order, _) = order_sim::crawl_order(&g, &site, &seeds, *s, &opts);
        let o = order_sim::measure(&order, &pr, &opts);
        let deciles: Vec<String> = o.deciles[..9].iter().map(|d| format!("{d:.3}")).collect();
        writeln!(
            out,
            "{s:?}\t{}\t{}\t{:.4}\t{:.4}\t{:.1}",
            o.fetched,
            deciles.join("\t"),
            o.average,
            o.tau,
            t.elapsed().as_secs_f64()
        )?;
    }
    Ok(())
}

/// Runs `refresh-sim`.
pub fn refresh_sim(a: &RefreshSimArgs) -> Result<(), OfflineError> {
    if a.pages == 0 || a.budget <= 0.0 || a.days <= a.warmup || a.shape <= 0.0 {
        return Err(OfflineError::Input(
            "need --pages > 0, --budget > 0, --days > --warmup and --shape > 0".into(),
        ));
    }
    let setup = Setup {
        pages: a.pages,
        budget: a.budget,
        days: a.days,
        warmup: a.warmup,
        shape: a.shape,
        min_rate: a.min_rate,
        max_rate: a.max_rate,
        importance: a.importance,
        last_modified: !a.no_last_modified,
        seed: a.seed,
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "policy\tfreshness\tage_days\tvisits_per_day\tnot_refreshed\tplanned_freshness"
    )?;
    let mut rows: Vec<(String, refresh_sim::RefreshResult)> = a
        .policy
        .iter()
        .map(|p| {
            (
                format!("{p:?}").to_lowercase(),
                refresh_sim::run(&setup, *p, false),
            )
        })
        .collect();
    rows.push((
        "omniscient-optimal".into(),
        refresh_sim::run(&setup, RefreshPolicy::Optimal, true),
    ));
    for (name, o) in rows {
        writeln!(
            out,
            "{name}\t{:.4}\t{:.3}\t{:.1}\t{}\t{:.4}",
            o.freshness, o.age_days, o.visits_per_day, o.dropped, o.planned_freshness
        )?;
    }
    Ok(())
}

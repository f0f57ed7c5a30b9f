//! webcoop-bench: what cooperation saves and what freshness it buys, measured on the wire.

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use webcoop::bench::changes::{self, Edit};
use webcoop::bench::run::{BenchConfig, Mode, ModeResult, run_mode};

/// Poll against push on the wire: for each mode, a generated site on loopback with the agent
/// beside it, the crawler in that mode, and the same edits on a scaled clock.
#[derive(Parser, Debug)]
#[command(name = "webcoop-bench", version)]
struct Args {
    /// Pages of the generated site.
    #[arg(long, default_value_t = 100)]
    pages: usize,
    /// Mean change rate per page: N%/h, N/h, N/d.
    #[arg(long, default_value = "1%/h")]
    change_rate: String,
    /// Simulated time measured, e.g. 1d, 6h, 90m, 3600 (seconds).
    #[arg(long, default_value = "1d")]
    duration: String,
    /// Simulated seconds per real second.
    #[arg(long, default_value_t = 2400.0)]
    speed: f64,
    /// The crawler's own revisit cycle (every page once per cycle), simulated.
    #[arg(long, default_value = "1h")]
    cycle: String,
    /// Modes, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "once,poll,conditional,meta,delta,push,push-delta"
    )]
    modes: Vec<String>,
    /// Replay these edits instead of generating them (format: `webcoop::bench::changes`).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Seed of the site and its edits.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A fixed experiment instead of the modes: `castillo-2004` (the thesis's 249-page site,
    /// HEAD per page against one robots.rdf, and what webcoop adds), `release` (a real
    /// site's release, `--old` then `--new`, through push with deltas, against the floor of
    /// its deltas and new pages), or `first-crawl` (a crawler's first visit, one request per
    /// page against the site's snapshot; `--site DIR` or a generated site of `--pages`), or
    /// `popularity` (an access log drawn from Castillo's navigation model, counted and
    /// published by the agent: the reads a first crawl holds early, breadth-first, by OPIC and
    /// by OPIC with the stated popularity; and read-weighted freshness at one refresh budget,
    /// with and without it, over `--duration` with the modes' edits).
    /// `web` runs the web's own signals without the agent (sitemap, rss, atom, json-feed,
    /// websub, indexnow), each on its own site with the modes' edits, against the same sites
    /// polled (conditional), and reports each class and the mixed web's sums.
    #[arg(long, value_parser = ["castillo-2004", "release", "first-crawl", "popularity", "web"])]
    preset: Option<String>,
    /// `popularity`: visits in the generated access log (each a distinct visitor).
    #[arg(long, default_value_t = 50_000)]
    visits: usize,
    /// `first-crawl`: the docroot to serve (copied), e.g. /usr/share/doc/python3.11/html.
    #[arg(long, requires = "preset")]
    site: Option<PathBuf>,
    /// `first-crawl`: rounds, each crawling page by page, then by the snapshot.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// `first-crawl`: the crawler's page limit in bytes (`--max-body`) for both crawls; a site
    /// with pages above the crawler's default (4 MiB) needs more to hold every page exactly.
    #[arg(long, value_name = "BYTES", requires = "preset")]
    max_body: Option<usize>,
    /// `release`: the site before the release (a docroot).
    #[arg(long, requires = "preset")]
    old: Option<PathBuf>,
    /// `release`: the site after it (a docroot).
    #[arg(long, requires = "old", conflicts_with = "replace")]
    new: Option<PathBuf>,
    /// `release`: make the new site from `--old` by replacing FROM with TO in every HTML page,
    /// as a minor release of documentation does (e.g. `--replace 3.11.2 3.11.3`).
    #[arg(long, requires = "old", num_args = 2, value_names = ["FROM", "TO"])]
    replace: Option<Vec<String>>,
    /// Serve the site with nginx (the shipped server block) instead of the built-in server.
    #[arg(long)]
    nginx: bool,
    /// Run the modes one after the other rather than side by side (slower, quieter).
    #[arg(long)]
    sequential: bool,
    /// Where results (JSON, CSV) and the runs' files go.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
}

/// `1d`, `6h`, `90m`, `30s` or plain seconds.
fn parse_span(s: &str) -> Result<f64, String> {
    let (n, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], c),
        _ => (s, 's'),
    };
    let n: f64 = n
        .parse()
        .map_err(|_| format!("{s:?} is not a time span (e.g. 1d, 6h, 90m)"))?;
    let per = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86_400.0,
        _ => return Err(format!("{s:?}: the unit is s, m, h or d")),
    };
    if n > 0.0 && n.is_finite() {
        Ok(n * per)
    } else {
        Err(format!("{s:?} must be positive"))
    }
}

/// The agent's and the crawler's binaries: beside this one, built by cargo when missing.
fn binaries() -> Result<(PathBuf, PathBuf), String> {
    let exe = std::env::current_exe().map_err(|e| format!("where am I: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new(".")).to_path_buf();
    let (agent, crawler) = (dir.join("webcoop-agent"), dir.join("webcoop-crawl"));
    if agent.is_file() && crawler.is_file() {
        return Ok((agent, crawler));
    }
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Err(format!(
            "webcoop-agent and webcoop-crawl are not in {}; build them (cargo build --release --workspace --bins)",
            dir.display()
        ));
    };
    let profile = if dir.ends_with("debug") {
        "dev"
    } else {
        "release"
    };
    let mut command = std::process::Command::new(cargo);
    // `cargo run` gives this process the variables of its package (CARGO_PKG_NAME...); ring's
    // build script watches some of them, so passing them on rebuilt ring and everything above
    // it (two minutes in release). Cargo's own configuration variables stay.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let config = ["CARGO_HOME", "CARGO_BUILD_", "CARGO_PROFILE_", "CARGO_NET_"]
            .iter()
            .any(|p| key.starts_with(p));
        if (key.starts_with("CARGO_") && !config) || key == "OUT_DIR" {
            command.env_remove(key.as_ref());
        }
    }
    let status = command
        .args(["build", "--quiet", "--profile", profile])
        // The same packages as the build that made this binary (webcoop depends on both), so
        // cargo resolves the same features and finds every crate already compiled.
        .args([
            "-p",
            "webcoop",
            "-p",
            "webcoop-agent",
            "-p",
            "webcoop-crawler",
        ])
        .env("CARGO_TARGET_DIR", dir.parent().unwrap_or(&dir))
        .status()
        .map_err(|e| format!("cargo build: {e}"))?;
    if status.success() && agent.is_file() && crawler.is_file() {
        Ok((agent, crawler))
    } else {
        Err("building webcoop-agent and webcoop-crawl failed".into())
    }
}

/// A runtime of one worker: a run's proxies and servers run on it while its own thread waits
/// for processes.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))
}

fn fmt_bytes(b: f64) -> String {
    match b {
        b if b >= 1e6 => format!("{:.2} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} KB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

fn fmt_secs(s: Option<f64>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s >= 3600.0 => format!("{:.1} h", s / 3600.0),
        Some(s) if s >= 60.0 => format!("{:.1} min", s / 60.0),
        Some(s) => format!("{s:.0} s"),
    }
}

fn table(results: &[ModeResult]) -> String {
    let mut t = String::from(
        "| mode | requests | bytes down | bytes up | pushed | bytes per change | changes found | freshness | read-weighted | age | latency p50 | p99 | CPU crawler | CPU agent |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in results {
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {}/{} | {:.4} | {:.4} | {} | {} | {} | {:.2} s | {:.2} s |\n",
            r.mode.name(),
            r.site.requests,
            fmt_bytes(r.site.down as f64),
            fmt_bytes(r.site.up as f64),
            fmt_bytes(r.pushed.bytes() as f64),
            r.bytes_per_change().map_or("-".into(), fmt_bytes),
            r.detected,
            r.changes,
            r.score.freshness,
            r.read_score.freshness,
            fmt_secs(Some(r.score.age)),
            fmt_secs(r.latency_p50),
            fmt_secs(r.latency_p99),
            r.cpu_crawler,
            r.cpu_agent,
        ));
    }
    t
}

/// The crawler's own counts set beside the proxy's, as the last line of the table.
fn agreement(results: &[ModeResult]) -> String {
    let off: Vec<String> = results
        .iter()
        .filter_map(|r| Some(format!("- {}: {}\n", r.mode.name(), r.disagreement()?)))
        .collect();
    let failed: Vec<String> = results
        .iter()
        .filter_map(|r| match &r.signal_failures {
            (0, _) => None,
            (n, why) => Some(format!(
                "- {}: {n} of the site's pings or submissions failed (first: {})\n",
                r.mode.name(),
                why.as_deref().unwrap_or("?")
            )),
        })
        .collect();
    let off: Vec<String> = off.into_iter().chain(failed).collect();
    if off.is_empty() {
        let pushes: u64 = results.iter().map(|r| r.crawler_pushes).sum();
        format!(
            "The crawler's own counts agree with the proxy's in every mode: requests to the site, \
             and the {pushes} deliveries it accepted from the hub.\n"
        )
    } else {
        // Both counts span the crawler's whole run, so no request in flight is cut in two:
        // any difference is a bug worth reporting.
        format!(
            "The crawler's own counts differ from the proxy's:\n{}",
            off.concat()
        )
    }
}

fn csv(results: &[ModeResult]) -> String {
    let mut t = String::from(
        "mode,requests,crawler_requests,proxied_requests,deliveries,crawler_pushes,bytes_down,bytes_up,pushed_bytes,bytes_per_change,changes,detected,freshness,read_freshness,age_s,latency_p50_s,latency_p99_s,cpu_crawler_s,cpu_agent_s\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
    for r in results {
        t.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{:.3},{},{},{:.3},{:.3}\n",
            r.mode.name(),
            r.site.requests,
            r.crawler_requests,
            r.proxied_requests,
            r.deliveries,
            r.crawler_pushes,
            r.site.down,
            r.site.up,
            r.pushed.bytes(),
            opt(r.bytes_per_change()),
            r.changes,
            r.detected,
            r.score.freshness,
            r.read_score.freshness,
            r.score.age,
            opt(r.latency_p50),
            opt(r.latency_p99),
            r.cpu_crawler,
            r.cpu_agent,
        ));
    }
    t
}

fn castillo(
    args: &Args,
    out: &Path,
    agent: PathBuf,
    crawler: PathBuf,
    nginx: Option<PathBuf>,
) -> Result<(), String> {
    use webcoop::bench::castillo;
    let cfg = BenchConfig {
        pages: castillo::PAGES,
        duration: 0.0,
        speed: 1.0,
        cycle: 0.0,
        seed: args.seed,
        work: out.join("runs"),
        agent,
        crawler,
        nginx,
        history: Vec::new(),
        access_log: None,
    };
    let rt = runtime()?;
    let checks = rt.block_on(castillo::run(&cfg))?;
    let mut t = String::from(
        "| method (249 pages) | requests | bytes | per page | time | thesis: per page | thesis: time |\n|---|---:|---:|---:|---:|---:|---|\n",
    );
    for c in &checks {
        t.push_str(&format!(
            "| {} | {} | {} | {:.1} B | {:.0} ms | {} | {} |\n",
            c.method,
            c.wire.requests,
            c.wire.bytes(),
            c.per_page(),
            c.seconds * 1000.0,
            c.thesis_per_page.map_or("-".into(), |b| format!("{b} B")),
            c.thesis_time.unwrap_or("-"),
        ));
    }
    print!("{t}");
    std::fs::write(out.join("castillo-2004.md"), &t)
        .map_err(|e| format!("castillo-2004.md: {e}"))?;
    let json = serde_json::to_string_pretty(&checks).map_err(|e| e.to_string())?;
    std::fs::write(out.join("castillo-2004.json"), json)
        .map_err(|e| format!("castillo-2004.json: {e}"))
}

/// The new tree of `--replace FROM TO`: every file of `old` copied into `to`, FROM replaced
/// by TO in the HTML pages.
fn replaced(old: &Path, to: &Path, from: &str, with: &str) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(to);
    for entry in walkdir::WalkDir::new(old) {
        let entry = entry.map_err(|e| format!("{}: {e}", old.display()))?;
        let rel = entry.path().strip_prefix(old).map_err(|e| e.to_string())?;
        let dest = to.join(rel);
        let fail = |e: std::io::Error| format!("{}: {e}", dest.display());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(fail)?;
        } else if entry.file_type().is_file() {
            let body = std::fs::read(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            let body = match std::str::from_utf8(&body) {
                Ok(text) if rel.extension().is_some_and(|e| e == "html") => {
                    text.replace(from, with).into_bytes()
                }
                _ => body,
            };
            std::fs::write(&dest, body).map_err(fail)?;
        }
    }
    Ok(())
}

fn release(
    args: &Args,
    out: &Path,
    agent: PathBuf,
    crawler: PathBuf,
    nginx: Option<PathBuf>,
) -> Result<(), String> {
    use webcoop::bench::release;
    let old = args
        .old
        .clone()
        .ok_or("--preset release needs --old DIR and --new DIR (or --replace FROM TO)")?;
    let new = match (&args.new, &args.replace) {
        (Some(n), _) => n.clone(),
        (None, Some(r)) if r.len() == 2 => {
            let to = out.join("new-tree");
            replaced(&old, &to, &r[0], &r[1])?;
            to
        }
        _ => return Err("--preset release needs --new DIR or --replace FROM TO".into()),
    };
    for d in [&old, &new] {
        if !d.is_dir() {
            return Err(format!("{}: not a directory", d.display()));
        }
    }
    let cfg = release::ReleaseConfig {
        old,
        new,
        work: out.join("runs"),
        agent,
        crawler,
        nginx,
    };
    let rt = runtime()?;
    let result = rt.block_on(release::run(&cfg))?;
    let t = release::table(&result);
    print!("{t}");
    std::fs::write(out.join("release.md"), &t).map_err(|e| format!("release.md: {e}"))?;
    let json = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    std::fs::write(out.join("release.json"), json).map_err(|e| format!("release.json: {e}"))
}

fn first_crawl(
    args: &Args,
    out: &Path,
    agent: PathBuf,
    crawler: PathBuf,
    nginx: Option<PathBuf>,
) -> Result<(), String> {
    use webcoop::bench::first_crawl;
    if let Some(site) = &args.site
        && !site.is_dir()
    {
        return Err(format!("--site {}: not a directory", site.display()));
    }
    if !(1..=50).contains(&args.rounds) {
        return Err(format!("--rounds {}: between 1 and 50", args.rounds));
    }
    let cfg = first_crawl::FirstCrawlConfig {
        site: args.site.clone(),
        pages: args.pages,
        seed: args.seed,
        rounds: args.rounds,
        max_body: args.max_body,
        work: out.join("runs"),
        agent,
        crawler,
        nginx,
    };
    let rt = runtime()?;
    let result = rt.block_on(first_crawl::run(&cfg))?;
    let t = first_crawl::table(&result);
    print!("{t}");
    std::fs::write(out.join("first-crawl.md"), &t).map_err(|e| format!("first-crawl.md: {e}"))?;
    let json = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    std::fs::write(out.join("first-crawl.json"), json).map_err(|e| format!("first-crawl.json: {e}"))
}

fn popularity(cfg: &BenchConfig, edits: &[Edit], visits: usize, out: &Path) -> Result<(), String> {
    use webcoop::bench::popularity;
    if !(100..=10_000_000).contains(&visits) {
        return Err(format!("--visits {visits}: between 100 and 10000000"));
    }
    let rt = runtime()?;
    let result = rt.block_on(popularity::run(cfg, edits, visits))?;
    let t = popularity::table(&result);
    print!("{t}");
    std::fs::write(out.join("popularity.md"), &t).map_err(|e| format!("popularity.md: {e}"))?;
    let json = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    std::fs::write(out.join("popularity.json"), json).map_err(|e| format!("popularity.json: {e}"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    // The workspace's one TLS provider; loopback needs none, but reqwest insists on one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("webcoop-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Where nginx is installed, for `--nginx`.
fn nginx_binary() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file());
    Ok(found.ok_or("--nginx: nginx is not installed (apt-get install nginx-light)")?)
}

/// Prints the results and writes them to `out`: results.md (with the web preset's table),
/// results.csv, results.json and the freshness plot when some mode detected a change.
fn write_results(args: &Args, results: &[ModeResult], out: &Path) -> Result<(), String> {
    let mut t = table(results) + "\n" + &agreement(results);
    if args.preset.as_deref() == Some("web") {
        let web = webcoop::bench::web_preset::table(results)?;
        std::fs::write(out.join("web.md"), &web).map_err(|e| format!("web.md: {e}"))?;
        t = t + "\n" + &web;
    }
    print!("{t}");
    std::fs::write(out.join("results.md"), &t).map_err(|e| format!("results.md: {e}"))?;
    std::fs::write(out.join("results.csv"), csv(results))
        .map_err(|e| format!("results.csv: {e}"))?;
    let json = serde_json::to_string_pretty(results).map_err(|e| e.to_string())?;
    std::fs::write(out.join("results.json"), json).map_err(|e| format!("results.json: {e}"))?;
    let plotted =
        webcoop::bench::plot::freshness_against_bytes(results, &out.join("freshness.svg"))?;
    if plotted {
        eprintln!(
            "webcoop-bench: results.md, results.csv, results.json and freshness.svg in {}",
            out.display()
        );
    } else {
        let _ = std::fs::remove_file(out.join("freshness.svg"));
        eprintln!(
            "webcoop-bench: results.md, results.csv and results.json in {}; no plot, as no mode \
             detected a change (more --duration or --change-rate makes some)",
            out.display()
        );
    }
    Ok(())
}

fn run(args: &Args) -> Result<(), String> {
    let modes: Vec<Mode> = match args.preset.as_deref() {
        Some("web") => webcoop::bench::web_preset::modes(),
        _ => args
            .modes
            .iter()
            .map(|m| Mode::parse(m))
            .collect::<Result<_, _>>()?,
    };
    let duration = parse_span(&args.duration)?;
    let cycle = parse_span(&args.cycle)?;
    if !(args.speed.is_finite() && args.speed > 0.0) {
        return Err(format!("--speed {}: must be positive", args.speed));
    }
    if args.pages == 0 {
        return Err("--pages 0: the site needs at least one page".into());
    }
    let (agent, crawler) = binaries()?;
    let nginx = if args.nginx {
        Some(nginx_binary()?)
    } else {
        None
    };
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let out = args
        .out
        .canonicalize()
        .map_err(|e| format!("{}: {e}", args.out.display()))?;
    match args.preset.as_deref() {
        Some("release") => return release(args, &out, agent, crawler, nginx),
        Some("first-crawl") => return first_crawl(args, &out, agent, crawler, nginx),
        Some("castillo-2004") => return castillo(args, &out, agent, crawler, nginx),
        _ => {}
    }
    let paths: Vec<String> = (0..args.pages).map(|i| format!("/p/{i}.html")).collect();
    // A trace says nothing of the site's past: its files are dated when generated.
    let (edits, history): (Vec<Edit>, Vec<f64>) = match &args.trace {
        Some(t) => {
            let text = std::fs::read_to_string(t).map_err(|e| format!("{}: {e}", t.display()))?;
            let edits = changes::parse_trace(&text).map_err(|e| format!("{}: {e}", t.display()))?;
            (edits, Vec::new())
        }
        None => {
            let rate = changes::parse_rate(&args.change_rate)?;
            let rates = changes::page_rates(args.pages, rate, args.seed);
            (
                changes::generate(&paths, &rates, duration, args.seed),
                changes::ages(&rates, args.seed),
            )
        }
    };
    std::fs::write(out.join("trace.txt"), changes::format_trace(&edits))
        .map_err(|e| format!("trace.txt: {e}"))?;
    let cfg = BenchConfig {
        pages: args.pages,
        duration,
        speed: args.speed,
        cycle,
        seed: args.seed,
        work: out.join("runs"),
        agent,
        crawler,
        nginx,
        history,
        access_log: None,
    };
    eprintln!(
        "webcoop-bench: {} pages, {} edits over {} simulated s at {}x ({:.0} s per mode)",
        args.pages,
        edits.len(),
        duration,
        args.speed,
        duration / args.speed
    );
    if !edits.iter().any(|e| e.at < duration) {
        eprintln!(
            "webcoop-bench: warning: no edit falls within the run; only the first crawl is measured"
        );
    }
    if args.preset.as_deref() == Some("popularity") {
        return popularity(&cfg, &edits, args.visits, &out);
    }
    let one = |mode: Mode| -> Result<ModeResult, String> {
        // A runtime per mode: its proxies and servers run on its worker while the mode's
        // own thread waits for processes.
        let rt = runtime()?;
        eprintln!("webcoop-bench: {} ...", mode.name());
        rt.block_on(run_mode(&cfg, mode, &edits))
            .map_err(|e| format!("{}: {e}", mode.name()))
    };
    let results: Vec<ModeResult> = if args.sequential {
        modes.into_iter().map(one).collect::<Result<_, _>>()?
    } else {
        std::thread::scope(|s| {
            let runs: Vec<_> = modes.into_iter().map(|m| s.spawn(move || one(m))).collect();
            runs.into_iter()
                .map(|r| {
                    r.join()
                        .unwrap_or_else(|_| Err("a mode's run panicked".into()))
                })
                .collect::<Result<_, _>>()
        })?
    };
    write_results(args, &results, &out)
}

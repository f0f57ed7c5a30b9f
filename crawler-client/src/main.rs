//! `webcoop-crawl`: the crawler's command line.

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use clap::{Parser, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use webcoop_crawler::CoopMode;
use webcoop_crawler::CrawlArgs;
use webcoop_crawler::Store;
use webcoop_crawler::tools as offline;
use webcoop_crawler::tools::{InspectOptions, inspect};
use webcoop_crawler::{CoopConfig, SiteCoop};

/// Writes to standard output; a reader that went away (`status --json | head`) ends the
/// command quietly, as Unix tools end on a closed pipe, instead of a panic.
fn emit(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("webcoop-crawl: standard output: {e}");
        std::process::exit(1);
    }
}

/// `print!` through [`emit`].
macro_rules! out {
    ($($t:tt)*) => { emit(&format!($($t)*)) };
}

/// `println!` through [`emit`].
macro_rules! outln {
    () => { emit("\n") };
    ($($t:tt)*) => { emit(&format!("{}\n", format_args!($($t)*))) };
}

/// mimalloc, without transparent huge pages: crawling 3,000 hosts politely, glibc's malloc took
/// a sixth of the crawler's CPU searching and consolidating its bins (docs/ARCHITECTURE.md,
/// "The web's shape"); with huge pages mimalloc's peak RSS grew by a third.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// An incremental crawler that uses a site's cooperation signals (robots.rdf, sitemaps, the
/// changes feed, deltas, WebSub push) and polls everywhere else.
#[derive(Parser)]
#[command(name = "webcoop-crawl", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Crawl from seeds, politely, into a crawl directory (state, WARC files, crawl.log);
    /// run again on the same directory to resume.
    Crawl(Box<CrawlArgs>),
    /// Print the figures of a crawl directory, while its crawl runs or after.
    Status {
        /// The crawl directory.
        #[arg(long, value_name = "DIR", required_unless_present = "frontier")]
        out: Option<PathBuf>,
        /// A fleet's shared frontier (with --crawl): show its processes and queue.
        #[arg(long, value_name = "URL", requires = "crawl", conflicts_with = "out")]
        frontier: Option<String>,
        /// The fleet's crawl.
        #[arg(long, value_name = "NAME", requires = "frontier")]
        crawl: Option<String>,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Serve the console of a crawl that is not running (its figures, hosts and fetches;
    /// blocks, delays and seeds set here apply when it next starts). A running crawl serves its
    /// own with `crawl --console ADDR`.
    Console {
        /// The crawl directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Where to listen (loopback unless a token guards it).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8484")]
        listen: std::net::SocketAddr,
        /// File whose first line is the token (required off loopback).
        #[arg(long, value_name = "FILE")]
        console_token_file: Option<PathBuf>,
        /// The token itself.
        #[arg(long, value_name = "TOKEN")]
        console_token: Option<String>,
    },
    /// Write the CDXJ index of a crawl's WARC files (the lines pywb's cdxj-indexer writes for
    /// them), to standard output or --output.
    Index {
        /// The crawl directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Write here instead of standard output.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Sort the lines (as a WACZ or pywb's indexes keep them) instead of file order.
        #[arg(long)]
        sort: bool,
    },
    /// The crawler's signing keys (Web Bot Auth): make, rotate and retire them, and write the
    /// key directory and Signature Agent Card a web server publishes for them.
    #[command(subcommand)]
    Keys(webcoop_crawler::KeysCommand),
    /// Pack a crawl into a WACZ (WARC files, CDXJ index, pages list, datapackage.json with
    /// digests) that ReplayWeb.page opens and `wacz validate` accepts.
    Export {
        /// The crawl directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The WACZ file to write.
        #[arg(long, value_name = "FILE")]
        wacz: PathBuf,
    },
    /// List every URL of a crawl with the copy held: `ETAG URL` for a copy (its SHA-256
    /// entity tag), `gone URL` for a page the site deleted, `missing URL (why)` otherwise;
    /// with --url, write that page's content held to standard output.
    Copies {
        /// The crawl directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Write the content held of this URL instead.
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// Read a robots.rdf, sitemap (plain or gzip), changes feed or dcz delta and report what is
    /// in it, or exactly what is wrong with it (exit status 1).
    Inspect {
        /// The document; `-` reads standard input.
        file: PathBuf,
        /// Refuse a sitemap with any bad entry instead of reporting and skipping it.
        #[arg(long)]
        strict: bool,
        /// How many entries to list.
        #[arg(long, default_value_t = 10)]
        list: usize,
        /// For a dcz delta: the version it was made against, to decode and check it.
        #[arg(long)]
        base: Option<PathBuf>,
    },
    /// Exact PageRank of a link graph by power iteration: prints `NODE<TAB>SCORE` for every
    /// node, scores summing to 1.
    Rank(offline::RankArgs),
    /// Replay OPIC on a link graph and print its error against exact PageRank.
    OpicSim(offline::OpicSimArgs),
    /// Crawl a link graph in the order of each strategy and print the PageRank captured
    /// against the fraction of pages fetched.
    OrderSim(offline::OrderSimArgs),
    /// Simulate revisit policies under a visit budget on pages that change as Poisson
    /// processes; print freshness and age per policy and the omniscient optimum.
    RefreshSim(offline::RefreshSimArgs),
}

fn read_input(path: &PathBuf) -> std::io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path)
    }
}

/// Sets `stop` at the first Ctrl-C or SIGTERM; exits at once at the second (the state is
/// consistent at any moment, so nothing is lost but the requests under way).
fn watch_signals(stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async move {
            let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            else {
                return;
            };
            loop {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
                if stop.swap(true, Ordering::SeqCst) {
                    eprintln!("webcoop-crawl: stopped at once; run again to resume");
                    std::process::exit(130);
                }
                eprintln!(
                    "webcoop-crawl: stopping after the requests under way (again to stop at once)"
                );
            }
        });
    });
}

fn crawl(args: &CrawlArgs) -> ExitCode {
    match webcoop_protocol::clock::from_options(args.clock_speed, args.clock_anchor) {
        Ok(clock) => {
            webcoop_crawler::install_clock(clock);
        }
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            return ExitCode::from(2);
        }
    }
    let settings = match webcoop_crawler::join(args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            return ExitCode::from(2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    watch_signals(stop.clone());
    match webcoop_crawler::run(settings, stop.clone()) {
        Ok(report) => {
            out!(
                "{}",
                webcoop_crawler::summary(&report.figures, &report.skipped, Some(&report.run))
            );
            if stop.load(Ordering::SeqCst) {
                ExitCode::from(130)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `index --out DIR`: the CDXJ index of the crawl's WARC files.
fn index(out: &std::path::Path, output: Option<&std::path::Path>, sort: bool) -> ExitCode {
    use webcoop_crawler::archives::cdxj;
    let written = match output {
        None => {
            let stdout = std::io::stdout();
            let mut w = std::io::BufWriter::new(stdout.lock());
            cdxj::write_index(out, sort, &mut w).and_then(|n| {
                std::io::Write::flush(&mut w)?;
                Ok(n)
            })
        }
        Some(path) => {
            let tmp = path.with_extension("cdxj.tmp");
            std::fs::File::create(&tmp)
                .and_then(|f| {
                    let mut w = std::io::BufWriter::new(f);
                    let n = cdxj::write_index(out, sort, &mut w)?;
                    std::io::Write::flush(&mut w)?;
                    Ok(n)
                })
                .and_then(|n| std::fs::rename(&tmp, path).map(|()| n))
        }
    };
    match written {
        Ok(n) => {
            eprintln!("webcoop-crawl: {n} captures indexed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("webcoop-crawl: index of {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// `export --wacz FILE --out DIR`.
fn export(out: &std::path::Path, to: &std::path::Path) -> ExitCode {
    let software = concat!("webcoop-crawl ", env!("CARGO_PKG_VERSION"));
    match webcoop_crawler::archives::wacz::export(out, to, software) {
        Ok(e) => {
            eprintln!(
                "webcoop-crawl: {}: {} WARC files, {} captures, {} pages, {} bytes",
                to.display(),
                e.warcs,
                e.captures,
                e.pages,
                e.bytes
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("webcoop-crawl: export of {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// `console --out DIR`: the console of a crawl that is not running, until Ctrl-C.
fn console(
    out: &std::path::Path,
    listen: std::net::SocketAddr,
    token_file: Option<PathBuf>,
    token: Option<String>,
) -> ExitCode {
    use webcoop_crawler::{ConsoleSettings, read_token_file};
    if !out.join("crawl.sqlite").exists() {
        eprintln!(
            "webcoop-crawl: {} holds no crawl (no crawl.sqlite)",
            out.display()
        );
        return ExitCode::from(2);
    }
    let token = match (token, token_file) {
        (Some(t), _) => Some(t.trim().to_string()),
        (None, Some(f)) => match read_token_file(&f) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("webcoop-crawl: {e}");
                return ExitCode::from(2);
            }
        },
        (None, None) => None,
    };
    if webcoop_crawler::is_running(out) {
        eprintln!(
            "webcoop-crawl: note: a crawl is running in {}; its own --console shows it live",
            out.display()
        );
    }
    let settings = ConsoleSettings {
        addr: listen,
        token,
    };
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let ready = |addr| eprintln!("webcoop-crawl: console at http://{addr}/ (Ctrl-C to stop)");
    match webcoop_crawler::run_console(&settings, out, ready, stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            ExitCode::from(2)
        }
    }
}

fn fleet_status(frontier: &str, crawl: &str, json: bool) -> ExitCode {
    match webcoop_crawler::fleet::status(frontier, crawl) {
        Ok(status) => {
            if json {
                outln!("{}", serde_json::to_string(&status).unwrap_or_default());
            } else {
                out!("{}", status.text());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            ExitCode::FAILURE
        }
    }
}

fn status(out: &std::path::Path, json: bool) -> ExitCode {
    if !out.join("crawl.sqlite").exists() {
        eprintln!(
            "webcoop-crawl: {} holds no crawl (no crawl.sqlite)",
            out.display()
        );
        return ExitCode::FAILURE;
    }
    let running = webcoop_crawler::is_running(out);
    let read = Store::open_read_only(out).and_then(|s| {
        let config: Option<CoopConfig> = s
            .meta(webcoop_crawler::COOP_CONFIG_META)?
            .and_then(|j| serde_json::from_str(&j).ok());
        Ok((
            s.figures()?,
            s.skipped_hosts()?,
            s.coop_sites()?,
            config.unwrap_or_default(),
        ))
    });
    let (figures, skipped, coop, config) = match read {
        Ok(r) => r,
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            return ExitCode::FAILURE;
        }
    };
    let status = Status {
        out,
        running,
        figures,
        skipped,
        coop,
        config,
    };
    if json {
        outln!("{}", status.json());
    } else {
        status.print();
    }
    ExitCode::SUCCESS
}

/// What `status` reports of a crawl directory.
struct Status<'a> {
    out: &'a std::path::Path,
    running: bool,
    figures: webcoop_crawler::Figures,
    skipped: Vec<(String, String)>,
    coop: Vec<(webcoop_crawler::HostId, String, String)>,
    config: CoopConfig,
}

impl Status<'_> {
    fn json(&self) -> serde_json::Value {
        let (figures, config) = (self.figures, self.config);
        let mut v = serde_json::to_value(figures).unwrap_or_default();
        v["running"] = self.running.into();
        v["fetched"] = figures.fetched().into();
        v["errors"] = figures.errors().into();
        v["skipped_hosts"] = self
            .skipped
            .iter()
            .map(|(o, why)| serde_json::json!({"origin": o, "reason": why}))
            .collect();
        v["cooperation"] = self
            .coop
            .iter()
            .filter_map(|(_, origin, json)| {
                let site: SiteCoop = serde_json::from_str(json).ok()?;
                let mut j = serde_json::to_value(&site).ok()?;
                j["origin"] = origin.clone().into();
                j["level"] = site
                    .level(config.mode, config.failures_to_degrade)
                    .as_str()
                    .into();
                j["offered"] = site.level(CoopMode::Push, u32::MAX).as_str().into();
                j["trust_score"] = site.trust.score().into();
                j["believed"] = site.trust.believed(config.trust_min).into();
                Some(j)
            })
            .collect();
        v
    }

    fn print(&self) {
        let config = self.config;
        outln!(
            "{}: {}",
            self.out.display(),
            if self.running {
                "crawl running"
            } else {
                "no crawl running"
            }
        );
        out!(
            "{}",
            webcoop_crawler::summary(&self.figures, &self.skipped, None)
        );
        if !self.coop.is_empty() {
            outln!("cooperation:");
        }
        for (_, origin, json) in &self.coop {
            let Ok(site) = serde_json::from_str::<SiteCoop>(json) else {
                outln!("  {origin}: state unreadable");
                continue;
            };
            outln!(
                "  {origin}: {} (offers {}; trust {:.2}{}), {}",
                site.level(config.mode, config.failures_to_degrade).as_str(),
                site.level(CoopMode::Push, u32::MAX).as_str(),
                site.trust.score(),
                if site.trust.believed(config.trust_min) {
                    ""
                } else {
                    ", claims ignored"
                },
                site.stats
            );
        }
    }
}

fn copies(out: &std::path::Path, url: Option<&str>) -> ExitCode {
    use std::io::Write;
    use webcoop_crawler::archives::copies::{self, CopyState};
    if let Some(url) = url {
        return match copies::content(out, url) {
            Ok(Some(body)) => {
                let _ = std::io::stdout().write_all(&body);
                ExitCode::SUCCESS
            }
            Ok(None) => {
                eprintln!("webcoop-crawl: no copy of {url} is held");
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("webcoop-crawl: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match copies::list(out) {
        Ok(list) => {
            let mut stdout = std::io::stdout().lock();
            for c in list {
                let _ = match c.held {
                    CopyState::Copy { validator, .. } => writeln!(stdout, "{validator} {}", c.url),
                    CopyState::Gone => writeln!(stdout, "gone {}", c.url),
                    CopyState::Missing(why) => writeln!(stdout, "missing {} ({why})", c.url),
                };
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            ExitCode::FAILURE
        }
    }
}

fn finish(result: Result<(), offline::OfflineError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("webcoop-crawl: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Gives glibc's malloc a fixed trim threshold, unless the environment already sets one. By
/// default a freed large body raises the threshold under which malloc serves from its heaps,
/// so later bodies stayed in per-thread arenas that kept what they freed: 49 MB of an 80 MB
/// crawl. With a fixed threshold, bodies over 128 KiB get their own mappings, given back when
/// freed (docs/ARCHITECTURE.md). Fewer arenas saved a few MB more but cost CPU in lock waits.
///
/// mimalloc 3 keeps what is freed for a second (`purge_delay`, 1000 ms) before giving it back:
/// on one host at full speed, a second of pages' bodies and buffers. Purged after a millisecond
/// instead, the Rust documentation's crawl peaked at 55 MiB against 98-123, for the same CPU
/// (docs/ARCHITECTURE.md, "Memory by the page"); `MIMALLOC_PURGE_DELAY` still sets it.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_TRIM_THRESHOLD_").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; it runs before any other thread.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, 16 << 20);
        }
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mi_option_set only sets an option the allocator reads when it next purges.
        unsafe {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
        }
    }
}

/// `mi_option_purge_delay` in mimalloc 3's `mimalloc.h` (the sys crate names no constant
/// for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory is kept before it is given back, milliseconds.
const PURGE_DELAY_MS: std::ffi::c_long = 1;

/// The command line, every option also readable from `WEBCOOP_CRAWL_<OPTION>` (the rule of both
/// binaries, `webcoop_daemon::command_line`), each setting's help ending with its default.
fn command() -> clap::Command {
    let cli = webcoop_crawler::help_with_defaults(<Cli as clap::CommandFactory>::command());
    webcoop_daemon::command_line::with_environment(cli, "WEBCOOP_CRAWL_", &[])
}

fn main() -> ExitCode {
    tune_malloc();
    if let Some(code) = webcoop_daemon::generated_docs::generate_if_asked(command()) {
        return code;
    }
    // The crawl directory holds subscription secrets: what the crawler writes is its user's
    // alone, whatever umask it was started with.
    webcoop_daemon::private::private_umask();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match cli.command {
        Command::Crawl(args) => crawl(&args),
        Command::Index { out, output, sort } => index(&out, output.as_deref(), sort),
        Command::Export { out, wacz } => export(&out, &wacz),
        Command::Keys(command) => match webcoop_crawler::run_keys(&command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("webcoop-crawl keys: {e}");
                ExitCode::from(2)
            }
        },
        Command::Console {
            out,
            listen,
            console_token_file,
            console_token,
        } => console(&out, listen, console_token_file, console_token),
        Command::Status {
            out,
            frontier,
            crawl,
            json,
        } => match (frontier, crawl, out) {
            (Some(f), Some(c), _) => fleet_status(&f, &c, json),
            (_, _, Some(out)) => status(&out, json),
            _ => {
                eprintln!("webcoop-crawl: status needs --out DIR, or --frontier URL --crawl NAME");
                ExitCode::from(2)
            }
        },
        Command::Copies { out, url } => copies(&out, url.as_deref()),
        Command::Rank(a) => finish(offline::rank(&a)),
        Command::OpicSim(a) => finish(offline::opic_sim(&a)),
        Command::OrderSim(a) => finish(offline::order_sim(&a)),
        Command::RefreshSim(a) => finish(offline::refresh_sim(&a)),
        Command::Inspect {
            file,
            strict,
            list,
            base,
        } => {
            let bytes = match read_input(&file) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("webcoop-crawl: cannot read {}: {e}", file.display());
                    return ExitCode::FAILURE;
                }
            };
            let base = match base.as_ref().map(std::fs::read).transpose() {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("webcoop-crawl: cannot read the base version: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match inspect(&bytes, &InspectOptions { strict, list, base }) {
                Ok(report) => {
                    out!("{report}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("webcoop-crawl: {}: {e}", file.display());
                    ExitCode::FAILURE
                }
            }
        }
    }
}

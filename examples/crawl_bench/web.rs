//! The crawler at the web's shape (`--web 1`): thousands of hosts of a hundred pages, each on its
//! own loopback address behind a name the bench's DNS server answers, some slow and some failing
//! (`webcoop_testkit::webshape`: silent, resetting, refusing, nameless, 503 with `Retry-After`,
//! robots.txt failing, pages cut short), crawled at the crawler's default politeness with the number
//! of hosts in flight it chooses. Beside it, in the same run, the same crawler on one host with
//! politeness off (what many hosts cost beyond the pages), and optionally a `kill -9` and
//! resume in the middle and a fleet of two on a Redis Cluster: leasing hosts from a shared
//! queue (`--fleet 1`), splitting them by owner (`--fleet shards`), or both in turn
//! (`--fleet both`).
//!
//! `cargo run --release --example crawl_bench -- --web 1 [--hosts 10000] [--pages 100]
//!  [--slow-ms 100-2000] [--slow-share 0.02] [--failing-share 0.02] [--one-host-pages N[,N...]]
//!  [--one-host-after 0] [--kill-at SECS] [--fleet 1|shards|both]`

use super::{arg, reap};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::webshape::{Figures, ShapeSpec, WebShape};

/// What was seen of a crawler process from outside while it ran.
#[derive(Debug, Default, Clone)]
struct Watched {
    wall: Duration,
    cpu: Duration,
    peak_rss_kib: i64,
    peak_fds: usize,
    peak_sockets: usize,
    /// (URLs known to the crawl, resident KiB), once a second.
    rss_by_seen: Vec<(u64, i64)>,
    /// The console's host table, milliseconds per answer.
    console_ms: Vec<f64>,
    /// Bytes the process handed to write calls (`wchar`: the archive, the state's log and
    /// database, the requests), as last sampled.
    wrote: u64,
    /// System CPU time, of `cpu`.
    sys: Duration,
    /// Context switches, voluntary and involuntary.
    switches: (i64, i64),
    code: i32,
    /// When the first part was killed, if it was.
    killed: Option<Instant>,
}

fn status_kib(pid: u32, field: &str) -> i64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with(field))?.to_string();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Bytes a process has handed to write calls (`wchar` of `/proc/PID/io`).
fn wchar(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("wchar:"))?
        .trim()
        .parse()
        .ok()
}

/// Open descriptors of a process, and how many of them are sockets.
fn fds(pid: u32) -> (usize, usize) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return (0, 0);
    };
    let (mut all, mut sockets) = (0, 0);
    for e in dir.flatten() {
        all += 1;
        if std::fs::read_link(e.path()).is_ok_and(|t| t.to_string_lossy().starts_with("socket:")) {
            sockets += 1;
        }
    }
    (all, sockets)
}

fn overview_seen(console: SocketAddr) -> Option<u64> {
    let r = webcoop::servers::http_get(console, "/api/overview", &[]).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&r.body).ok()?;
    v["seen"].as_u64()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Runs a crawl from `make` to its end, watching it; with `kill_at`, kills it with SIGKILL
/// then and runs it again to its end (the figures add up both).
// The child is reaped by wait4 (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn watched(
    make: &dyn Fn() -> Command,
    console: Option<SocketAddr>,
    kill_at: Option<Duration>,
) -> Watched {
    let start = Instant::now();
    let seen = Arc::new(Mutex::new(Watched::default()));
    let mut total = Watched::default();
    let log = tempfile::tempfile().expect("a file for the crawler's log");
    for part in 0..2 {
        let mut cmd = make();
        let child = cmd
            .stdout(Stdio::null())
            .stderr(log.try_clone().expect("the crawler's log"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
        let pid = child.id();
        let done = Arc::new(AtomicBool::new(false));
        let (d, s) = (done.clone(), seen.clone());
        let sampler = std::thread::spawn(move || {
            let mut tick = 0u64;
            while !d.load(Ordering::Relaxed) {
                let rss = status_kib(pid, "VmHWM:");
                let wrote = wchar(pid);
                let (all, sockets) = fds(pid);
                // As the console's page asks: the overview and the host table every 2 s.
                let watch = console.filter(|_| tick.is_multiple_of(4));
                let known = watch.and_then(overview_seen);
                let hosts_ms = watch.and_then(|c| {
                    let t = Instant::now();
                    let r = webcoop::servers::http_get(c, "/api/hosts", &[]).ok()?;
                    (r.status == 200).then(|| t.elapsed().as_secs_f64() * 1000.0)
                });
                if let Ok(mut w) = s.lock() {
                    w.peak_rss_kib = w.peak_rss_kib.max(rss);
                    w.peak_fds = w.peak_fds.max(all);
                    w.peak_sockets = w.peak_sockets.max(sockets);
                    if let Some(k) = known {
                        w.rss_by_seen.push((k, status_kib(pid, "VmRSS:")));
                    }
                    w.console_ms.extend(hosts_ms);
                    // Per part: a resumed process counts from zero.
                    if let Some(b) = wrote {
                        w.wrote = w.wrote.max(b);
                    }
                }
                tick += 1;
                // The peak and the bytes written are read every 20 ms between the samples: a
                // crawl shorter than one (the one host of 1,000 pages takes half a second) was
                // reported at 0 MiB and 0 bytes.
                for _ in 0..25 {
                    if d.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    let (rss, wrote) = (status_kib(pid, "VmHWM:"), wchar(pid));
                    if let Ok(mut w) = s.lock() {
                        w.peak_rss_kib = w.peak_rss_kib.max(rss);
                        w.wrote = w.wrote.max(wrote.unwrap_or(0));
                    }
                }
            }
        });
        let killer = kill_at.filter(|_| part == 0).map(|at| {
            let d = done.clone();
            std::thread::spawn(move || {
                let until = Instant::now() + at;
                while Instant::now() < until && !d.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                // SAFETY: kill(2) on our own child's pid; at worst it has exited already.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                Instant::now()
            })
        });
        let reaped = reap(pid as libc::pid_t);
        let code = reaped.code;
        done.store(true, Ordering::Relaxed);
        let _ = sampler.join();
        if let Some(k) = killer {
            total.killed = k.join().ok();
        }
        total.cpu += reaped.cpu;
        total.sys += reaped.sys;
        total.switches.0 += reaped.switches.0;
        total.switches.1 += reaped.switches.1;
        total.code = code;
        if let Ok(mut w) = seen.lock() {
            total.wrote += std::mem::take(&mut w.wrote);
        }
        if kill_at.is_none() || part == 1 {
            break;
        }
        eprintln!(
            "killed with SIGKILL after {:.1} s (exit {code}); resuming",
            start.elapsed().as_secs_f64()
        );
    }
    // What a fleet process says of its own costs at its end (host parts per page), and what a
    // resumed crawl took back from its archive (what a kill did not cost again).
    let mut said = String::new();
    let mut log = log;
    let _ = std::io::Seek::seek(&mut log, std::io::SeekFrom::Start(0))
        .and_then(|_| std::io::Read::read_to_string(&mut log, &mut said));
    for line in said
        .lines()
        .filter(|l| l.contains("host parts") || l.contains("replayed"))
    {
        eprintln!("{line}");
    }
    let s = seen.lock().map(|s| s.clone()).unwrap_or_default();
    Watched {
        wall: start.elapsed(),
        cpu: total.cpu,
        sys: total.sys,
        switches: total.switches,
        code: total.code,
        wrote: total.wrote,
        killed: total.killed,
        ..s
    }
}

/// The crawler's command for a web: default politeness unless `extra` says otherwise.
fn crawl_command(
    bin: &Path,
    web: &WebShape,
    seeds: usize,
    dir: &Path,
    console: Option<SocketAddr>,
    extra: &[&str],
) -> Command {
    std::fs::create_dir_all(dir).expect("crawl directory");
    let seeds_file = dir.join("seeds.txt");
    let list: Vec<String> = (0..seeds).map(|i| web.root(i)).collect();
    std::fs::write(&seeds_file, list.join("\n") + "\n").expect("seeds");
    let cfg = dir.join("crawl.toml");
    std::fs::write(&cfg, format!("nameserver = \"{}\"\n", web.dns)).expect("config");
    // CRAWL_BENCH_WRAP="heaptrack -o FILE": the crawler run under a profiler.
    let wrap = std::env::var("CRAWL_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut cmd = match words.next() {
        Some(first) => {
            let mut c = Command::new(first);
            c.args(words).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    // A dead host is given up after three failures (30 s + 60 s parked) rather than ten
    // (four hours of doubling parks), so that the crawl ends; politeness is the default.
    cmd.args(["crawl", "--allow-net", "127.0.0.0/8", "--progress", "quiet"])
        .args(["--host-give-up", "3"])
        // A URL keeps the depth it was first found at; on a web of ten thousand hosts with
        // links across them that is often deeper than its own site's tree.
        .args(["--max-depth", "60"])
        .args(["--scope", "any", "--seeds"])
        .arg(&seeds_file)
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(dir.join("out"))
        .args(extra);
    if let Some(c) = console {
        cmd.arg("--console").arg(c.to_string());
    }
    cmd
}

fn free_port() -> SocketAddr {
    ([127, 0, 0, 1], webcoop_testkit::free_port()).into()
}

fn print_run(name: &str, w: &Watched, f: &Figures, floor: Duration) {
    let pages = f.pages_served.max(1) as f64;
    let secs = w.wall.as_secs_f64();
    println!("\n### {name}\n");
    println!("| figure | value |\n|---|---:|");
    println!("| pages fetched (200) | {} |", f.pages_served);
    println!(
        "| pages served twice / missed | {} / {} |",
        f.served_twice, f.missed
    );
    println!("| requests, all hosts | {} |", f.requests);
    if floor.is_zero() {
        println!("| wall | {secs:.1} s |");
    } else {
        println!(
            "| wall | {secs:.1} s ({:.2}x the politeness floor of {:.1} s) |",
            secs / floor.as_secs_f64(),
            floor.as_secs_f64()
        );
    }
    println!("| pages per second | {:.0} |", pages / secs);
    println!(
        "| pages per CPU-second | {:.0} ({:.1} µs CPU per page) |",
        pages / w.cpu.as_secs_f64().max(1e-9),
        w.cpu.as_secs_f64() * 1e6 / pages
    );
    println!(
        "| of it in the kernel; context switches per page (waits, preemptions) | {:.1} µs; {:.2} ({:.2}, {:.2}) |",
        w.sys.as_secs_f64() * 1e6 / pages,
        (w.switches.0 + w.switches.1) as f64 / pages,
        w.switches.0 as f64 / pages,
        w.switches.1 as f64 / pages
    );
    println!(
        "| peak RSS | {:.0} MiB ({:.2} KiB per page fetched) |",
        w.peak_rss_kib as f64 / 1024.0,
        w.peak_rss_kib as f64 / pages
    );
    if let (Some(first), Some(last)) = (w.rss_by_seen.first(), w.rss_by_seen.last())
        && last.0 > first.0
    {
        println!(
            "| RSS growth per URL known | {:.0} B ({} to {} URLs) |",
            (last.1 - first.1) as f64 * 1024.0 / (last.0 - first.0) as f64,
            first.0,
            last.0
        );
    }
    println!(
        "| bytes written (write calls, sampled) | {:.1} MB ({:.2} KB per page) |",
        w.wrote as f64 / 1e6,
        w.wrote as f64 / 1e3 / pages
    );
    println!(
        "| peak descriptors (sockets) | {} ({}) |",
        w.peak_fds, w.peak_sockets
    );
    println!(
        "| connections accepted, per host reached | {} ({:.1}) |",
        f.connections,
        f.connections as f64 / f.hosts_reached.max(1) as f64
    );
    println!(
        "| name lookups, per host looked up (most) | {} ({:.2}, {}) |",
        f.lookups,
        f.lookups as f64 / f.hosts_looked_up.max(1) as f64,
        f.most_lookups
    );
    if let Some((gap, required)) = f.closest_gap {
        println!(
            "| closest two requests to a host | {:.3} s after the answer, {:.3} s required ({:.3}x) |",
            gap.as_secs_f64(),
            required.as_secs_f64(),
            gap.as_secs_f64() / required.as_secs_f64().max(1e-9)
        );
    }
    println!("| overlapping requests to a host | {} |", f.overlaps);
    println!("| requests robots.txt forbids | {} |", f.forbidden);
    // Only where politeness holds: with it off, a host's answers overlap.
    if let Some(e) = f.ended_last.filter(|_| floor > Duration::ZERO) {
        println!(
            "| the host answered last | first request at {:.1} s, last answer at {:.1} s; its answers and delays {:.1} s of that; longest wait past its delay {:.1} s (ended at {:.1} s), {} waits over a second |",
            e.first.as_secs_f64(),
            e.last.as_secs_f64(),
            e.own.as_secs_f64(),
            e.longest_wait.0.as_secs_f64(),
            e.longest_wait.1.as_secs_f64(),
            e.waits_over_second
        );
        println!(
            "| healthy hosts once kept waiting over 10 s past their delay | {} |",
            f.hosts_kept_waiting
        );
    }
    if !f.host_starts.is_empty() {
        let at = |q: f64| {
            let i = ((f.host_starts.len() - 1) as f64 * q).round() as usize;
            f.host_starts[i].as_secs_f64()
        };
        println!(
            "| healthy hosts' first requests (the web's clock) | p10 {:.1} s, median {:.1} s, p90 {:.1} s, last {:.1} s, over {} hosts |",
            at(0.1),
            at(0.5),
            at(0.9),
            at(1.0),
            f.host_starts.len()
        );
    }
    println!(
        "| the most requests one failing host received | {} |",
        f.most_asked_failing
    );
    if let Some(e) = f.ended_last {
        println!(
            "| last healthy answer (the web's clock); the crawl's wall | {:.1} s; {:.1} s |",
            e.last.as_secs_f64(),
            w.wall.as_secs_f64()
        );
    }
    if !w.console_ms.is_empty() {
        let worst = w.console_ms.iter().copied().fold(0.0, f64::max);
        println!(
            "| console host table | median {:.1} ms, worst {worst:.1} ms over {} reads |",
            median(&w.console_ms),
            w.console_ms.len()
        );
    }
    println!("| exit code | {} |", w.code);
}

/// One host of `pages` pages crawled with politeness off and 4 connections: what the pages
/// cost without the hosts around them.
fn one_host(bin: &Path, spec: &ShapeSpec, tmp: &Path, pages: usize) -> (Watched, Figures) {
    let one = WebShape::start(ShapeSpec {
        hosts: 1,
        pages,
        slow_share: 0.0,
        failing_share: 0.0,
        seeds: 1,
        politeness: (Duration::ZERO, 0.0),
        ..spec.clone()
    });
    let dir = tmp.join("one-host");
    // Watched as the web's crawl is, so that the two differ only in their hosts.
    let console1 = free_port();
    let w1 = watched(
        &|| {
            crawl_command(
                bin,
                &one,
                1,
                &dir,
                Some(console1),
                &[
                    "--delay-min",
                    "0",
                    "--delay-factor",
                    "0",
                    "--per-host-connections",
                    "4",
                ],
            )
        },
        Some(console1),
        None,
    );
    let f1 = one.figures();
    drop(one);
    let _ = std::fs::remove_dir_all(&dir);
    (w1, f1)
}

/// `--web 1`: the web-shaped benchmark.
pub(super) fn run(args: &HashMap<String, String>) {
    let num = |name: &str, default: &str| -> f64 {
        arg(args, name, default)
            .parse()
            .unwrap_or_else(|_| panic!("--{name} takes a number"))
    };
    let (lo, hi) = arg(args, "slow-ms", "100-2000")
        .split_once('-')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .expect("--slow-ms LO-HI");
    let spec = ShapeSpec {
        hosts: num("hosts", "10000") as usize,
        pages: num("pages", "100") as usize,
        page_bytes: num("page-bytes", "2000") as usize,
        slow_share: num("slow-share", "0.02"),
        slow_ms: (lo, hi),
        failing_share: num("failing-share", "0.02"),
        seeds: num("seeds", "20") as usize,
        ..ShapeSpec::default()
    };
    // `--one-host-pages 20000,1000000`: one host at each size. By default a tenth of the
    // web's pages, crawled again after the web (this machine's drift), and all of them: the
    // same pages on one host are what the hosts cost beyond the pages, as the store's cost
    // grows with the pages it holds.
    let all = spec.hosts * spec.pages;
    let one_host_sizes: Vec<usize> = arg(args, "one-host-pages", &format!("{},{all}", all / 10))
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .unwrap_or_else(|_| panic!("--one-host-pages takes numbers"))
        })
        .collect();
    let kill_at = args
        .get("kill-at")
        .and_then(|s| s.parse::<f64>().ok())
        .map(Duration::from_secs_f64);
    let bin = super::crawler_bin();
    let tmp = tempfile::tempdir().expect("temporary directory");

    // One host, politeness off: the cost of the pages themselves.
    let ones: Vec<(usize, Watched, Figures)> = one_host_sizes
        .iter()
        .map(|&pages| (pages, one_host(&bin, &spec, tmp.path(), pages)))
        .map(|(pages, (w1, f1))| (pages, w1, f1))
        .collect();

    let web = WebShape::start(spec.clone());
    let floor = web.nominal_floor();
    eprintln!(
        "web: {} hosts x {} pages ({} crawlable), DNS on {}, port {}, floor {:.1} s",
        spec.hosts,
        spec.pages,
        web.crawlable(),
        web.dns,
        web.port(),
        floor.as_secs_f64()
    );
    let dir = tmp.path().join("web");
    let console = free_port();
    // `--crawl-args "..."`: more of the crawler's options for the web's crawl.
    let more = arg(args, "crawl-args", "");
    let more: Vec<&str> = more.split_whitespace().collect();
    let w = watched(
        &|| crawl_command(&bin, &web, spec.seeds, &dir, Some(console), &more),
        Some(console),
        kill_at,
    );
    let f = web.figures();
    if f.missed > 0 {
        eprintln!("hosts with pages missed: {:?}", web.missing_hosts(10));
    }
    if let Some(kill) = w.killed {
        let t = web.twice_around(kill);
        eprintln!(
            "pages served twice, by their first answer: {} under way at the kill, answered \
             within 50 ms before it {}, 50 ms-1 s {}, longer {}; asked after it {}",
            t.under_way,
            t.answered_50ms_before,
            t.answered_1s_before,
            t.answered_longer_before,
            t.asked_after
        );
        for (url, from_kill) in t.examples {
            eprintln!("  {url}: first answered {from_kill:+.3} s from the kill");
        }
    }
    drop(web);
    // The reference crawled again after the web (`--one-host-after 0` skips it): this
    // machine's CPU times drift by a quarter over a run's minutes, and the mean of the two
    // sides of the web's crawl cancels a drift that either side alone would take for the
    // hosts' cost.
    let after = (arg(args, "one-host-after", "1") != "0")
        .then(|| one_host_sizes.first().copied())
        .flatten()
        .map(|pages| (pages, one_host(&bin, &spec, tmp.path(), pages)));
    if std::env::var_os("CRAWL_BENCH_KEEP").is_some() {
        eprintln!("the crawl is kept in {}", dir.display());
        std::mem::forget(tmp);
        return;
    }
    let _ = std::fs::remove_dir_all(&dir);

    println!(
        "\n{} hosts x {} pages (~{} B), {}% slow ({lo}-{hi} ms), {}% failing, default politeness{}",
        spec.hosts,
        spec.pages,
        spec.page_bytes,
        spec.slow_share * 100.0,
        spec.failing_share * 100.0,
        if kill_at.is_some() {
            ", killed with SIGKILL and resumed"
        } else {
            ""
        }
    );
    for (pages, w1, f1) in &ones {
        print_run(
            &format!("one host of {pages} pages, politeness off"),
            w1,
            f1,
            Duration::ZERO,
        );
    }
    print_run("the web, one process", &w, &f, floor);
    if let Some((pages, (w1, f1))) = &after {
        print_run(
            &format!("one host of {pages} pages, politeness off, after the web"),
            w1,
            f1,
            Duration::ZERO,
        );
    }
    let per_page = |w: &Watched, f: &Figures| w.cpu.as_secs_f64() / f.pages_served.max(1) as f64;
    println!();
    for (pages, w1, f1) in &ones {
        println!(
            "CPU per page, the web against one host of {pages} pages: {:.2}x",
            per_page(&w, &f) / per_page(w1, f1)
        );
    }
    if let (Some((pages, (w1, f1))), Some((_, w0, f0))) = (&after, ones.first()) {
        let (before, after) = (per_page(w0, f0), per_page(w1, f1));
        println!(
            "CPU per page, the web against one host of {pages} pages after it: {:.2}x; against the mean of before and after ({:.1} and {:.1} µs): {:.2}x",
            per_page(&w, &f) / after,
            before * 1e6,
            after * 1e6,
            per_page(&w, &f) / ((before + after) / 2.0)
        );
    }
    let fleet = arg(args, "fleet", "0");
    for (mode, sharded) in [("1", false), ("shards", true)] {
        if fleet == mode || fleet == "both" {
            let single = (per_page(&w, &f), w.wall);
            fleet_of_two(&bin, &spec, tmp.path(), single, &more, sharded);
        }
    }
}

/// The same web crawled by two processes sharing a frontier on a Redis Cluster: leasing
/// hosts from its queue, or (`sharded`) each owning half the hosts.
fn fleet_of_two(
    bin: &Path,
    spec: &ShapeSpec,
    tmp: &Path,
    (single_per_page, single): (f64, Duration),
    more: &[&str],
    sharded: bool,
) {
    let Some(cluster) = testkit::redis::RedisCluster::start() else {
        eprintln!("no redis-server: the fleet is not measured");
        return;
    };
    let cpu_of = |c: &testkit::redis::RedisCluster| -> f64 {
        c.nodes
            .iter()
            .map(|n| super::fleets::redis_info(n.port).1)
            .sum()
    };
    let web = WebShape::start(spec.clone());
    let redis_before = cpu_of(&cluster);
    let dir = tmp.join(if sharded { "shards" } else { "fleet" });
    let url = cluster.frontier_url();
    // CRAWL_BENCH_SLOWLOG=SECONDS: Redis's time by script over the fleet's first SECONDS.
    let slowlog: Option<u64> = std::env::var("CRAWL_BENCH_SLOWLOG")
        .ok()
        .and_then(|s| s.parse().ok());
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port).collect();
    // Entries kept per node: a fleet of two at the full shape logs some 30,000 a second.
    const SLOWLOG_KEEP: u32 = 200_000;
    if slowlog.is_some() {
        super::slowlog::start(&ports, SLOWLOG_KEEP);
    }
    let started = Instant::now();
    let ws: Vec<Watched> = std::thread::scope(|s| {
        if let Some(secs) = slowlog {
            let ports = &ports;
            s.spawn(move || {
                std::thread::sleep(Duration::from_secs(secs));
                super::slowlog::report(ports, SLOWLOG_KEEP);
            });
        }
        let runs: Vec<_> = (0..2)
            .map(|i| {
                let (web, dir, url) = (&web, &dir, &url);
                s.spawn(move || {
                    let process = format!("p{i}");
                    let shard = format!("{i}/2");
                    let mut extra = vec!["--frontier", url, "--crawl", "web"];
                    extra.extend(["--process", &process]);
                    if sharded {
                        extra.extend(["--shard", &shard]);
                    }
                    extra.extend(more);
                    let make =
                        || crawl_command(bin, web, spec.seeds, &dir.join(&process), None, &extra);
                    watched(&make, None, None)
                })
            })
            .collect();
        runs.into_iter().filter_map(|t| t.join().ok()).collect()
    });
    let wall = started.elapsed();
    let redis_cpu = cpu_of(&cluster) - redis_before;
    let f = web.figures();
    let cpu: f64 = ws.iter().map(|w| w.cpu.as_secs_f64()).sum::<f64>() + redis_cpu.max(0.0);
    let fleet = Watched {
        wall,
        cpu: Duration::from_secs_f64(cpu),
        peak_rss_kib: ws.iter().map(|w| w.peak_rss_kib).max().unwrap_or(0),
        peak_fds: ws.iter().map(|w| w.peak_fds).max().unwrap_or(0),
        peak_sockets: ws.iter().map(|w| w.peak_sockets).max().unwrap_or(0),
        code: ws.iter().map(|w| w.code).find(|&c| c != 0).unwrap_or(0),
        // The processes' own: Redis reports its CPU time, not its kernel part or switches.
        sys: ws.iter().map(|w| w.sys).sum(),
        switches: ws
            .iter()
            .fold((0, 0), |(v, i), w| (v + w.switches.0, i + w.switches.1)),
        wrote: ws.iter().map(|w| w.wrote).sum(),
        ..Watched::default()
    };
    print_run(
        &format!(
            "the web, a fleet of two{} on a Redis Cluster (Redis CPU {redis_cpu:.1} s included; kernel time, switches and writes the crawlers' own)",
            if sharded { " split by owner" } else { "" }
        ),
        &fleet,
        &f,
        web.nominal_floor(),
    );
    // Where Redis's time went, summed over the cluster's masters, largest first.
    let mut by_command: HashMap<String, (u64, u64)> = HashMap::new();
    for n in &cluster.nodes {
        for (name, (calls, usec)) in super::fleets::redis_commands(n.port) {
            let e = by_command.entry(name).or_default();
            e.0 += calls;
            e.1 += usec;
        }
    }
    let mut by_command: Vec<_> = by_command.into_iter().collect();
    by_command.sort_by_key(|(_, (_, usec))| std::cmp::Reverse(*usec));
    println!("\n| Redis command | calls | per page | s | us per call |");
    println!("|---|---:|---:|---:|---:|");
    let pages = f.pages_served.max(1) as f64;
    for (name, (calls, usec)) in by_command.iter().take(8) {
        println!(
            "| {name} | {calls} | {:.2} | {:.2} | {:.1} |",
            *calls as f64 / pages,
            *usec as f64 / 1e6,
            *usec as f64 / (*calls).max(1) as f64
        );
    }
    println!(
        "\nfleet of two{} against one process: wall {:.2}x, CPU per page {:.2}x",
        if sharded { " split by owner" } else { "" },
        wall.as_secs_f64() / single.as_secs_f64(),
        cpu / f.pages_served.max(1) as f64 / single_per_page
    );
}

//! Crawl throughput with politeness off: a web of many hosts on loopback (the test web,
//! `webcoop_testkit::testweb`), crawled by webcoop-crawl, then by `wget -r` and Scrapy on the same
//! site in the same run. Reports pages/s, MB/s, CPU and peak RSS as a markdown table.
//!
//! `scripts/crawl-bench.sh` installs Scrapy and runs this; by hand:
//! `cargo run --release --example crawl_bench -- --hosts 200 --pages 500 [--page-bytes 2000]
//!  [--others-seconds 60] [--scrapy-python PATH] [--fleet 1,2,4] [--redis-memory 1000000]`
//! (`--others-seconds 0`: webcoop-crawl only; `--fetch-threads N`: the crawler's setting;
//! `--console 1`: again with its console watched;
//! `--docroot DIR [--seed-path PATH] [--runs 3]`: a real site on one host instead, on nginx,
//! beside wget and the floor of its pages' library calls and HTTP exchanges; `--floor-of OUT`:
//! that floor alone, for a crawl whose site still serves it; `--signed 1`: each run followed
//! by the same crawl signing every request, Web Bot Auth; `--fleet 1`: each run followed by
//! the same crawl by a fleet of one process on a local `redis-server`). `--fleet` adds a fleet of that
//! many processes on a local `redis-server` for each number given, after each single-process crawl
//! (each build, each round); `--redis-memory N` measures
//! what N queued URLs cost in Redis; `--compare-with BIN --rounds N`: another build's
//! webcoop-crawl in alternate rounds beside this one's. `--web 1`: ten thousand hosts at the
//! crawler's default politeness instead (`web.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{HostSpec, Robots, TestWeb};

mod fleets;
mod slowlog;
mod web;

use fleets::{fleet, redis_info, redis_memory};

struct Measured {
    wall: Duration,
    cpu: Duration,
    max_rss_kib: i64,
    code: i32,
}

/// The crawler measured: `CRAWL_BENCH_BIN` (a build before, for runs alternating with this
/// one), else this workspace's, built first.
pub(crate) fn crawler_bin() -> std::path::PathBuf {
    std::env::var_os("CRAWL_BENCH_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| testkit::workspace_bin("webcoop-crawl"))
}

/// Runs a command to its end (or kills it at `limit`), with its CPU time and peak RSS.
// The child is reaped by wait4 (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn measured(cmd: &mut Command, limit: Option<Duration>) -> Measured {
    let start = Instant::now();
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    if let Some(limit) = limit {
        std::thread::spawn(move || {
            std::thread::sleep(limit);
            // SAFETY: kill(2) on our own child's pid; at worst the pid has exited already.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        });
    }
    // The peak RSS is read from the child's own memory (VmHWM) while it runs: wait4's
    // ru_maxrss also counts what this process held when it forked the child, which grows
    // with the test web's logs round after round.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watching = done.clone();
    let peak = std::thread::spawn(move || {
        let mut peak = 0i64;
        while !watching.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(kib) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|s| {
                    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_string();
                    line.split_whitespace().nth(1)?.parse::<i64>().ok()
                })
            {
                peak = peak.max(kib);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    });
    let Reaped {
        code,
        cpu,
        max_rss_kib: rusage_peak,
        ..
    } = reap(pid);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let watched = peak.join().unwrap_or(0);
    Measured {
        wall: start.elapsed(),
        cpu,
        // A child too short-lived to be seen keeps wait4's figure.
        max_rss_kib: if watched > 0 { watched } else { rusage_peak },
        code,
    }
}

/// What wait4 says of a child that ended.
struct Reaped {
    /// Its exit code, or minus the signal that ended it.
    code: i32,
    /// User and system CPU time.
    cpu: Duration,
    /// System CPU time alone.
    sys: Duration,
    /// Peak RSS in KiB.
    max_rss_kib: i64,
    /// Context switches, voluntary (waits) and involuntary (preemptions).
    switches: (i64, i64),
}

/// Waits for a child to end, and says what wait4 says of it.
fn reap(pid: libc::pid_t) -> Reaped {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; status and usage point to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    Reaped {
        code,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        sys: tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
        switches: (usage.ru_nvcsw, usage.ru_nivcsw),
    }
}

fn arg(args: &HashMap<String, String>, name: &str, default: &str) -> String {
    args.get(name)
        .cloned()
        .unwrap_or_else(|| default.to_string())
}

fn dir_size(root: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "robots.txt") {
                files += 1;
                bytes += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    (files, bytes)
}

struct Row {
    name: String,
    pages: u64,
    bytes: u64,
    m: Measured,
}

/// One table row per crawler, with CPU per page and peak RSS.
fn print_rows(rows: &[Row]) {
    println!("| crawler | pages | wall s | pages/s | MB/s | CPU s | CPU ms/page | peak RSS MiB |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let s = r.m.wall.as_secs_f64();
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.1} | {:.1} | {:.3} | {:.0} |{}",
            r.name,
            r.pages,
            s,
            r.pages as f64 / s,
            r.bytes as f64 / 1e6 / s,
            r.m.cpu.as_secs_f64(),
            r.m.cpu.as_secs_f64() * 1e3 / r.pages.max(1) as f64,
            r.m.max_rss_kib as f64 / 1024.0,
            match r.m.code {
                0 => String::new(),
                c if c < 0 => format!(" (stopped after {s:.0} s)"),
                // wget's 8: some answers were errors (the 404s every crawler meets).
                c => format!(" (exit {c})"),
            }
        );
    }
}

/// The floor of the crawl in `out`, measured by a child process (`--floor-of OUT --raw yes`)
/// right after the crawl: the machine's speed drifts, so each crawl is set beside a floor
/// measured at the same time; and a child's peak RSS as wait4 reports it starts from this
/// process's own at the fork, which the floor would grow.
fn floor_of(out: &Path) -> webcoop_crawler::archives::floor::Floor {
    let o = Command::new(std::env::current_exe().expect("this bench's path"))
        .arg("--floor-of")
        .arg(out)
        .args(["--raw", "yes"])
        .output()
        .expect("the floor");
    let text = String::from_utf8_lossy(&o.stdout);
    let n: Vec<u128> = text
        .split_whitespace()
        .map(|w| w.parse().expect("a number"))
        .collect();
    assert!(o.status.success() && n.len() == 6, "the floor: {text}");
    let ns = |v: u128| Duration::from_nanos(v as u64);
    webcoop_crawler::archives::floor::Floor {
        pages: n[0] as u64,
        received: n[1] as u64,
        decoded: n[2] as u64,
        cpu: ns(n[3]),
        http: ns(n[4]),
        differed: n[5] as u64,
    }
}

/// One row of the floor table.
fn print_floor(name: &str, f: &webcoop_crawler::archives::floor::Floor, crawl: f64) {
    println!(
        "| {name} | {} | {:.1} | {:.3} | {:.3} | {:.3} | {crawl:.3} | {:.2}x |{}",
        f.pages,
        f.decoded as f64 / 1e6,
        f.ms_per_page() - f.http_ms_per_page(),
        f.http_ms_per_page(),
        f.ms_per_page(),
        crawl / f.ms_per_page().max(1e-9),
        if f.differed > 0 {
            format!(" ({} pages differed when fetched again)", f.differed)
        } else {
            String::new()
        }
    );
}

/// wget2 over the site from `seed`, 4 threads, asking for gzip as webcoop-crawl does: once
/// saving every file under `dir`, once writing everything to /dev/null. Pages are counted
/// from wget2's per-site statistics (responses of 200), so both ways are counted alike.
fn wget2_rounds(seed: &str, dir: &Path, run: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for keep in [true, false] {
        let work = dir.join(if keep { "saving" } else { "nothing" });
        std::fs::create_dir_all(&work).expect("wget2's directory");
        let stats = work.join("stats.csv");
        let mut cmd = Command::new("wget2");
        cmd.args([
            "--recursive",
            "--level=0",
            "--max-threads=4",
            "--compression=gzip",
        ])
        .args(["--quiet", "--no-robots"])
        .arg(format!("--stats-site=csv:{}", stats.display()));
        if keep {
            cmd.arg("--directory-prefix").arg(work.join("mirror"));
        } else {
            cmd.args(["--output-document", "/dev/null"]);
        }
        let m = measured(
            cmd.arg(seed).stdout(Stdio::null()),
            Some(Duration::from_secs(300)),
        );
        let (pages, bytes) = wget2_stats(&stats);
        rows.push(Row {
            name: format!(
                "wget2 1.99 {}, run {run}",
                if keep {
                    "saving files"
                } else {
                    "keeping nothing"
                }
            ),
            pages,
            bytes,
            m,
        });
    }
    rows
}

/// Responses of 200 and their bytes, from wget2's `--stats-site` CSV (`ID,ParentID,URL,
/// Status,Link,Method,Size,SizeDecompressed,TransferTime,ResponseTime,Encoding,Verification`).
fn wget2_stats(path: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (mut pages, mut bytes) = (0, 0);
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() >= 8 && f[3] == "200" {
            pages += 1;
            bytes += f[7].parse::<u64>().unwrap_or(0);
        }
    }
    (pages, bytes)
}

/// A real site on one host: DIR served by Debian's nginx with the shipped server block,
/// crawled from PATH by webcoop-crawl (4 connections, politeness off, default WARC settings)
/// and by `wget -r`; the crawl's CPU per page beside its floor, the same pages through the
/// same library calls on one thread (`archive::floor`).
fn single_host(docroot: &Path, seed_path: &str, runs: usize, signed: bool, fleet: bool) {
    let nginx = testkit::tool("nginx").expect("nginx (apt-get install nginx-light)");
    let server =
        webcoop::servers::Nginx::start(&nginx, &webcoop::servers::example_nginx_conf(), docroot);
    let seed = format!("{}{}", server.url(), seed_path.trim_start_matches('/'));
    let tmp = tempfile::tempdir().expect("temporary directory");
    let bin = crawler_bin();
    let mut rows = Vec::new();
    let mut floors = Vec::new();
    // With --signed 1, every run is followed by the same crawl signing each request (Web Bot
    // Auth), interleaved so that the machine's drift touches both alike.
    let key_file = tmp.path().join("keys.json");
    if signed {
        let made = Command::new(&bin)
            .args(["keys", "new", "--key-file"])
            .arg(&key_file)
            .output()
            .expect("keys new");
        assert!(made.status.success(), "keys new failed");
    }
    for i in 0..runs {
        // Which goes first alternates, so that an order effect cancels out.
        let kinds: &[bool] = match (signed, i % 2) {
            (false, _) => &[false],
            (true, 0) => &[false, true],
            (true, _) => &[true, false],
        };
        for &signing in kinds {
            let out = tmp.path().join(format!("crawl-{i}-{signing}"));
            let mut cmd = Command::new(&bin);
            cmd.args([
                "crawl",
                "--allow-net",
                "127.0.0.0/8",
                "--progress",
                "quiet",
                "--coop",
                "off",
            ])
            .args(["--delay-min", "0", "--delay-factor", "0"])
            .args(["--per-host-connections", "4", "--seeds", &seed, "--out"])
            .arg(&out);
            if signing {
                cmd.arg("--signing-key")
                    .arg(&key_file)
                    .args(["--signature-agent", "https://crawler.example"]);
            }
            let m = measured(&mut cmd, None);
            let status = Command::new(&bin)
                .args(["status", "--json", "--out"])
                .arg(&out)
                .output()
                .expect("status");
            let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
            rows.push(Row {
                name: format!(
                    "webcoop-crawl{}, run {}",
                    if signing { " signing" } else { "" },
                    i + 1
                ),
                pages: st["ok"].as_u64().unwrap_or(0),
                bytes: st["bytes"].as_u64().unwrap_or(0),
                m,
            });
            if !signing {
                floors.push(floor_of(&out));
            }
        }
        // With --fleet 1: the same crawl by a fleet of one process on a fresh local Redis,
        // its CPU the process's and Redis's together.
        if fleet {
            let redis = webcoop_testkit::redis::RedisServer::start(false).expect("redis-server");
            let (_, redis_before) = redis_info(redis.port);
            let out = tmp.path().join(format!("fleet-{i}"));
            let mut m = measured(
                Command::new(&bin)
                    .args(["crawl", "--allow-net", "127.0.0.0/8", "--progress", "quiet"])
                    .args(["--coop", "off", "--delay-min", "0", "--delay-factor", "0"])
                    .args([
                        "--frontier",
                        &redis.url(),
                        "--crawl",
                        "bench",
                        "--process",
                        "p0",
                    ])
                    .args(["--per-host-connections", "4", "--seeds", &seed, "--out"])
                    .arg(&out),
                None,
            );
            let (_, redis_after) = redis_info(redis.port);
            m.cpu += Duration::from_secs_f64((redis_after - redis_before).max(0.0));
            let status = Command::new(&bin)
                .args(["status", "--json", "--out"])
                .arg(out.join("p0"))
                .output()
                .expect("status");
            let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
            rows.push(Row {
                name: format!(
                    "webcoop-crawl, fleet of 1 on Redis (CPU with Redis's), run {}",
                    i + 1
                ),
                pages: st["ok"].as_u64().unwrap_or(0),
                bytes: st["bytes"].as_u64().unwrap_or(0),
                m,
            });
        }
        // wget2 in the same round, both ways: saving what it fetches, and keeping nothing
        // (links still followed), the cost of crawling itself.
        if testkit::tool("wget2").is_some() {
            rows.extend(wget2_rounds(
                &seed,
                &tmp.path().join(format!("wget2-{i}")),
                i + 1,
            ));
        }
    }
    if testkit::tool("wget").is_some() {
        let mirror = tmp.path().join("wget");
        let m = measured(
            Command::new("wget")
                .args(["--recursive", "--level=inf", "--quiet"])
                .arg("--directory-prefix")
                .arg(&mirror)
                .arg(&seed)
                .stdout(Stdio::null()),
            Some(Duration::from_secs(120)),
        );
        let (pages, bytes) = dir_size(&mirror);
        rows.push(Row {
            name: "wget -r".into(),
            pages,
            bytes,
            m,
        });
    }
    println!(
        "
{} from {seed_path} on nginx, one host, loopback, politeness off
",
        docroot.display()
    );
    print_rows(&rows);
    println!(
        "
| run | pages | decoded MB | floor: calls | floor: HTTP | floor ms/page | crawl ms/page | crawl / floor |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let unsigned = rows
        .iter()
        .filter(|r| r.name.starts_with("webcoop-crawl, run"));
    for (i, (f, r)) in floors.iter().zip(unsigned).enumerate() {
        print_floor(
            &format!("{}", i + 1),
            f,
            r.m.cpu.as_secs_f64() * 1e3 / r.pages.max(1) as f64,
        );
    }
    print_against_wget2(&rows, runs);
}

/// Each round's webcoop-crawl against the wget2 runs of the same round: CPU per page and
/// wall time as ratios, the pages each found.
fn print_against_wget2(rows: &[Row], runs: usize) {
    let find = |prefix: &str, run: usize| {
        rows.iter()
            .find(|r| r.name.starts_with(prefix) && r.name.ends_with(&format!(", run {run}")))
    };
    let per_page = |r: &Row| r.m.cpu.as_secs_f64() / r.pages.max(1) as f64;
    let mut header = false;
    for run in 1..=runs {
        let (Some(w), Some(nothing), Some(saving)) = (
            find("webcoop-crawl, run", run),
            find("wget2 1.99 keeping nothing", run),
            find("wget2 1.99 saving files", run),
        ) else {
            continue;
        };
        if !header {
            println!(
                "\n| round | CPU/page vs wget2 keeping nothing | wall vs it | CPU/page vs wget2 saving | wall vs it | pages (webcoop, wget2) |"
            );
            println!("|---|---:|---:|---:|---:|---|");
            header = true;
        }
        let wall = |a: &Row, b: &Row| a.m.wall.as_secs_f64() / b.m.wall.as_secs_f64().max(1e-9);
        println!(
            "| {run} | {:.2}x | {:.2}x | {:.2}x | {:.2}x | {}, {} |",
            per_page(w) / per_page(nothing).max(1e-12),
            wall(w, nothing),
            per_page(w) / per_page(saving).max(1e-12),
            wall(w, saving),
            w.pages,
            nothing.pages
        );
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args: HashMap<String, String> = argv
        .chunks(2)
        .filter_map(|c| Some((c[0].trim_start_matches("--").to_string(), c.get(1)?.clone())))
        .collect();
    // Memory is measured alone: nothing else runs beside the Redis server it fills.
    if let Some(n) = args.get("redis-memory").and_then(|n| n.parse().ok()) {
        redis_memory(n);
        return;
    }
    if let Some(out) = args.get("floor-of") {
        // The bench's sites are on loopback.
        let f = webcoop_crawler::tools::floor_with_http(
            Path::new(out),
            webcoop_crawler::archives::warc::DEFAULT_LEVEL,
            &["127.0.0.0/8".parse().expect("a CIDR")],
        )
        .expect("the floor");
        if args.contains_key("raw") {
            println!(
                "{} {} {} {} {} {}",
                f.pages,
                f.received,
                f.decoded,
                f.cpu.as_nanos(),
                f.http.as_nanos(),
                f.differed
            );
        } else {
            print_floor(out, &f, 0.0);
        }
        return;
    }
    if arg(&args, "web", "0") == "1" {
        web::run(&args);
        return;
    }
    if let Some(docroot) = args.get("docroot") {
        let runs = arg(&args, "runs", "3").parse().expect("--runs N");
        let signed = arg(&args, "signed", "0") == "1";
        single_host(
            Path::new(docroot),
            &arg(&args, "seed-path", "/"),
            runs,
            signed,
            arg(&args, "fleet", "0") == "1",
        );
        return;
    }
    let hosts: usize = arg(&args, "hosts", "200").parse().expect("--hosts N");
    let pages: usize = arg(&args, "pages", "500").parse().expect("--pages N");
    let page_bytes: usize = arg(&args, "page-bytes", "2000")
        .parse()
        .expect("--page-bytes N");
    let others: u64 = arg(&args, "others-seconds", "60")
        .parse()
        .expect("--others-seconds N");
    let names: Vec<String> = (0..hosts).map(|i| format!("h{i}.bench")).collect();
    let web = TestWeb::start(
        names
            .iter()
            .map(|n| HostSpec {
                page_bytes,
                ..HostSpec::new(n, pages).robots(Robots::Allow)
            })
            .collect(),
    );
    let tmp = tempfile::tempdir().expect("temporary directory");
    let seeds = tmp.path().join("seeds.txt");
    let seed_list: Vec<String> = names
        .iter()
        .map(|n| format!("{}/", web.origin(n)))
        .collect();
    std::fs::write(&seeds, seed_list.join("\n") + "\n").expect("seeds");
    let mut config = String::new();
    if let Some(n) = args.get("fetch-threads") {
        config.push_str(&format!("fetch_threads = {n}\n"));
    }
    config.push_str("[resolve]\n");
    for n in &names {
        config.push_str(&format!("\"{n}\" = \"127.0.0.1\"\n"));
    }
    let cfg = tmp.path().join("crawl.toml");
    std::fs::write(&cfg, config).expect("config");
    let expected = hosts * (pages + 1);
    eprintln!(
        "test web: {hosts} hosts x {pages} pages of ~{page_bytes} B on {}",
        web.addr
    );

    let mut rows = Vec::new();
    let bin = crawler_bin();
    let concurrency = arg(&args, "concurrency", "256");
    let run_with = |bin: &Path, out: &Path, extra: &[String]| {
        measured(
            Command::new(bin)
                .args([
                    "crawl",
                    "--allow-net",
                    "127.0.0.0/8",
                    "--progress",
                    "log",
                    "--delay-min",
                    "0",
                    "--delay-factor",
                    "0",
                    "--concurrency",
                ])
                .arg(&concurrency)
                .arg("--seeds")
                .arg(&seeds)
                .arg("--config")
                .arg(&cfg)
                .arg("--out")
                .arg(out)
                .args(extra),
            None,
        )
    };
    let run = |out: &Path, extra: &[String]| run_with(&bin, out, extra);
    let fetched_of = |out: &Path| {
        let status = Command::new(&bin)
            .args(["status", "--json", "--out"])
            .arg(out)
            .output()
            .expect("status");
        let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
        let fetched = st["ok"].as_u64().unwrap_or(0);
        assert_eq!(
            fetched as usize, expected,
            "webcoop-crawl fetched {fetched} of {expected} pages"
        );
        (fetched, st["bytes"].as_u64().unwrap_or(0))
    };
    // `--compare-with BIN`: another build's binary in alternate rounds (`--rounds N`), which
    // goes first alternating, so that the machine's drift touches both alike.
    let other = args.get("compare-with").map(PathBuf::from);
    let rounds: usize = arg(&args, "rounds", "1").parse().unwrap_or(1).max(1);
    let fleets: Vec<usize> = arg(&args, "fleet", "")
        .split(',')
        .filter_map(|n| n.trim().parse::<usize>().ok())
        .collect();
    for round in 0..rounds {
        let mut builds = vec![("this build".to_string(), bin.clone())];
        if let Some(o) = &other {
            builds.push((o.display().to_string(), o.clone()));
            if round % 2 == 1 {
                builds.reverse();
            }
        }
        for (i, (name, b)) in builds.into_iter().enumerate() {
            let out = tmp.path().join(format!("crawl-{round}-{i}"));
            let m = run_with(&b, &out, &[]);
            let (pages, bytes) = fetched_of(&out);
            let _ = std::fs::remove_dir_all(&out);
            let labelled = other.is_some() || rounds > 1;
            rows.push(Row {
                name: if labelled {
                    format!("webcoop-crawl, {name}, round {}", round + 1)
                } else {
                    "webcoop-crawl (1 connection per host, 256 in all)".into()
                },
                pages,
                bytes,
                m,
            });
            // Each fleet right after the single process of the same build and round, so
            // that their ratio is measured under the same drift of the machine.
            for &n in &fleets {
                let dir = tmp.path().join(format!("fleet-{n}-{round}-{i}"));
                let mut row = fleet(&b, n, &seeds, &cfg, &dir, &concurrency);
                assert_eq!(
                    row.pages as usize, expected,
                    "the fleet of {n} fetched {} of {expected} pages",
                    row.pages
                );
                if labelled {
                    row.name = format!("{}, {name}, round {}", row.name, round + 1);
                }
                let _ = std::fs::remove_dir_all(&dir);
                rows.push(row);
            }
        }
    }
    if args.contains_key("console") {
        // The same crawl with its console open on the hosts page: the overview every second
        // and the host table every two, as the page asks for them.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watching = stop.clone();
        let watcher = std::thread::spawn(move || {
            let mut n = 0u64;
            while !watching.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = webcoop::servers::http_get(addr, "/api/overview", &[]);
                if n.is_multiple_of(2) {
                    let _ = webcoop::servers::http_get(addr, "/api/hosts", &[]);
                }
                n += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
        });
        let out = tmp.path().join("crawl-console");
        let m = run(&out, &["--console".into(), addr.to_string()]);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = watcher.join();
        let (pages, bytes) = fetched_of(&out);
        rows.push(Row {
            name: "webcoop-crawl, its console open on the hosts page".into(),
            pages,
            bytes,
            m,
        });
    }

    let proxy = format!("http://{}/", web.addr);
    let compare = others > 0;
    if compare && testkit::tool("wget").is_some() {
        let mirror = tmp.path().join("wget");
        let m = measured(
            Command::new("wget")
                .args([
                    "--recursive",
                    "--level=inf",
                    "--quiet",
                    "-e",
                    "use_proxy=on",
                    "-e",
                ])
                .arg(format!("http_proxy={proxy}"))
                .arg("--directory-prefix")
                .arg(&mirror)
                .arg("--input-file")
                .arg(&seeds)
                .stdout(Stdio::null()),
            Some(Duration::from_secs(others)),
        );
        let (pages, bytes) = dir_size(&mirror);
        rows.push(Row {
            name: "wget -r".into(),
            pages,
            bytes,
            m,
        });
    }
    let python = args
        .get("scrapy-python")
        .map(PathBuf::from)
        .unwrap_or_else(|| testkit::workspace_root().join("target/benchvenv/bin/python"));
    if compare && python.is_file() {
        let script = testkit::workspace_root().join("examples/bench/scrapy_spider.py");
        let stats = tmp.path().join("scrapy.json");
        let m = measured(
            Command::new(&python)
                .arg(&script)
                .arg(&seeds)
                .arg(others.to_string())
                .env("http_proxy", &proxy)
                .stdout(std::fs::File::create(&stats).expect("stats file")),
            Some(Duration::from_secs(others + 30)),
        );
        let v: serde_json::Value = std::fs::read_to_string(&stats)
            .ok()
            .and_then(|s| s.lines().last().and_then(|l| serde_json::from_str(l).ok()))
            .unwrap_or_default();
        rows.push(Row {
            name: "Scrapy (32 concurrent)".into(),
            pages: v["pages"].as_u64().unwrap_or(0),
            bytes: v["bytes"].as_u64().unwrap_or(0),
            m,
        });
    } else if compare {
        eprintln!(
            "Scrapy not found at {} (scripts/crawl-bench.sh installs it)",
            python.display()
        );
    }

    println!(
        "\n{hosts} hosts x {pages} pages (~{page_bytes} B of text each), loopback, politeness off\n"
    );
    print_rows(&rows);
}

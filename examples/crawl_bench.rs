//! Crawl throughput with politeness off: a web of many hosts on loopback (the test web,
//! `webcoop_testkit::testweb`), crawled by webcoop-crawl, then by `wget -r` and Scrapy on the same
//! site in the same run. Reports pages/s, MB/s, CPU and peak RSS as a markdown table.
//!
//! `scripts/crawl-bench.sh` installs Scrapy and runs this; by hand:
//! `cargo run --release --example crawl_bench -- --hosts 200 --pages 500 [--page-bytes 2000]
//!  [--others-seconds 60] [--scrapy-python PATH]` (`--others-seconds 0`: webcoop-crawl only)

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{HostSpec, Robots, TestWeb};

struct Measured {
    wall: Duration,
    cpu: Duration,
    max_rss_kib: i64,
    code: i32,
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
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; status and usage point to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Measured {
        wall: start.elapsed(),
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
        code: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -libc::WTERMSIG(status)
        },
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

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args: HashMap<String, String> = argv
        .chunks(2)
        .filter_map(|c| Some((c[0].trim_start_matches("--").to_string(), c.get(1)?.clone())))
        .collect();
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
    let mut config = String::from("[resolve]\n");
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
    let bin = testkit::workspace_bin("webcoop-crawler", "webcoop-crawl");
    let out = tmp.path().join("crawl");
    let m = measured(
        Command::new(&bin)
            .args([
                "crawl",
                "--progress",
                "log",
                "--delay-min",
                "0",
                "--delay-factor",
                "0",
                "--concurrency",
            ])
            .arg(arg(&args, "concurrency", "256"))
            .arg("--seeds")
            .arg(&seeds)
            .arg("--config")
            .arg(&cfg)
            .arg("--out")
            .arg(&out),
        None,
    );
    let status = Command::new(&bin)
        .args(["status", "--json", "--out"])
        .arg(&out)
        .output()
        .expect("status");
    let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
    let fetched = st["ok"].as_u64().unwrap_or(0);
    assert_eq!(
        fetched as usize, expected,
        "webcoop-crawl fetched {fetched} of {expected} pages"
    );
    rows.push(Row {
        name: "webcoop-crawl (1 connection per host, 256 in all)".into(),
        pages: fetched,
        bytes: st["bytes"].as_u64().unwrap_or(0),
        m,
    });

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
    println!("| crawler | pages | wall s | pages/s | MB/s | CPU s | CPU ms/page | peak RSS MiB |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        let s = r.m.wall.as_secs_f64();
        println!(
            "| {} | {} | {:.1} | {:.0} | {:.1} | {:.1} | {:.2} | {:.0} |{}",
            r.name,
            r.pages,
            s,
            r.pages as f64 / s,
            r.bytes as f64 / 1e6 / s,
            r.m.cpu.as_secs_f64(),
            r.m.cpu.as_secs_f64() * 1e3 / r.pages.max(1) as f64,
            r.m.max_rss_kib as f64 / 1024.0,
            if r.m.code == 0 {
                String::new()
            } else {
                format!(" (stopped after {s:.0} s)")
            }
        );
    }
}

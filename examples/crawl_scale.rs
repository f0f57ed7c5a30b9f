//! Memory per queued URL: webcoop-crawl fills its frontier from a link farm on loopback (1,000
//! pages of 10,000 links each, spread over 100 hosts whose robots.txt never answers, so nothing
//! is fetched from them) and its resident memory is read from /proc while ten million URLs
//! wait. Reports bytes of RSS per queued URL.
//!
//! `cargo run --release --example crawl_scale -- [--pages 1000] [--links 10000] [--hosts 100]
//!  [--keep DIR]` (`--keep`: leave the crawl directory there, then time a restart on it)

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{Farm, HostSpec, Robots, TestWeb};

fn arg(args: &HashMap<String, String>, name: &str, default: usize) -> usize {
    args.get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn proc_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return String::new();
    };
    let _ = write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args: HashMap<String, String> = argv
        .chunks(2)
        .filter_map(|c| Some((c[0].trim_start_matches("--").to_string(), c.get(1)?.clone())))
        .collect();
    let pages = arg(&args, "pages", 1000);
    let links = arg(&args, "links", 10_000);
    let host_count = arg(&args, "hosts", 100);
    let target = (pages * links) as f64;
    let targets: Vec<String> = (0..host_count).map(|i| format!("h{i}.scale")).collect();
    let mut specs = vec![HostSpec {
        farm: Some(Farm {
            pages,
            links,
            hosts: targets.clone(),
        }),
        ..HostSpec::new("farm.scale", 0).robots(Robots::NotFound)
    }];
    specs.extend(
        targets
            .iter()
            .map(|t| HostSpec::new(t, 0).robots(Robots::Timeout)),
    );
    let web = TestWeb::start(specs);
    let tmp = tempfile::tempdir().expect("temporary directory");
    let mut config = String::from("timeout = 3600\n[resolve]\n\"farm.scale\" = \"127.0.0.1\"\n");
    for t in &targets {
        config.push_str(&format!("\"{t}\" = \"127.0.0.1\"\n"));
    }
    let cfg = tmp.path().join("crawl.toml");
    std::fs::write(&cfg, config).expect("config");
    let bin = testkit::workspace_bin("webcoop-crawl");
    let out = match args.get("keep") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => tmp.path().join("crawl"),
    };
    let started = Instant::now();
    let mut child = Command::new(bin)
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
            "512",
        ])
        .args(["--scope", "any", "--metrics", "127.0.0.1:0", "--seeds"])
        .arg(format!("{}/", web.origin("farm.scale")))
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("webcoop-crawl");
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(addr) = line.split("metrics at http://").nth(1) {
                let _ = tx.send(addr.trim_end_matches("/metrics").to_string());
            }
            eprintln!("{line}");
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("metrics address");
    let mut last = (0.0, Instant::now());
    let (queued, rss, hwm) = loop {
        std::thread::sleep(Duration::from_secs(2));
        if let Ok(Some(status)) = child.try_wait() {
            panic!("webcoop-crawl ended early: {status}");
        }
        let m = get(&addr, "/metrics");
        let queued = metric(&m, "webcoop_crawl_queue ");
        let fetched = metric(&m, "webcoop_crawl_fetches_total{outcome=\"2xx\"}");
        eprintln!(
            "{:>5.0} s: {fetched} pages, {queued} queued, RSS {} MiB",
            started.elapsed().as_secs_f64(),
            proc_kib(pid, "VmRSS:") / 1024
        );
        let stable = queued == last.0 && last.1.elapsed() > Duration::from_secs(6);
        if queued >= target || (fetched > pages as f64 && stable) {
            break (queued, proc_kib(pid, "VmRSS:"), proc_kib(pid, "VmHWM:"));
        }
        if queued != last.0 {
            last = (queued, Instant::now());
        }
    };
    let filled = started.elapsed();
    // SAFETY: SIGTERM to our own child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let _ = child.wait();
    if args.contains_key("keep") {
        // A restart that loads the whole state (seen-set, hosts, queue counts) and stops at
        // once: its page budget is spent.
        let t = Instant::now();
        let status = Command::new(testkit::workspace_bin("webcoop-crawl"))
            .args([
                "crawl",
                "--allow-net",
                "127.0.0.0/8",
                "--progress",
                "quiet",
                "--max-pages",
                "1",
                "--config",
            ])
            .arg(&cfg)
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null())
            .status()
            .expect("restart");
        println!(
            "restart on {queued:.0} queued URLs: {:.1} s ({status})",
            t.elapsed().as_secs_f64()
        );
    }
    println!(
        "\n{queued:.0} URLs queued in {:.0} s ({:.0} URLs/s); resident {:.0} MiB = {:.1} bytes per queued URL (peak {:.0} MiB = {:.1} B/URL)",
        filled.as_secs_f64(),
        queued / filled.as_secs_f64(),
        rss as f64 / 1024.0,
        rss as f64 * 1024.0 / queued.max(1.0),
        hwm as f64 / 1024.0,
        hwm as f64 * 1024.0 / queued.max(1.0)
    );
}

//! Benchmark of the agent on a generated docroot (a measurement, not a test).
//!
//!   cargo build --release -p webcoop-agent --examples
//!   target/release/examples/agent_bench [FILES] [CHANGES]      (defaults: 100000 1000)
//!
//! Reports: the first scan and publication (files/s), a restart over the unchanged docroot,
//! the latency from a file write to the updated robots.rdf on disk over single-file changes
//! (p50/p99, and beyond the 100 ms debounce window), and peak RSS per file.

use notify::{EventKind, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

fn agent_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("webcoop-agent"))
        .expect("target dir");
    assert!(
        bin.exists(),
        "{} missing: run `cargo build --release -p webcoop-agent` first",
        bin.display()
    );
    bin
}

/// A small deterministic generator (no dependency needed for a benchmark's file contents).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn page(i: usize, rng: &mut Lcg, version: u32) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><title>Page {i}</title></head><body>\n<h1>Page {i} (v{version})</h1>\n"
    );
    let paragraphs = 2 + (rng.next() % 8) as usize;
    for p in 0..paragraphs {
        s.push_str(&format!("<p>Paragraph {p} of page {i}: "));
        for _ in 0..(20 + rng.next() % 60) {
            s.push_str(
                [
                    "lorem ", "ipsum ", "dolor ", "sit ", "amet ", "crawler ", "agent ", "change ",
                ][(rng.next() % 8) as usize],
            );
        }
        s.push_str("</p>\n");
    }
    for _ in 0..5 {
        let t = rng.next() as usize % 100_000;
        s.push_str(&format!(
            "<a href=\"/d{}/p{t}.html\">page {t}</a>\n",
            t % 100
        ));
    }
    s.push_str("</body></html>\n");
    s
}

fn run_once(bin: &Path, www: &Path, state: &Path) -> (Duration, i64) {
    let start = Instant::now();
    let status = Command::new(bin)
        .arg("--docroot")
        .arg(www)
        .arg("--state")
        .arg(state)
        .args(["--base-url", "https://bench.example/", "--once"])
        .env("WEBCOOP_LOG", "warn")
        .status()
        .expect("run agent");
    assert!(status.success());
    let took = start.elapsed();
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    (took, usage.ru_maxrss * 1024)
}

fn vm_hwm(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.to_string())
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let changes: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let bin = agent_binary();
    let tmp = tempfile::tempdir().expect("tempdir");
    let www = tmp.path().join("www");
    let state = tmp.path().join("state");
    let mut rng = Lcg(42);
    let gen_start = Instant::now();
    let mut bytes = 0usize;
    for i in 0..files {
        let dir = www.join(format!("d{}", i % 100));
        if i < 100 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        let content = page(i, &mut rng, 1);
        bytes += content.len();
        std::fs::write(dir.join(format!("p{i}.html")), content).expect("write");
    }
    println!(
        "generated {files} files, {:.1} MB, in {:.1} s",
        bytes as f64 / 1e6,
        gen_start.elapsed().as_secs_f64()
    );

    let (first, rss_first) = run_once(&bin, &www, &state);
    println!(
        "first run (scan, digest, store versions, publish): {:.2} s = {:.0} files/s; peak RSS {:.1} MiB = {:.0} B/file",
        first.as_secs_f64(),
        files as f64 / first.as_secs_f64(),
        rss_first as f64 / 1048576.0,
        rss_first as f64 / files as f64
    );
    let (again, _) = run_once(&bin, &www, &state);
    println!(
        "restart over the unchanged docroot: {:.2} s = {:.0} files/s",
        again.as_secs_f64(),
        files as f64 / again.as_secs_f64()
    );
    let rdf_len = std::fs::metadata(www.join("robots.rdf"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!("robots.rdf: {:.1} MB", rdf_len as f64 / 1e6);

    // Watch mode: time from a write to robots.rdf being replaced.
    let (tx, rx) = channel();
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        if let Ok(e) = e
            && matches!(e.kind, EventKind::Modify(_) | EventKind::Create(_))
            && e.paths.iter().any(|p| p.ends_with("robots.rdf"))
        {
            let _ = tx.send(Instant::now());
        }
    })
    .expect("watcher");
    watcher
        .watch(&www, RecursiveMode::NonRecursive)
        .expect("watch");
    let mut child = Command::new(&bin)
        .arg("--docroot")
        .arg(&www)
        .arg("--state")
        .arg(&state)
        .args(["--base-url", "https://bench.example/"])
        .env("WEBCOOP_LOG", "warn")
        .stdin(Stdio::null())
        .spawn()
        .expect("start agent");
    // The start-up publication.
    let _ = rx.recv_timeout(Duration::from_secs(600));
    std::thread::sleep(Duration::from_millis(500));
    while rx.try_recv().is_ok() {}
    let mut latencies = Vec::with_capacity(changes);
    for n in 0..changes {
        let i = rng.next() as usize % files;
        let path = www.join(format!("d{}/p{i}.html", i % 100));
        let content = page(i, &mut rng, 2 + n as u32);
        let t0 = Instant::now();
        std::fs::write(&path, content).expect("edit");
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(t1) => latencies.push(t1.duration_since(t0)),
            Err(_) => println!("change {n}: not published within 30 s"),
        }
        // Let the publication finish before the next change (the event fires at the rename).
        std::thread::sleep(Duration::from_millis(20 + rng.next() % 30));
        while rx.try_recv().is_ok() {}
    }
    let rss = vm_hwm(child.id());
    let _ = child.kill();
    let _ = child.wait();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let debounce = Duration::from_millis(100);
    println!(
        "write -> robots.rdf replaced over {} changes: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; beyond the {} ms debounce: p50 {:.0} ms, p99 {:.0} ms",
        latencies.len(),
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        debounce.as_millis(),
        pct(0.5).saturating_sub(debounce).as_secs_f64() * 1e3,
        pct(0.99).saturating_sub(debounce).as_secs_f64() * 1e3
    );
    println!(
        "watching agent peak RSS: {:.1} MiB = {:.0} B/file",
        rss as f64 / 1048576.0,
        rss as f64 / files as f64
    );
}

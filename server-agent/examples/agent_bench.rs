//! Benchmark of the agent on a generated docroot served by Debian's nginx (a measurement, not
//! a test).
//!
//!   cargo build --release -p webcoop-agent --examples
//!   target/release/examples/agent_bench [FILES] [CHANGES] [AGENT]   (defaults: 100000 1000)
//!
//! The docroot (FILES pages of 1 to 4 KB in 100 to 1,000 directories) is served by nginx (two
//! workers, as on a 2-core server), which the agent asks about every file. Reports: the floor
//! (a plain walk reading and hashing every file), the first run as a webmaster starts it
//! (watching: until robots.rdf and the changes feed are published, then until the snapshot
//! built behind them is), a restart over the unchanged docroot, then single-file edits
//! `AGENT_BENCH_GAP_MS` apart (1,500 by default): the latency from a write to its entry in the
//! changes feed on disk (p50/p99, and beyond the 100 ms debounce window) and the bytes the
//! agent had the kernel write for each (`write_bytes` of /proc/PID/io, the store's included),
//! the size of each document's parts, and peak RSS per file. AGENT is another build of
//! `webcoop-agent` to measure instead (an older one, for a before-and-after in one run; one
//! without `--server-url` judges nothing). `AGENT_BENCH_DIR=DIR` keeps the docroot and state
//! in a new directory under DIR; `AGENT_BENCH_REUSE=KEPT` measures the edits alone on a kept
//! one; `AGENT_BENCH_EACH=1` prints every edit's latency and bytes written; `AGENT_BENCH_LOG` is
//! the agent's `WEBCOOP_LOG` (warn).

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

/// `--server-url ADDR` for a build that asks the server, nothing for one from before.
fn judge_args(bin: &Path, server: &str) -> Vec<String> {
    let help = Command::new(bin)
        .arg("--help")
        .output()
        .expect("agent --help");
    if String::from_utf8_lossy(&help.stdout).contains("--server-url") {
        vec!["--server-url".into(), server.into()]
    } else {
        Vec::new()
    }
}

/// Debian's nginx over `www` with two workers, on a free loopback port; stopped when dropped.
struct Nginx {
    child: std::process::Child,
    addr: std::net::SocketAddr,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM, not SIGKILL: a master killed outright leaves its workers serving (and
        // holding our stdout), so the next run would share the port and the pipe.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill only sends a signal to our own child.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let _ = self.child.wait();
    }
}

fn nginx(www: &Path, dir: &Path) -> Nginx {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let d = dir.display();
    let conf = format!(
        "daemon off;\nworker_processes 2;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
         events {{ worker_connections 1024; }}\nhttp {{ access_log off; include /etc/nginx/mime.types;\n\
         client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;\n\
         uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
         server {{ listen 127.0.0.1:{port}; root {}; }} }}\n",
        www.display()
    );
    std::fs::write(dir.join("nginx.conf"), conf).expect("nginx.conf");
    let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .find(|b| Path::new(b).exists())
        .expect("nginx is needed (apt-get install nginx)");
    let child = Command::new(bin)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(dir.join("nginx.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nginx");
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "nginx did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Nginx { child, addr }
}

fn run_once(bin: &Path, www: &Path, state: &Path, judge: &[String]) -> (Duration, i64) {
    let start = Instant::now();
    let status = Command::new(bin)
        .arg("--docroot")
        .arg(www)
        .arg("--state")
        .arg(state)
        .args(["--base-url", "https://bench.example/", "--once"])
        .args(judge)
        .env("WEBCOOP_LOG", log_level())
        .status()
        .expect("run agent");
    assert!(status.success());
    let took = start.elapsed();
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    (took, usage.ru_maxrss * 1024)
}

/// The bench's directory, removed at the end unless it is to be kept.
struct Removed(PathBuf, bool);

impl Removed {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Removed {
    fn drop(&mut self) {
        if self.1 {
            println!("kept: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The floor of a first run: every file found, read and hashed, on one thread.
fn walk_and_hash(www: &Path) -> (usize, Duration) {
    let start = Instant::now();
    let mut n = 0;
    let mut dirs = vec![www.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() => {
                    let bytes = std::fs::read(&path).expect("read");
                    std::hint::black_box(webcoop_protocol::validator::Sha256Digest::of(&bytes));
                    n += 1;
                }
                _ => {}
            }
        }
    }
    (n, start.elapsed())
}

/// Bytes the process had written to storage so far (`write_bytes` of /proc/PID/io).
fn written(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("write_bytes:").map(|v| v.trim().to_string()))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Count and mean size of the files in `dir` whose names start with `prefix` and end with
/// `suffix`.
fn parts_in(dir: &Path, prefix: &str, suffix: &str) -> (usize, u64) {
    let sizes: Vec<u64> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(prefix) && n.ends_with(suffix)
                })
                .filter_map(|e| e.metadata().ok().map(|m| m.len()))
                .collect()
        })
        .unwrap_or_default();
    let mean = sizes.iter().sum::<u64>() / sizes.len().max(1) as u64;
    (sizes.len(), mean)
}

/// CPU time of process `pid` so far, in clock ticks (user and system).
fn cpu_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // Fields after the command's closing parenthesis; utime and stime are 14 and 15.
            let rest = s.rsplit_once(')')?.1.to_string();
            let f: Vec<u64> = rest
                .split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|v| v.parse().ok())
                .collect();
            Some(f.iter().sum())
        })
        .unwrap_or(0)
}

/// Waits until process `pid` has used no CPU for half a second (at most `limit`); how long
/// that took.
fn wait_idle(pid: u32, limit: Duration) -> Duration {
    let start = Instant::now();
    let (mut last, mut still) = (cpu_ticks(pid), 0);
    while still < 5 && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(100));
        let now = cpu_ticks(pid);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    start.elapsed().saturating_sub(Duration::from_millis(500))
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

/// Generates the docroot, measures the floor, the first run as a webmaster starts it and a
/// restart over the unchanged docroot, and leaves nginx serving it.
fn first_runs(files: usize, dirs: usize, rng: &mut Lcg, tmp: &Removed, bin: &Path) -> Nginx {
    let bin = bin.to_path_buf();
    // nginx's workers run as another user: they must reach the docroot.
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let www = tmp.path().join("www");
    let state = tmp.path().join("state");
    let gen_start = Instant::now();
    let mut bytes = 0usize;
    for i in 0..files {
        let dir = www.join(format!("d{}", i % dirs));
        if i < dirs {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        let content = page(i, rng, 1);
        bytes += content.len();
        std::fs::write(dir.join(format!("p{i}.html")), content).expect("write");
    }
    println!(
        "generated {files} files in {dirs} directories, {:.1} MB, in {:.1} s",
        bytes as f64 / 1e6,
        gen_start.elapsed().as_secs_f64()
    );
    let (found, floor) = walk_and_hash(&www);
    println!(
        "floor: a plain walk reading and hashing {found} files on one thread: {:.2} s = {:.0} files/s",
        floor.as_secs_f64(),
        found as f64 / floor.as_secs_f64()
    );

    let nginx_dir = tmp.path().join("nginx");
    std::fs::create_dir(&nginx_dir).expect("mkdir");
    let server = nginx(&www, &nginx_dir);
    let judge = judge_args(&bin, &format!("http://{}", server.addr));
    println!(
        "agent {}: {}",
        bin.display(),
        if judge.is_empty() {
            "judges nothing (no --server-url)".to_string()
        } else {
            format!("asks nginx at {} about every file", server.addr)
        }
    );
    let watch = |state: &Path| watching_agent(&bin, &www, state, &judge);
    // The first run as a webmaster starts it: watching from the start.
    let feed_dir = www.join(".well-known/webcoop");
    let start = Instant::now();
    let mut child = watch(&state);
    let wait_until = |what: &str, limit: Duration, done: &dyn Fn() -> bool| {
        while !done() {
            assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
        start.elapsed()
    };
    let listed = wait_until("the first publication", Duration::from_secs(3600), &|| {
        feed_dir.join("changes.atom").exists() && www.join("robots.rdf").exists()
    });
    println!(
        "first run, judged and listed (robots.rdf and the changes feed in place): {:.2} s = {:.0} files/s ({:.2}x the floor's time)",
        listed.as_secs_f64(),
        files as f64 / listed.as_secs_f64(),
        listed.as_secs_f64() / floor.as_secs_f64()
    );
    let snapshots = www.join(webcoop_protocol::snapshot::DIRECTORY);
    // In place once robots.rdf names it (the agent has then recorded it).
    let snapshot = wait_until("the first snapshot", Duration::from_secs(7200), &|| {
        std::fs::read_dir(&snapshots).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".warc.zst"))
        }) && std::fs::read_to_string(www.join("robots.rdf"))
            .is_ok_and(|t| t.contains("<wc:snapshot "))
    });
    println!(
        "the snapshot built behind it, in place {:.2} s after the start",
        snapshot.as_secs_f64()
    );
    let rss_first = vm_hwm(child.id());
    println!(
        "first run peak RSS: {:.1} MiB = {:.0} B/file",
        rss_first as f64 / 1048576.0,
        rss_first as f64 / files as f64
    );
    let _ = child.kill();
    let _ = child.wait();
    let (again, _) = run_once(&bin, &www, &state, &judge);
    println!(
        "restart over the unchanged docroot: {:.2} s = {:.0} files/s",
        again.as_secs_f64(),
        files as f64 / again.as_secs_f64()
    );
    let size = |name: &str| std::fs::metadata(www.join(name)).map_or(0, |m| m.len());
    let rs_dir = www.join(".well-known/webcoop/resourcesync");
    for (what, (count, mean)) in [
        ("robots.rdf", parts_in(&www, "robots-", ".rdf")),
        ("sitemap", parts_in(&www, "sitemap-", ".xml.gz")),
        ("resource list", parts_in(&rs_dir, "resourcelist-", ".xml")),
    ] {
        println!(
            "{what}: {count} parts of {:.1} KB on average",
            mean as f64 / 1e3
        );
    }
    println!(
        "indexes: robots.rdf {:.1} KB, sitemap.xml {:.1} KB, resourcelist.xml {:.1} KB",
        size("robots.rdf") as f64 / 1e3,
        size("sitemap.xml") as f64 / 1e3,
        std::fs::metadata(rs_dir.join("resourcelist.xml")).map_or(0, |m| m.len()) as f64 / 1e3
    );
    server
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let files: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let changes: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let bin = args.get(3).map_or_else(agent_binary, PathBuf::from);
    // AGENT_BENCH_REUSE names a directory an earlier run kept: its edits alone are measured.
    let reuse = std::env::var_os("AGENT_BENCH_REUSE").map(PathBuf::from);
    // AGENT_BENCH_DIR keeps the docroot and the state there, for profiling runs after.
    let tmp = match (&reuse, std::env::var_os("AGENT_BENCH_DIR")) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) => tempfile::Builder::new()
            .prefix("agent-bench-")
            .tempdir_in(dir)
            .expect("tempdir")
            .keep(),
        (None, None) => tempfile::tempdir().expect("tempdir").keep(),
    };
    let keep = reuse.is_some() || std::env::var_os("AGENT_BENCH_DIR").is_some();
    let tmp = Removed(tmp, keep);
    let www = tmp.path().join("www");
    let state = tmp.path().join("state");
    let mut rng = Lcg(42);
    let dirs = (files / 1000).clamp(100, 1000);
    let nginx_dir = tmp.path().join("nginx");
    let server = if reuse.is_some() {
        // Edits of their own, not the first run's again.
        rng = Lcg(std::process::id().into());
        nginx(&www, &nginx_dir)
    } else {
        first_runs(files, dirs, &mut rng, &tmp, &bin)
    };
    let judge = judge_args(&bin, &format!("http://{}", server.addr));
    let watch = |state: &Path| watching_agent(&bin, &www, state, &judge);
    let feed_dir = www.join(".well-known/webcoop");
    let gap = Duration::from_millis(
        std::env::var("AGENT_BENCH_GAP_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1500),
    );

    // Watch mode: time from a write to the changes feed being replaced.
    let (tx, rx) = channel();
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        if let Ok(e) = e
            && matches!(e.kind, EventKind::Modify(_) | EventKind::Create(_))
            && e.paths.iter().any(|p| p.ends_with("changes.atom"))
        {
            let _ = tx.send(Instant::now());
        }
    })
    .expect("watcher");
    watcher
        .watch(&feed_dir, RecursiveMode::NonRecursive)
        .expect("watch");
    let mut child = watch(&state);
    // AGENT_BENCH_EACH prints every edit, to find what the slow ones were.
    let each = std::env::var_os("AGENT_BENCH_EACH").is_some();
    // The start-up publication: the changes feed first, then the other documents, whose
    // renders at a million files take a second or two more. An edit made before they are
    // done waits for them (188-210 ms measured at a million files), which is the start's
    // cost, not watching's: the edits begin once the agent is idle.
    let _ = rx.recv_timeout(Duration::from_secs(600));
    let idle = wait_idle(child.id(), Duration::from_secs(600));
    if each {
        println!(
            "the agent idle {:.2} s after its feed was published",
            idle.as_secs_f64()
        );
    }
    std::thread::sleep(Duration::from_millis(500).max(gap));
    while rx.try_recv().is_ok() {}
    let mut latencies = Vec::with_capacity(changes);
    let mut writes = Vec::with_capacity(changes);
    for n in 0..changes {
        let i = rng.next() as usize % files;
        let rel = format!("d{}/p{i}.html", i % dirs);
        let path = www.join(&rel);
        let content = page(i, &mut rng, 2 + n as u32);
        // The entry names the new version by its entity tag.
        let digest = webcoop_protocol::validator::Sha256Digest::of(content.as_bytes())
            .etag()
            .to_string()
            .trim_matches('"')
            .to_string();
        let w0 = written(child.id());
        let t0 = Instant::now();
        let written_at = std::time::SystemTime::now();
        std::fs::write(&path, content).expect("edit");
        let deadline = t0 + Duration::from_secs(30);
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(t1) => {
                    let feed =
                        std::fs::read_to_string(feed_dir.join("changes.atom")).unwrap_or_default();
                    if feed.contains(&digest) {
                        latencies.push(t1.duration_since(t0));
                        break;
                    }
                }
                Err(_) => {
                    println!("change {n}: not in the changes feed within 30 s");
                    break;
                }
            }
        }
        // Every document the edit touches written (the sitemaps follow within a second).
        std::thread::sleep(gap.saturating_sub(t0.elapsed()));
        writes.push(written(child.id()).saturating_sub(w0));
        if each {
            println!(
                "edit {n} {rel} at {:.3}: {:.0} ms, {:.2} MB written",
                written_at
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64() % 86_400.0),
                latencies.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
                writes.last().map_or(0, |w| *w) as f64 / 1e6
            );
        }
        while rx.try_recv().is_ok() {}
    }
    let rss = vm_hwm(child.id());
    let _ = child.kill();
    let _ = child.wait();
    latencies.sort();
    writes.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let debounce = Duration::from_millis(100);
    println!(
        "write -> changes feed replaced over {} changes {} ms apart: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; beyond the {} ms debounce: p50 {:.0} ms, p99 {:.0} ms",
        latencies.len(),
        gap.as_millis(),
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3),
        debounce.as_millis(),
        pct(0.5).saturating_sub(debounce).as_secs_f64() * 1e3,
        pct(0.99).saturating_sub(debounce).as_secs_f64() * 1e3
    );
    let wpct =
        |p: f64| writes[((writes.len() as f64 * p) as usize).min(writes.len() - 1)] as f64 / 1e6;
    println!(
        "written per edit (the store's included): p50 {:.2} MB, p99 {:.2} MB, mean {:.2} MB",
        wpct(0.5),
        wpct(0.99),
        writes.iter().sum::<u64>() as f64 / writes.len().max(1) as f64 / 1e6
    );
    println!(
        "watching agent peak RSS: {:.1} MiB = {:.0} B/file",
        rss as f64 / 1048576.0,
        rss as f64 / files as f64
    );
}

/// The agent started watching `www` with its state in `state`, asking the judge `judge`.
fn watching_agent(bin: &Path, www: &Path, state: &Path, judge: &[String]) -> std::process::Child {
    Command::new(bin)
        .arg("--docroot")
        .arg(www)
        .arg("--state")
        .arg(state)
        .args(["--base-url", "https://bench.example/"])
        .args(judge)
        .env("WEBCOOP_LOG", log_level())
        .stdin(Stdio::null())
        .spawn()
        .expect("start agent")
}

/// The agent's log level: `AGENT_BENCH_LOG`, else warnings only.
fn log_level() -> String {
    std::env::var("AGENT_BENCH_LOG").unwrap_or_else(|_| "warn".into())
}

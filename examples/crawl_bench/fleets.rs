//! The bench's Redis parts: a fleet of processes sharing a crawl on a local Redis, Redis's own
//! figures, and what queued URLs cost in its memory.

use super::{Measured, Row, measured};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `used_memory` and the CPU seconds a Redis server has used.
pub(super) fn redis_info(port: u16) -> (u64, f64) {
    let o = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", "all"])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let field = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    (
        field("used_memory") as u64,
        field("used_cpu_sys") + field("used_cpu_user"),
    )
}

/// Redis's time by command (`INFO commandstats`): name -> (calls, microseconds).
pub(super) fn redis_commands(port: u16) -> std::collections::HashMap<String, (u64, u64)> {
    let o = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", "commandstats"])
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |f: &str| -> Option<u64> {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('='))?
                    .parse()
                    .ok()
            };
            Some((name.to_string(), (field("calls")?, field("usec")?)))
        })
        .collect()
}

/// A fleet of `n` processes on one crawl, on a fresh local Redis, all started at once; its
/// wall time is the last process's, its CPU the processes' and Redis's together.
pub(super) fn fleet(
    bin: &Path,
    n: usize,
    seeds: &Path,
    cfg: &Path,
    dir: &Path,
    concurrency: &str,
) -> Row {
    let redis = webcoop_testkit::redis::RedisServer::start(false).expect("redis-server");
    let (_, cpu_before) = redis_info(redis.port);
    let started = Instant::now();
    let runs: Vec<_> = (0..n)
        .map(|i| {
            let mut cmd = Command::new(bin);
            cmd.args([
                "crawl",
                "--allow-net",
                "127.0.0.0/8",
                "--frontier",
                &redis.url(),
                "--crawl",
                "bench",
            ])
            .args(["--process", &format!("p{i}"), "--progress", "quiet"])
            .args(["--delay-min", "0", "--delay-factor", "0", "--coop", "off"])
            .args(["--concurrency", concurrency])
            .arg("--seeds")
            .arg(seeds)
            .arg("--config")
            .arg(cfg)
            .arg("--out")
            .arg(dir)
            .stdout(Stdio::null());
            std::thread::spawn(move || measured(&mut cmd, None))
        })
        .collect();
    let ms: Vec<Measured> = runs
        .into_iter()
        .map(|t| t.join().expect("a fleet process"))
        .collect();
    let wall = started.elapsed();
    let (_, cpu_after) = redis_info(redis.port);
    // What the fleet asked of Redis, the costliest first, to see where its time goes.
    if std::env::var_os("CRAWL_BENCH_COMMANDSTATS").is_some() {
        let mut stats: Vec<_> = redis_commands(redis.port).into_iter().collect();
        stats.sort_by_key(|(_, (_, usec))| std::cmp::Reverse(*usec));
        for (name, (calls, usec)) in stats.iter().take(12) {
            eprintln!("fleet of {n}: {name}: calls={calls}, usec={usec}");
        }
    }
    let (mut pages, mut bytes) = (0, 0);
    for i in 0..n {
        let status = Command::new(bin)
            .args(["status", "--json", "--out"])
            .arg(dir.join(format!("p{i}")))
            .output()
            .expect("status");
        let st: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
        pages += st["ok"].as_u64().unwrap_or(0);
        bytes += st["bytes"].as_u64().unwrap_or(0);
    }
    let cpu: Duration = ms.iter().map(|m| m.cpu).sum();
    Row {
        name: format!(
            "webcoop-crawl, fleet of {n} on Redis (CPU: processes {:.1} s + Redis {:.1} s)",
            cpu.as_secs_f64(),
            cpu_after - cpu_before
        ),
        pages,
        bytes,
        m: Measured {
            wall,
            cpu: cpu + Duration::from_secs_f64((cpu_after - cpu_before).max(0.0)),
            max_rss_kib: ms.iter().map(|m| m.max_rss_kib).max().unwrap_or(0),
            code: ms.iter().map(|m| m.code).find(|c| *c != 0).unwrap_or(0),
        },
    }
}

/// Queues `n` URLs (about 45 bytes each, over 1,000 hosts) in a fresh Redis and prints what
/// each costs in its memory.
pub(super) fn redis_memory(n: usize) {
    use webcoop_crawler::NewUrl;
    use webcoop_crawler::fleet::SharedQueue;
    let redis = webcoop_testkit::redis::RedisServer::start(false).expect("redis-server");
    let mut q = SharedQueue::connect(&redis.url(), "mem", "bench").expect("connect");
    let hosts: Vec<_> = (0..1000)
        .map(|h| {
            q.host_id(&format!("http://host-{h}.example.org"))
                .expect("host")
        })
        .collect();
    let (before, _) = redis_info(redis.port);
    let per_host = n.div_ceil(hosts.len());
    for (h, host) in hosts.iter().enumerate() {
        for chunk in (0..per_host).collect::<Vec<_>>().chunks(1000) {
            let urls: Vec<NewUrl> = chunk
                .iter()
                .map(|i| NewUrl {
                    seq: 0,
                    host: *host,
                    url: format!("http://host-{h}.example.org/articles/{i:08}.html"),
                    fp: webcoop_crawler::Fp((h * 10_000_000 + i) as u64 * 2_654_435_761),
                    depth: 3,
                    hops: 0,
                    priority: 1.0 / (*i as f64 + 1.0),
                    revisit: false,
                })
                .collect();
            q.offer(*host, &urls).expect("offer");
        }
    }
    let (after, _) = redis_info(redis.port);
    let queued = per_host * hosts.len();
    println!(
        "\nRedis memory: {queued} queued URLs over {} hosts cost {:.0} MB, {:.0} B per URL \
         (seen-set, queue and row)",
        hosts.len(),
        (after - before) as f64 / 1e6,
        (after - before) as f64 / queued as f64
    );
}

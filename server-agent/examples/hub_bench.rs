//! Load benchmark of the WebSub hub (a measurement, not a test).
//!
//!   cargo build --release -p webcoop-agent --examples
//!   target/release/examples/hub_bench [SUBSCRIBERS] [CHANGES_PER_SECOND] [SECONDS]   (defaults: 1000 100 60)
//!
//! Runs the release agent with its service on loopback, subscribes SUBSCRIBERS callbacks of
//! one local server (from many loopback source addresses, as the hub rate-limits per client),
//! creates files at the given rate, and reports: whether every subscriber got every change,
//! change-to-delivery latency (p50/p99), deliveries per second, and the agent's CPU and peak RSS.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Received {
    /// Per subscriber, per sequence number: when it first arrived.
    first: Vec<HashMap<u64, Instant>>,
    deliveries: u64,
    bytes: u64,
}

#[derive(Clone)]
struct Bench {
    received: Arc<Mutex<Received>>,
}

async fn verify(RawQuery(q): RawQuery) -> impl IntoResponse {
    let challenge = form_urlencoded::parse(q.unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "hub.challenge")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    (StatusCode::OK, challenge)
}

/// Sequence numbers of a delivery, read with a plain scan (parsing 1,000 documents a second
/// fully would measure this process, not the hub).
fn seqs(body: &[u8]) -> Vec<u64> {
    let text = String::from_utf8_lossy(body);
    text.match_indices("<wc:seq>")
        .filter_map(|(i, m)| {
            let rest = &text[i + m.len()..];
            rest.split('<').next().and_then(|n| n.parse().ok())
        })
        .collect()
}

async fn deliver(State(b): State<Bench>, Path(i): Path<usize>, body: Bytes) -> StatusCode {
    let now = Instant::now();
    let mut r = b.received.lock().unwrap();
    r.deliveries += 1;
    r.bytes += body.len() as u64;
    for s in seqs(&body) {
        r.first[i].entry(s).or_insert(now);
    }
    StatusCode::NO_CONTENT
}

fn agent_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let bin = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("webcoop-agent"))
        .expect("target dir");
    assert!(
        bin.exists(),
        "{} missing: run `cargo build --release -p webcoop-agent` first",
        bin.display()
    );
    bin
}

fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields
        .get(11)
        .and_then(|u| u.parse::<f64>().ok())
        .unwrap_or(0.0)
        + fields
            .get(12)
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0);
    ticks / 100.0
}

fn vm_hwm(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().collect();
    let subscribers: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let rate: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100);
    let seconds: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(60);
    let total = rate * seconds;

    let bench = Bench {
        received: Arc::new(Mutex::new(Received {
            first: vec![HashMap::new(); subscribers],
            ..Received::default()
        })),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let callbacks = listener.local_addr().expect("addr");
    let app = Router::new()
        .route("/cb/{i}", get(verify).post(deliver))
        .with_state(bench.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let tmp = tempfile::tempdir().expect("tempdir");
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).expect("mkdir");
    std::fs::write(www.join("index.html"), "home").expect("write");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let server = webcoop_testkit::static_site::StaticServer::serve(&www);
    let mut agent = Command::new(agent_binary())
        .arg("--docroot")
        .arg(&www)
        .args(["--server-url", &server.url()])
        .args([
            "--base-url",
            "https://bench.example/",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--allow-callback-net",
            "127.0.0.0/8",
        ])
        .env("WEBCOOP_LOG", "warn")
        .stdin(Stdio::null())
        .spawn()
        .expect("start agent");
    let pid = agent.id();
    let hub = format!("http://127.0.0.1:{port}/.well-known/webcoop/hub");
    let client = reqwest::Client::new();
    while client
        .get(format!(
            "http://127.0.0.1:{port}/.well-known/webcoop/healthz"
        ))
        .send()
        .await
        .is_err()
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The hub allows 10 subscription requests at once per client address: use many.
    let started = Instant::now();
    for i in 0..subscribers {
        let k = i / 10;
        let source = IpAddr::V4(Ipv4Addr::new(
            127,
            0,
            1 + (k / 250) as u8,
            1 + (k % 250) as u8,
        ));
        let c = reqwest::Client::builder()
            .local_address(source)
            .build()
            .expect("client");
        let form = format!(
            "hub.mode=subscribe&hub.topic={}&hub.callback={}",
            form_urlencoded::byte_serialize(b"https://bench.example/.well-known/webcoop/changes")
                .collect::<String>(),
            form_urlencoded::byte_serialize(format!("http://{callbacks}/cb/{i}").as_bytes())
                .collect::<String>()
        );
        let r = c
            .post(&hub)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .expect("subscribe");
        assert_eq!(
            r.status(),
            202,
            "subscription {i}: {}",
            r.text().await.unwrap_or_default()
        );
    }
    let metrics_url = format!("http://127.0.0.1:{port}/.well-known/webcoop/metrics");
    loop {
        let m = client
            .get(&metrics_url)
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .unwrap_or_default();
        let subs = m
            .lines()
            .find(|l| l.starts_with("webcoop_subscriptions "))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0);
        if subs as usize >= subscribers {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "{subscribers} subscriptions verified in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let cpu_before = cpu_seconds(pid);
    let mut written: Vec<Instant> = Vec::with_capacity(total as usize);
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
    let run_start = Instant::now();
    for n in 0..total {
        tick.tick().await;
        // Zero-padded names: within a batch the agent orders by path, so change n is seq n+1.
        std::fs::write(www.join(format!("c{n:07}.html")), format!("change {n}")).expect("write");
        written.push(Instant::now());
    }
    let writing = run_start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done = bench
            .received
            .lock()
            .unwrap()
            .first
            .iter()
            .all(|m| m.len() as u64 >= total);
        if done || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let elapsed = run_start.elapsed();
    let cpu = cpu_seconds(pid) - cpu_before;
    let rss = vm_hwm(pid);
    let r = bench.received.lock().unwrap();
    let complete = r
        .first
        .iter()
        .filter(|m| (1..=total).all(|s| m.contains_key(&s)))
        .count();
    let mut latencies: Vec<Duration> = Vec::with_capacity(subscribers * total as usize);
    for m in &r.first {
        for (seq, at) in m {
            if let Some(w) = seq.checked_sub(1).and_then(|i| written.get(i as usize)) {
                latencies.push(at.saturating_duration_since(*w));
            }
        }
    }
    latencies.sort();
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "{total} changes at {rate}/s written in {:.1} s",
        writing.as_secs_f64()
    );
    println!(
        "subscribers with every change: {complete} of {subscribers}; deliveries {} ({:.0}/s), {:.1} MB",
        r.deliveries,
        r.deliveries as f64 / elapsed.as_secs_f64(),
        r.bytes as f64 / 1e6
    );
    println!(
        "change -> delivery: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (the hub gathers changes for 1 s)",
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.last().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    );
    println!(
        "agent: {:.1} s CPU over {:.1} s ({:.0}% of one core), peak RSS {:.1} MiB",
        cpu,
        elapsed.as_secs_f64(),
        cpu / elapsed.as_secs_f64() * 100.0,
        rss as f64 / 1048576.0
    );
    let _ = agent.kill();
    let _ = agent.wait();
}

//! A fleet of real `webcoop-crawl` processes on one crawl, its frontier in a real
//! `redis-server` (and a three-master Redis Cluster), against the test web on loopback.
//! Asserted from the server's side and from the WARC files: every page fetched once by the
//! whole fleet, never two requests to a host closer than its delay whichever processes sent
//! them, robots.txt read once per host; and the same through `kill -9` of a process and a
//! restart of Redis.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_crawler::archives::warc;
use webcoop_testkit as testkit;
use webcoop_testkit::redis::{RedisCluster, RedisServer};
use webcoop_testkit::testweb::{HostSpec, TestWeb};

pub(super) const DELAY: f64 = 0.25;
pub(super) const HOSTS: usize = 9;
pub(super) const PAGES: usize = 24;

pub(super) fn crawl_bin() -> PathBuf {
    testkit::workspace_bin("webcoop-crawl")
}

pub(super) fn web() -> TestWeb {
    let names: Vec<String> = (0..HOSTS).map(|i| format!("h{i}.test")).collect();
    let hosts = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut h = HostSpec::new(n, PAGES);
            // Each home page links to the next host, so hosts are found as the crawl goes.
            h.links_to = vec![names[(i + 1) % HOSTS].clone()];
            h
        })
        .collect();
    TestWeb::start(hosts)
}

/// A process of the fleet; the first one gives the crawl's settings and seeds, the others
/// only the frontier and the name.
pub(super) fn process(
    web: &TestWeb,
    frontier: &str,
    out: &Path,
    first: bool,
    extra: &[&str],
) -> Command {
    let mut c = Command::new(crawl_bin());
    c.args([
        "crawl",
        "--allow-net",
        "127.0.0.0/8",
        "--frontier",
        frontier,
        "--crawl",
        "t",
        "--out",
    ])
    .arg(out)
    .args(["--progress", "quiet"])
    .args(web.resolve_args())
    .args(extra)
    .env("RUST_LOG", "info")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if first {
        c.args(["--seeds", &format!("{}/", web.origin("h0.test"))])
            .args(["--scope", "any", "--coop", "off", "--max-depth", "40"])
            .args(["--delay-min", &DELAY.to_string(), "--delay-factor", "0"]);
    }
    c
}

/// Waits until the first process has started the crawl (stored its settings and joined), so
/// that the others join its crawl rather than start one with the defaults.
pub(super) fn wait_started(frontier: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let o = Command::new(crawl_bin())
            .args(["status", "--frontier", frontier, "--crawl", "t", "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        if v["processes"].as_array().is_some_and(|p| !p.is_empty()) {
            return;
        }
        assert!(Instant::now() < deadline, "the first process did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(super) fn finish(child: Child) -> String {
    let o = child.wait_with_output().unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success(),
        "a process failed ({}):\n{text}",
        o.status
    );
    text
}

/// Every page the web has, as URLs.
pub(super) fn all_pages(web: &TestWeb) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for i in 0..HOSTS {
        let origin = web.origin(&format!("h{i}.test"));
        out.insert(format!("{origin}/"));
        for p in 0..PAGES {
            out.insert(format!("{origin}/p/{p}.html"));
        }
    }
    out
}

/// Response records of pages in every process's WARC files: URL -> (process, count).
pub(super) fn archived(out: &Path) -> HashMap<String, Vec<String>> {
    let mut found: HashMap<String, Vec<String>> = HashMap::new();
    for dir in std::fs::read_dir(out).unwrap() {
        let dir = dir.unwrap().path();
        let process = dir.file_name().unwrap().to_string_lossy().into_owned();
        let warcs = dir.join("warc");
        for (name, _) in warc::files(&warcs, "webcoop").unwrap_or_default() {
            for rec in warc::read_records(&warcs.join(name), 0).unwrap() {
                let url = rec.header("WARC-Target-URI").unwrap_or("").to_string();
                if rec.header("WARC-Type") == Some("response") && !url.ends_with("/robots.txt") {
                    found.entry(url).or_default().push(process.clone());
                }
            }
        }
    }
    found
}

/// Never two requests to a host closer than the delay, whichever process sent them, and
/// robots.txt once per host.
pub(super) fn assert_polite(web: &TestWeb, robots_reads: usize) {
    let mut by_host: HashMap<String, Vec<Instant>> = HashMap::new();
    let mut robots: HashMap<String, usize> = HashMap::new();
    for r in web.log() {
        by_host.entry(r.host.clone()).or_default().push(r.arrived);
        if r.target == "/robots.txt" {
            *robots.entry(r.host.clone()).or_default() += 1;
        }
    }
    // Arrival times carry the loopback's jitter: a little under the delay is the network's.
    let min = Duration::from_secs_f64(DELAY * 0.8);
    for (host, times) in &by_host {
        for w in times.windows(2) {
            let gap = w[1].duration_since(w[0]);
            assert!(gap >= min, "{host}: two requests {gap:?} apart");
        }
    }
    assert_eq!(robots.len(), HOSTS, "robots.txt of every host: {robots:?}");
    assert!(
        robots.values().all(|n| *n <= robots_reads),
        "robots.txt read at most {robots_reads} times per host by the whole fleet: {robots:?}"
    );
}

fn three_processes_crawl_the_web_once(frontier: &str) {
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let first = process(&web, frontier, &out, true, &[]).spawn().unwrap();
    wait_started(frontier);
    let others: Vec<Child> = (0..2)
        .map(|_| process(&web, frontier, &out, false, &[]).spawn().unwrap())
        .collect();
    let mut logs = vec![finish(first)];
    logs.extend(others.into_iter().map(finish));
    if std::env::var_os("WEBCOOP_KEEP").is_some() {
        eprintln!("kept {}", dir.keep().display());
    }
    let found = archived(&out);
    let expected = all_pages(&web);
    let missing: Vec<&String> = expected
        .iter()
        .filter(|u| !found.contains_key(*u))
        .collect();
    assert!(missing.is_empty(), "not archived: {missing:?}\n{logs:#?}");
    let twice: Vec<_> = found.iter().filter(|(_, p)| p.len() > 1).collect();
    assert!(twice.is_empty(), "archived more than once: {twice:?}");
    let counts = web.answered_counts();
    let refetched: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        refetched.is_empty(),
        "requested more than once: {refetched:?}"
    );
    assert_polite(&web, 1);
    let processes: BTreeSet<&String> = found.values().flatten().collect();
    assert_eq!(
        processes.len(),
        3,
        "every process did part of the work: {processes:?}"
    );
    // The fleet's status names the three processes, all stopped, and an empty queue.
    let o = testkit::run_ok(Command::new(crawl_bin()).args([
        "status",
        "--frontier",
        frontier,
        "--crawl",
        "t",
        "--json",
    ]));
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(status["processes"].as_array().unwrap().len(), 3, "{status}");
    assert_eq!(status["queued"], 0, "{status}");
    // Each page links a /private/ one robots.txt forbids: the process that found it recorded
    // it, once in the whole fleet, and nobody asked for it. It reaches the shared seen-set
    // only if it was found before the host's robots.txt was known (then queued, and recorded
    // by its taker without a request).
    let disallowed: u64 = status["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let dir = p["beat"]["dir"].as_str().unwrap();
            let o =
                testkit::run_ok(Command::new(crawl_bin()).args(["status", "--json", "--out", dir]));
            let own: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            own["disallowed"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(disallowed, (HOSTS * PAGES) as u64, "{status}");
    assert!(
        !counts
            .keys()
            .any(|(_, target)| target.contains("/private/")),
        "a forbidden page was requested: {counts:?}"
    );
    let seen = status["seen"].as_u64().unwrap() as usize;
    assert!(
        (expected.len()..=expected.len() + HOSTS * PAGES).contains(&seen),
        "{status}"
    );
}

#[test]
fn three_processes_on_one_redis_fetch_every_page_once_and_politely() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    three_processes_crawl_the_web_once(&redis.url());
}

#[test]
fn three_processes_on_a_redis_cluster_fetch_every_page_once_and_politely() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    three_processes_crawl_the_web_once(&cluster.frontier_url());
}

#[test]
fn a_joining_process_with_a_conflicting_setting_is_refused_by_name() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let first = process(&web, &redis.url(), &out, true, &["--max-pages", "3"])
        .spawn()
        .unwrap();
    finish(first);
    let o = process(&web, &redis.url(), &out, false, &["--delay-min", "5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("delay_min is 5.0 here but crawl \"t\" runs with 0.25"),
        "{err}"
    );
    // A refresh pass is a crawl directory's; a fleet keeps fresh with --keep-fresh.
    let o = process(&web, &redis.url(), &out, false, &["--refresh"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--refresh") && err.contains("--keep-fresh"),
        "{err}"
    );
}

/// Waits until the web has answered `n` requests.
pub(super) fn wait_for_arrivals(web: &TestWeb, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while web.arrivals() < n {
        assert!(Instant::now() < deadline, "the crawl did not get going");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fleet of three with a short lease, so that a dead process's hosts come back quickly.
fn start_three(web: &TestWeb, frontier: &str, out: &Path) -> Vec<Child> {
    let cfg = out.with_extension("toml");
    std::fs::create_dir_all(out).unwrap();
    std::fs::write(&cfg, "fleet_lease = 3\n").unwrap();
    let cfg = cfg.to_string_lossy().into_owned();
    let mut children = vec![
        process(
            web,
            frontier,
            out,
            true,
            &["--config", &cfg, "--process", "p1"],
        )
        .spawn()
        .unwrap(),
    ];
    wait_started(frontier);
    children.extend(["p2", "p3"].map(|name| {
        process(web, frontier, out, false, &["--process", name])
            .spawn()
            .unwrap()
    }));
    children
}

/// Every page archived; those archived twice are at most `bound`, all by `culprit` and one
/// other (the fetches it had not settled when it went away).
pub(super) fn assert_every_page_kept(
    web: &TestWeb,
    out: &Path,
    culprit: Option<&str>,
    bound: usize,
) {
    let found = archived(out);
    let missing: Vec<String> = all_pages(web)
        .into_iter()
        .filter(|u| !found.contains_key(u))
        .collect();
    assert!(missing.is_empty(), "lost: {missing:?}");
    let twice: Vec<(&String, &Vec<String>)> = found.iter().filter(|(_, p)| p.len() > 1).collect();
    assert!(
        twice.len() <= bound,
        "{} archived twice: {twice:?}",
        twice.len()
    );
    for (url, by) in &twice {
        assert_eq!(by.len(), 2, "{url} archived by {by:?}");
        if let Some(culprit) = culprit {
            assert!(by.iter().any(|p| p == culprit), "{url} archived by {by:?}");
        }
    }
}

#[test]
fn a_process_killed_with_sigkill_loses_nothing_and_its_hosts_are_taken_over() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let mut children = start_three(&web, &redis.url(), &out);
    wait_for_arrivals(&web, 60);
    // The second process dies at once.
    let mut victim = children.remove(1);
    victim.kill().unwrap();
    let _ = victim.wait();
    for child in children {
        finish(child);
    }
    // What it had fetched and not settled is fetched again: at most a batch's worth for
    // each of the few hosts it held.
    assert_every_page_kept(&web, &out, Some("p2"), 30);
    assert_polite(&web, 2);
}

#[test]
fn redis_restarted_mid_crawl_pauses_the_fleet_which_then_resumes_without_loss() {
    let Some(mut redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let children = start_three(&web, &redis.url(), &out);
    wait_for_arrivals(&web, 60);
    let before = web.arrivals();
    redis.restart(Duration::from_secs(2));
    let logs: Vec<String> = children.into_iter().map(finish).collect();
    assert!(
        web.arrivals() > before,
        "the crawl went on after the restart"
    );
    assert!(
        logs.iter()
            .any(|l| l.contains("unreachable") && l.contains("answers again")),
        "the pause and the resumption are logged: {logs:#?}"
    );
    // A call whose reply was lost in the restart may have its fetches made again.
    assert_every_page_kept(&web, &out, None, 10);
    assert_polite(&web, 2);
}

#[test]
fn ctrl_c_hands_the_leases_back_at_once() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    // The default lease (30 s): a process that did not hand its hosts back would leave
    // them idle that long.
    let first = process(&web, &redis.url(), &out, true, &[])
        .spawn()
        .unwrap();
    wait_for_arrivals(&web, 20);
    let _ = Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status();
    let o = first.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let status = testkit::run_ok(Command::new(crawl_bin()).args([
        "status",
        "--frontier",
        &redis.url(),
        "--crawl",
        "t",
        "--json",
    ]));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["hosts_leased"], 0, "{status}");
    assert_eq!(status["taken"], 0, "{status}");
    assert!(status["queued"].as_u64().unwrap() > 0, "{status}");
    // Another process takes over at once and finishes the crawl well within a lease.
    let started = Instant::now();
    finish(
        process(&web, &redis.url(), &out, false, &[])
            .spawn()
            .unwrap(),
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    assert_every_page_kept(&web, &out, None, 0);
}

#[test]
fn a_fleet_keyed_by_address_paces_one_server_across_processes() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    // Three host names on one server (127.0.0.1): one lease for the address, so one process
    // at a time fetches from it, and keeps it while it has work. The first process starts
    // alone and is stopped (SIGTERM) with work left: it hands the address back with its next
    // allowed time, and whichever process takes it must keep the pace across the handover.
    let names = ["a.test", "b.test", "c.test"];
    let web = TestWeb::start(names.iter().map(|n| HostSpec::new(n, 12)).collect());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let seeds: Vec<String> = names
        .iter()
        .map(|n| format!("{}/", web.origin(n)))
        .collect();
    let start = |name: &str| {
        let mut c = Command::new(crawl_bin());
        c.args([
            "crawl",
            "--allow-net",
            "127.0.0.0/8",
            "--frontier",
            &redis.url(),
            "--crawl",
            "ip",
            "--out",
        ])
        .arg(&out)
        .args(["--process", name, "--progress", "quiet", "--seeds"])
        .args(&seeds)
        .args(web.resolve_args())
        .args([
            "--coop",
            "off",
            "--delay-min",
            "0.15",
            "--delay-factor",
            "0",
        ])
        .args(["--politeness-key", "ip"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let first = start("p1");
    let began = std::time::Instant::now();
    while web.log().len() < 4 {
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "the first process fetched nothing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let others: Vec<Child> = ["p2", "p3"].map(start).into();
    std::thread::sleep(Duration::from_millis(300));
    let stopped = Command::new("kill")
        .args(["-TERM", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    // A stopped crawl says so and exits 130, as after Ctrl-C.
    let o = first.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{said}");
    assert!(said.contains("stopped before the end"), "{said}");
    for child in others {
        finish(child);
    }
    let log = web.log();
    assert!(log.len() >= 3 * 13, "{} requests", log.len());
    for w in log.windows(2) {
        let gap = w[1].arrived.duration_since(w[0].arrived);
        assert!(
            gap >= Duration::from_millis(120),
            "{}{} then {}{} only {gap:?} apart on one server",
            w[0].host,
            w[0].target,
            w[1].host,
            w[1].target
        );
    }
    let processes: BTreeSet<String> = archived(&out).into_values().flatten().collect();
    assert!(
        processes.len() >= 2 && processes.contains("p1"),
        "the server was handed over: {processes:?}"
    );
}

/// `redis-cli` against `redis`.
fn redis_cli(redis: &RedisServer, args: &[&str]) {
    let o = Command::new("redis-cli")
        .args(["-p", &redis.port.to_string()])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "redis-cli {args:?}");
}

#[test]
fn bad_names_addresses_and_stored_settings_are_refused_by_name_without_a_panic() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let refused = |args: &[&str], needle: &str| {
        let mut c = Command::new(crawl_bin());
        c.args(["crawl", "--allow-net", "127.0.0.0/8", "--out"])
            .arg(&out)
            .args(args);
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(1 | 2)),
            "{args:?}: {:?}\n{err}",
            o.status
        );
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    let url = redis.url();
    refused(
        &["--frontier", "http://10.0.0.1/", "--crawl", "t"],
        "expected redis://",
    );
    refused(
        &["--frontier", "redis+cluster://,", "--crawl", "t"],
        "no node named",
    );
    refused(
        &["--frontier", &url, "--crawl", "a{b}"],
        "is not a crawl name",
    );
    refused(
        &["--frontier", &url, "--crawl", "t", "--process", "../up"],
        "a process name is a non-empty file name",
    );
    // Another tool wrote over the crawl's settings: said, not trusted.
    redis_cli(&redis, &["set", "{t:crawl}:settings", "not json"]);
    refused(
        &["--frontier", &url, "--crawl", "t"],
        "does not hold a crawl's settings",
    );
    redis_cli(
        &redis,
        &["set", "{t:crawl}:settings", r#"{"delay_min":"soon"}"#],
    );
    refused(
        &["--frontier", &url, "--crawl", "t"],
        "the settings stored with crawl",
    );
    redis_cli(
        &redis,
        &["set", "{t:crawl}:settings", r#"{"delay_min":-5}"#],
    );
    refused(&["--frontier", &url, "--crawl", "t"], "delay_min");
    // A heartbeat that is not one is left out of the fleet's status; one stamped at either
    // end of time is shown as not alive (a stamp from the future would keep a dead process
    // alive, and the crawl waiting for it, for ever), without an overflow.
    redis_cli(&redis, &["hset", "{t:crawl}:members", "ghost", "{broken"]);
    for (name, at) in [("past", i64::MIN), ("future", i64::MAX)] {
        let beat = serde_json::json!({
            "at": at, "machine": "m", "pid": 1, "state": "running", "fetched": 0, "rate": 0.0,
            "hosts": 3, "in_flight": 1, "taken": 0, "dir": "/nowhere", "warc_bytes": 0,
        });
        redis_cli(
            &redis,
            &["hset", "{t:crawl}:members", name, &beat.to_string()],
        );
    }
    let o = testkit::run_ok(Command::new(crawl_bin()).args([
        "status",
        "--frontier",
        &url,
        "--crawl",
        "t",
        "--json",
    ]));
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let processes = status["processes"].as_array().cloned().unwrap_or_default();
    let mut names: Vec<&str> = processes
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["future", "past"], "{status}");
    assert!(
        processes.iter().all(|p| p["alive"] == false),
        "a heartbeat out of time counts as alive: {status}"
    );
}

#[test]
fn urls_found_for_a_host_given_up_do_not_keep_the_fleet_waiting() {
    use webcoop_crawler::fleet::SharedQueue;
    let Some(redis) = RedisServer::start(false) else {
        eprintln!("no redis-server: skipped");
        return;
    };
    // A farm linking a host whose robots.txt fails: the fleet gives that host up.
    let mut farm = HostSpec::new("farm.test", 1);
    farm.farm = Some(testkit::testweb::Farm {
        pages: 4,
        links: 3,
        hosts: vec!["bad.test".into()],
    });
    let mut bad = HostSpec::new("bad.test", 1);
    bad.robots = testkit::testweb::Robots::ServerError;
    let web = TestWeb::start(vec![farm, bad]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let frontier = redis.url();
    let seed = format!("{}/", web.origin("farm.test"));
    let delay = DELAY.to_string();
    let spawn = |first: bool| {
        let settings = [
            "--seeds",
            &seed,
            "--scope",
            "any",
            "--coop",
            "off",
            "--host-give-up",
            "2",
            "--delay-min",
            &delay,
            "--delay-factor",
            "0",
        ];
        let extra: &[&str] = if first { &settings } else { &[] };
        // Not piped: nothing reads the output while the test waits on the process.
        process(&web, &frontier, &out, false, extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let wait = |mut child: Child| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the process did not end: it waits for the URLs of a host given up");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(child.wait().unwrap().success());
    };
    wait(spawn(true));
    let status = || {
        let o = testkit::run_ok(Command::new(crawl_bin()).args([
            "status",
            "--frontier",
            &frontier,
            "--crawl",
            "t",
            "--json",
        ]));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let v = status();
    assert!(
        v["skipped"].to_string().contains("bad.test"),
        "given up: {v}"
    );
    // A link to it found later by another process (here written as that process would):
    // the offer queues it, for it cannot read the list of hosts given up.
    let mut q = SharedQueue::connect(&frontier, "t", "finder").unwrap();
    let host = q.host_id(&web.origin("bad.test")).unwrap();
    let late: Vec<webcoop_crawler::NewUrl> = (0..3)
        .map(|i| webcoop_crawler::NewUrl {
            seq: 0,
            host,
            url: format!("{}/late/{i}.html", web.origin("bad.test")),
            fp: webcoop_crawler::Fp(0xbad0 + i),
            depth: 2,
            hops: 0,
            priority: 1.0,
            revisit: false,
        })
        .collect();
    assert_eq!(q.offer(host, &late).unwrap(), 3);
    assert_eq!(q.queued(host).unwrap(), 3);
    // A process joining finds the host given up, drops what was queued for it and ends.
    wait(spawn(false));
    assert_eq!(q.queued(host).unwrap(), 0);
    let requested: Vec<String> = web
        .log()
        .iter()
        .filter(|r| r.host.starts_with("bad.test") && r.target.starts_with("/late/"))
        .map(|r| r.target.clone())
        .collect();
    assert!(
        requested.is_empty(),
        "fetched from a host given up: {requested:?}"
    );
}

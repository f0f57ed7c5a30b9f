//! A fleet's process names are unique in the crawl, not in a directory: processes on one
//! machine with their own `--out` directories, with one shared `--out`, and started at the
//! same instant each take a name no other live process holds, and the fleet's promises hold
//! from the server's side (every page once, no two requests to a host closer than its
//! delay), on one Redis server and on a Redis Cluster. The honest twin: a process killed
//! with SIGKILL and started again takes its own name back once its lease lapsed, and only
//! the URLs it had taken are fetched again.

use super::fleet_crawl::{all_pages, archived, assert_polite, crawl_bin, finish, process, web};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::redis::{RedisCluster, RedisServer};
use webcoop_testkit::testweb::TestWeb;

/// The fleet's status, as JSON.
fn status(frontier: &str) -> serde_json::Value {
    let o = testkit::run_ok(Command::new(crawl_bin()).args([
        "status",
        "--frontier",
        frontier,
        "--crawl",
        "t",
        "--json",
    ]));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Response records of pages in the WARC files under every directory of `outs`: URL ->
/// the process directories (as `OUT/NAME`) that archived it.
fn archived_in(outs: &[PathBuf]) -> HashMap<String, Vec<String>> {
    let mut found: HashMap<String, Vec<String>> = HashMap::new();
    for out in outs {
        let label = out.file_name().unwrap().to_string_lossy().into_owned();
        for (url, by) in archived(out) {
            let entry = found.entry(url).or_default();
            entry.extend(by.into_iter().map(|p| format!("{label}/{p}")));
        }
    }
    found
}

/// Every page archived, and none more than `bound` twice (each of those by `culprit` once,
/// when named); no page requested more often than archived.
fn assert_every_page_once(web: &TestWeb, outs: &[PathBuf], culprit: Option<&str>, bound: usize) {
    let found = archived_in(outs);
    let missing: Vec<String> = all_pages(web)
        .into_iter()
        .filter(|u| !found.contains_key(u))
        .collect();
    assert!(missing.is_empty(), "not archived: {missing:?}");
    let twice: Vec<_> = found.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(
        twice.len() <= bound,
        "{} archived more than once: {twice:?}",
        twice.len()
    );
    for (url, by) in &twice {
        assert_eq!(by.len(), 2, "{url} archived by {by:?}");
        let culprit = culprit.expect("no page may be archived twice without a kill");
        assert!(by.iter().any(|p| p == culprit), "{url} archived by {by:?}");
    }
    let refetched = web
        .answered_counts()
        .into_iter()
        .filter(|((_, target), n)| *n > 1 && target != "/robots.txt")
        .count();
    assert!(
        refetched <= bound,
        "{refetched} pages requested more than once"
    );
}

/// The names of the fleet's processes in its status, and each one's directory.
fn names(frontier: &str) -> Vec<(String, String)> {
    let status = status(frontier);
    status["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["beat"]["dir"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Three processes with the crawl's full settings each, each with its own `--out` (or all
/// three with one), started at once (or the first alone until it has started the crawl).
fn three(web: &TestWeb, frontier: &str, outs: &[PathBuf], together: bool) -> Vec<Child> {
    let mut children = Vec::new();
    for i in 0..3 {
        let out = &outs[i % outs.len()];
        children.push(process(web, frontier, out, true, &[]).spawn().unwrap());
        if i == 0 && !together {
            super::fleet_crawl::wait_started(frontier);
        }
    }
    children
}

fn outs(root: &Path, n: usize) -> Vec<PathBuf> {
    (0..n).map(|i| root.join(format!("out{i}"))).collect()
}

/// Three processes crawl the test web through `frontier`; their names are three and every
/// promise of the fleet holds.
fn three_names_one_crawl(frontier: &str, separate: bool, together: bool) {
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let outs = outs(dir.path(), if separate { 3 } else { 1 });
    let children = three(&web, frontier, &outs, together);
    let logs: Vec<String> = children.into_iter().map(finish).collect();
    let names = names(frontier);
    let distinct: BTreeSet<&String> = names.iter().map(|(n, _)| n).collect();
    assert_eq!(distinct.len(), 3, "three names: {names:?}\n{logs:#?}");
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for (name, dir) in &names {
        assert!(
            name.starts_with(&format!("{}-", machine.trim())),
            "{name}: MACHINE-N"
        );
        assert!(dir.ends_with(&format!("/{name}")), "{name} works in {dir}");
    }
    // Nobody thought another's rows were a dead process's.
    for log in &logs {
        assert!(!log.contains("taken by a process gone"), "{log}");
    }
    assert_every_page_once(&web, &outs, None, 0);
    assert_polite(&web, 1);
}

#[test]
fn processes_with_their_own_out_directories_take_three_names() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    three_names_one_crawl(&redis.url(), true, false);
}

#[test]
fn processes_started_at_the_same_instant_take_three_names() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    three_names_one_crawl(&redis.url(), true, true);
}

#[test]
fn processes_sharing_one_out_started_at_once_take_three_names() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    three_names_one_crawl(&redis.url(), false, true);
}

#[test]
fn processes_with_their_own_out_on_a_redis_cluster_take_three_names() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    three_names_one_crawl(&cluster.frontier_url(), true, true);
}

/// Waits until the fleet's status lists `n` live processes; returns it.
fn wait_alive(frontier: &str, n: usize) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = status(frontier);
        let alive = s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["alive"] == true && p["beat"]["hosts"].as_u64() > Some(0))
            .count();
        if alive >= n {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "{n} processes did not start: {s}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_name_a_live_process_holds_is_refused_by_name_and_status_shows_who_holds_what() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let outs = outs(dir.path(), 2);
    let frontier = redis.url();
    let first = process(&web, &frontier, &outs[0], true, &["--process", "crawler-a"])
        .spawn()
        .unwrap();
    let s = wait_alive(&frontier, 1);
    // status names the process, its machine, pid, directory and hosts.
    let p = &s["processes"][0];
    assert_eq!(p["name"], "crawler-a", "{s}");
    assert_eq!(p["beat"]["pid"], first.id(), "{s}");
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(p["beat"]["machine"], machine.trim(), "{s}");
    let held = p["beat"]["held"].as_array().unwrap();
    assert!(!held.is_empty(), "{s}");
    assert!(
        held.iter()
            .all(|h| h.as_str().unwrap().starts_with("http://h")),
        "{s}"
    );
    let text = testkit::run_ok(Command::new(crawl_bin()).args([
        "status",
        "--frontier",
        &frontier,
        "--crawl",
        "t",
    ]));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("pid {} on {}", first.id(), machine.trim()))
            && text.contains(" holds http://h"),
        "{text}"
    );
    // The same name from another directory: refused, naming the holder; nothing written.
    let o = process(
        &web,
        &frontier,
        &outs[1],
        false,
        &["--process", "crawler-a"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("process name \"crawler-a\" is held by a live process")
            && err.contains(&format!("pid {}", first.id()))
            && err.contains("give another --process"),
        "{err}"
    );
    assert!(
        !outs[1].join("crawler-a").join("crawl.sqlite").exists(),
        "the refused process opened a state"
    );
    let log = finish(first);
    assert!(!log.contains("taken by a process gone"), "{log}");
    // Stopped, the name is given back: the same directory's next run takes it at once.
    let started = Instant::now();
    finish(
        process(
            &web,
            &frontier,
            &outs[1],
            false,
            &["--process", "crawler-a"],
        )
        .spawn()
        .unwrap(),
    );
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_process_killed_and_started_again_takes_its_own_name_back_and_requeues_only_its_own_urls() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let outs = outs(dir.path(), 3);
    let frontier = redis.url();
    // A short lease, so that the dead process's name and hosts come back quickly.
    let cfg = dir.path().join("fleet.toml");
    std::fs::write(&cfg, "fleet_lease = 3\n").unwrap();
    let cfg = cfg.to_string_lossy().into_owned();
    let mut children = vec![
        process(&web, &frontier, &outs[0], true, &["--config", &cfg])
            .spawn()
            .unwrap(),
    ];
    super::fleet_crawl::wait_started(&frontier);
    children.extend((1..3).map(|i| {
        process(&web, &frontier, &outs[i], false, &[])
            .spawn()
            .unwrap()
    }));
    wait_alive(&frontier, 3);
    let before = names(&frontier);
    let mut victim = children.remove(1);
    let (victim_name, victim_dir) = before
        .iter()
        .find(|(_, d)| d.starts_with(&outs[1].display().to_string()))
        .cloned()
        .unwrap_or_else(|| panic!("no process in {}: {before:?}", outs[1].display()));
    victim.kill().unwrap();
    let killed = Instant::now();
    let _ = victim.wait();
    let again = process(&web, &frontier, &outs[1], false, &[])
        .spawn()
        .unwrap();
    let mut logs: Vec<String> = children.into_iter().map(finish).collect();
    let log = finish(again);
    let waited = killed.elapsed();
    // Its own name, taken back from its last run (not another's, not a new one).
    assert!(
        log.contains(&format!("process {victim_name}: its name taken back")),
        "{log}"
    );
    let after = names(&frontier);
    assert_eq!(after.len(), 3, "{after:?}");
    assert!(
        after.contains(&(victim_name.clone(), victim_dir.clone())),
        "{after:?}"
    );
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
    // The live processes' URLs were never taken for the dead one's: pages fetched twice
    // are only the dead process's, and few.
    let culprit = format!(
        "{}/{victim_name}",
        outs[1].file_name().unwrap().to_string_lossy()
    );
    assert_every_page_once(&web, &outs, Some(&culprit), 30);
    assert_polite(&web, 2);
    logs.push(log);
    for log in &logs {
        assert!(!log.contains("held by a live process"), "{log}");
    }
}

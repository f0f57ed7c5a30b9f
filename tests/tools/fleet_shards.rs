//! A fleet split by owner (`--shard I/N`): real `webcoop-crawl` processes that each own the
//! hosts whose names hash to their index, on a real `redis-server`, against the test web on
//! loopback. Asserted from the server's side and from the WARC files: every page fetched once
//! by the whole fleet, each host only by its owner, politely; the same through `kill -9` of a
//! shard and its restart; and an inbox holding what a shard does not understand or does not
//! own refused line by line, beside the honest line that is crawled.

use super::fleet_crawl::{
    DELAY, HOSTS, PAGES, all_pages, archived, assert_polite, crawl_bin, finish, wait_for_arrivals,
    web,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use webcoop_crawler::fleet::shard_of;
use webcoop_testkit::redis::RedisServer;
use webcoop_testkit::testweb::TestWeb;

/// Shard `i` of `n`, every one given the same settings and seed.
fn shard(web: &TestWeb, frontier: &str, out: &Path, (i, n): (u32, u32), extra: &[&str]) -> Command {
    let cfg = out.with_extension("toml");
    std::fs::create_dir_all(out).unwrap();
    // A short lease: a restarted shard waits out its dead self's membership. Not the
    // shortest: a loop whose saves' fsyncs stalled on CI's busy disk once went 3 s without
    // renewing its own, and the shard stopped as lapsed.
    std::fs::write(&cfg, "fleet_lease = 6\n").unwrap();
    let mut c = Command::new(crawl_bin());
    c.args([
        "crawl",
        "--allow-net",
        "127.0.0.0/8",
        "--frontier",
        frontier,
    ])
    .args(["--crawl", "t", "--shard", &format!("{i}/{n}"), "--out"])
    .arg(out)
    .args(["--config", &cfg.to_string_lossy()])
    .args(["--progress", "quiet"])
    .args(web.resolve_args())
    .args(["--seeds", &format!("{}/", web.origin("h0.test"))])
    .args(["--scope", "any", "--coop", "off", "--max-depth", "40"])
    .args(["--delay-min", &DELAY.to_string(), "--delay-factor", "0"])
    .args(extra)
    .env("RUST_LOG", "info")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // WEBCOOP_SHARD_LOGS=DIR: each shard's log in a file there, to watch a run that hangs
    // (the tests that read a refusal from stderr then fail).
    if let Ok(dir) = std::env::var("WEBCOOP_SHARD_LOGS") {
        let f = std::fs::File::create(format!("{dir}/shard-{i}-{}.log", std::process::id()));
        if let Ok(f) = f {
            c.stderr(f);
        }
    }
    c
}

/// Shards 0 and 1 of 2, run together to their end; their logs.
fn both_shards(web: &TestWeb, redis: &RedisServer, out: &Path) -> Vec<String> {
    let children: Vec<Child> = (0..2)
        .map(|i| shard(web, &redis.url(), out, (i, 2), &[]).spawn().unwrap())
        .collect();
    children.into_iter().map(finish).collect()
}

/// The hosts of the test web by the shard that owns them, of `n`.
fn owners(web: &TestWeb, n: u32) -> BTreeMap<u32, Vec<String>> {
    let mut out: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for i in 0..HOSTS {
        let origin = web.origin(&format!("h{i}.test"));
        out.entry(shard_of(&origin, n)).or_default().push(origin);
    }
    out
}

fn redis_cli(redis: &RedisServer, args: &[&str]) -> String {
    let o = Command::new("redis-cli")
        .args(["-p", &redis.port.to_string()])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "redis-cli {args:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Every page archived by the shard that owns its host, at most `twice` of them twice.
fn assert_each_host_by_its_owner(web: &TestWeb, out: &Path, twice: usize) {
    let found = archived(out);
    let missing: Vec<String> = all_pages(web)
        .into_iter()
        .filter(|u| !found.contains_key(u))
        .collect();
    assert!(missing.is_empty(), "not archived: {missing:?}");
    let doubled: Vec<_> = found.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(doubled.len() <= twice, "archived twice: {doubled:?}");
    for (url, by) in &found {
        let origin = url.split('/').take(3).collect::<Vec<_>>().join("/");
        let owner = format!("shard-{}", shard_of(&origin, 2));
        assert!(
            by.iter().all(|p| *p == owner),
            "{url} archived by {by:?}, owner {owner}"
        );
    }
    let processes: BTreeSet<&String> = found.values().flatten().collect();
    assert_eq!(processes.len(), 2, "both shards crawled: {processes:?}");
}

#[test]
fn two_shards_fetch_every_page_once_each_host_by_its_owner_and_end_together() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let owned = owners(&web, 2);
    assert_eq!(
        owned.len(),
        2,
        "the test web's hosts fall in both shards: {owned:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let logs = both_shards(&web, &redis, &out);
    assert_each_host_by_its_owner(&web, &out, 0);
    let refetched: Vec<_> = web
        .answered_counts()
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .collect();
    assert!(
        refetched.is_empty(),
        "requested more than once: {refetched:?}\n{logs:#?}"
    );
    assert_polite(&web, 1);
    // The links crossed: the seed's host has one owner, and every host was reached.
    assert!(logs.iter().all(|l| !l.contains("refused")), "{logs:#?}");
    for i in 0..2 {
        assert_eq!(
            redis_cli(&redis, &["llen", &format!("{{t:shards}}:inbox:{i}")]),
            "0"
        );
    }
    assert_eq!(redis_cli(&redis, &["hlen", "{t:shards}:idle"]), "2");
    // The fleet's status shows both shards idle, their inboxes taken in, nobody holding them.
    let o = Command::new(crawl_bin())
        .args([
            "status",
            "--frontier",
            &redis.url(),
            "--crawl",
            "t",
            "--json",
        ])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let shards = status["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 2, "{status}");
    for s in shards {
        assert_eq!(s["idle"], true, "{status}");
        assert_eq!(s["inbox"], 0, "{status}");
        assert_eq!(s["member"], false, "left at the end: {status}");
        assert!(
            s["trimmed"].as_u64().unwrap() > 0,
            "links crossed: {status}"
        );
    }
    // Each shard's own state holds only its hosts' pages.
    for (i, origins) in &owned {
        let o = Command::new(crawl_bin())
            .args(["status", "--json", "--out"])
            .arg(out.join(format!("shard-{i}")))
            .output()
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let fetched = status["fetched"].as_u64().unwrap_or(0) as usize;
        // Its hosts' pages, their home pages, and the robots-forbidden /private/ links
        // recorded without a request are all that it holds.
        assert!(
            fetched >= origins.len() * (PAGES + 1),
            "shard {i} fetched {fetched} for {} hosts: {status}",
            origins.len()
        );
    }
}

#[test]
fn a_shard_killed_with_sigkill_resumes_where_its_state_was_saved() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    let first = shard(&web, &redis.url(), &out, (0, 2), &[])
        .spawn()
        .unwrap();
    let mut victim = shard(&web, &redis.url(), &out, (1, 2), &[])
        .spawn()
        .unwrap();
    wait_for_arrivals(&web, 40);
    std::thread::sleep(Duration::from_millis(700));
    victim.kill().unwrap();
    let _ = victim.wait();
    let killed_at = std::time::Instant::now();
    // The restart waits out the dead process's membership (the lease, 6 s), then goes on
    // from its saved state; the other shard waited for it meanwhile.
    let again = shard(&web, &redis.url(), &out, (1, 2), &[])
        .spawn()
        .unwrap();
    let first = finish(first);
    let again = finish(again);
    // What the victim fetched after its last save is fetched again: a batch at most (a
    // second of pages, one a quarter second per host).
    assert_each_host_by_its_owner(&web, &out, HOSTS * 4);
    let again_asked = web
        .log()
        .iter()
        .filter(|r| r.arrived > killed_at)
        .filter(|r| shard_of(&web.origin(&r.host), 2) == 1)
        .count();
    assert!(
        again_asked > 0,
        "the restarted shard went on with its hosts"
    );
    let refetched = web.answered_counts().values().filter(|n| **n > 1).count();
    assert!(refetched <= HOSTS * 4, "{refetched} requested twice");
    assert_polite(&web, 2);
    assert!(
        !first.contains("refused") && !again.contains("refused"),
        "{first}\n{again}"
    );
}

/// Runs `cmd`, which must fail with `why` in its error and without a panic.
fn refused(cmd: &mut Command, why: &str) {
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains(why), "{why}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_shard_refuses_another_split_a_held_index_and_inbox_lines_it_does_not_own_or_understand() {
    // Refused before Redis is asked.
    let bare = |shard: &str, extra: &[&str]| {
        let mut c = Command::new(crawl_bin());
        c.args([
            "crawl",
            "--frontier",
            "redis://127.0.0.1:1/0",
            "--crawl",
            "t",
        ])
        .args(["--shard", shard, "--seeds", "http://127.0.0.1:1/"])
        .args(["--out", "/nonexistent"])
        .args(extra);
        c
    };
    for given in ["2/2", "0/0", "x", "1/2000", "1/"] {
        refused(&mut bare(given, &[]), "expected I/N");
    }
    refused(
        &mut bare("0/2", &["--politeness-key", "ip"]),
        "politeness by host name",
    );

    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let web = web();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    // Another split of the same crawl is refused by name.
    redis_cli(&redis, &["set", "{t:shards}:n", "3"]);
    let mut split = shard(&web, &redis.url(), &out, (0, 2), &[]);
    refused(&mut split, "split into 3 shards, not 2");
    redis_cli(&redis, &["del", "{t:shards}:n"]);
    // An index a live process holds is refused once its lease has passed.
    let held = ["set", "{t:shards}:member:1", "someone", "px", "60000"];
    redis_cli(&redis, &held);
    let mut taken = shard(&web, &redis.url(), &out, (1, 2), &[]);
    refused(&mut taken, "held by another live process");
    redis_cli(&redis, &["del", "{t:shards}:member:1"]);

    // Shard 0's inbox, before it starts: a page of a host it owns (the honest twin: it is
    // crawled though no link leads there), the same page on a host shard 1 owns, and lines
    // no build writes.
    let owned = owners(&web, 2);
    let mine = &owned[&0][0];
    let theirs = &owned[&1][0];
    let lines = format!(
        "u 1 0 {mine}/p/private-only-by-inbox\nu 1 0 {theirs}/p/not-for-shard-0\nzzz\n\
         c 00000000000000ff NaN\nu 1 0 ftp://h0.test/x\n"
    );
    redis_cli(&redis, &["rpush", "{t:shards}:inbox:0", &lines]);
    let logs = both_shards(&web, &redis, &out);
    let targets: BTreeSet<(String, String)> = web.answered_counts().into_keys().collect();
    let host_of = |origin: &str| {
        origin
            .trim_start_matches("http://")
            .split(':')
            .next()
            .unwrap()
            .to_string()
    };
    assert!(
        targets.contains(&(host_of(mine), "/p/private-only-by-inbox".to_string())),
        "the honest line was crawled"
    );
    assert!(
        !targets.iter().any(|(_, t)| t == "/p/not-for-shard-0"),
        "a line for another shard's host was followed"
    );
    let log = &logs[0];
    assert!(log.contains("its host belongs to another shard"), "{log}");
    assert!(log.contains("lines refused"), "{log}");
    assert!(logs.iter().all(|l| !l.contains("panicked")), "{logs:#?}");
    // The rest of the crawl went on as without them.
    assert_each_host_by_its_owner(&web, &out, 0);
}

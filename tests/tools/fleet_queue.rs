//! The fleet's queue on real Redis: processes (threads, each with its own connection) find the
//! same URLs and take work from the same hosts; every URL is queued once and handed out once,
//! a row whose taker dies comes back when its lease expires, and a retry keeps its count. On
//! one `redis-server` and on a three-master Redis Cluster; with the memory a queued URL costs.
//! Without `redis-server` each test skips, or fails where tools are required (`RedisServer::start`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use webcoop_crawler::NewUrl;
use webcoop_crawler::fleet::{Settle, SharedQueue};
use webcoop_crawler::{Fp, HostId};
use webcoop_testkit::redis::{RedisCluster, RedisServer};

const LEASE: Duration = Duration::from_secs(30);

/// `n` URLs of site `site`, priced 0 to 6 in turn.
pub(super) fn offers(site: usize, n: usize) -> Vec<NewUrl> {
    (0..n)
        .map(|i| NewUrl {
            seq: 0,
            host: HostId(0),
            url: format!("http://s{site}.test/{i}"),
            fp: Fp((site * 1_000_000 + i) as u64),
            depth: 1,
            hops: 0,
            priority: (i % 7) as f64,
            revisit: false,
        })
        .collect()
}

/// Three processes each find every URL of five sites, then take and settle until nothing is
/// left; returns how often each URL was handed out.
fn crawl_together(url: &str) -> HashMap<String, usize> {
    let fetched: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let threads: Vec<_> = (0..3)
        .map(|p| {
            let (url, fetched) = (url.to_string(), fetched.clone());
            std::thread::spawn(move || {
                let mut q = SharedQueue::connect(&url, "test", &format!("p{p}")).unwrap();
                let hosts: Vec<HostId> = (0..5)
                    .map(|s| q.host_id(&format!("http://s{s}.test")).unwrap())
                    .collect();
                for (s, host) in hosts.iter().enumerate() {
                    for chunk in offers(s, 60).chunks(7) {
                        q.offer(*host, chunk).unwrap();
                    }
                }
                loop {
                    let mut any = false;
                    for host in &hosts {
                        for t in q.take(*host, 4, LEASE).unwrap() {
                            any = true;
                            *fetched
                                .lock()
                                .unwrap()
                                .entry(t.job.url.clone())
                                .or_default() += 1;
                            assert!(q.settle(*host, &t, Settle::Done).unwrap());
                        }
                    }
                    if !any {
                        break;
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    Arc::try_unwrap(fetched).unwrap().into_inner().unwrap()
}

fn assert_each_once(fetched: &HashMap<String, usize>) {
    assert_eq!(fetched.len(), 300, "every URL handed out");
    let twice: Vec<_> = fetched.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "handed out more than once: {twice:?}");
}

#[test]
fn processes_finding_the_same_urls_queue_and_fetch_each_once() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    assert_each_once(&crawl_together(&redis.url()));
}

#[test]
fn a_redis_cluster_queues_and_hands_out_each_url_once() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let ports: Vec<String> = cluster
        .nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    assert_each_once(&crawl_together(&format!(
        "redis+cluster://{}",
        ports.join(",")
    )));
}

/// A redis-server with processes `a` and `b` on crawl `crawl`, and the id of one host.
fn two_processes(crawl: &str) -> Option<(RedisServer, SharedQueue, SharedQueue, HostId)> {
    let redis = RedisServer::start(false)?;
    let mut a = SharedQueue::connect(&redis.url(), crawl, "a").unwrap();
    let b = SharedQueue::connect(&redis.url(), crawl, "b").unwrap();
    let host = a.host_id("http://o.test").unwrap();
    Some((redis, a, b, host))
}

#[test]
fn rows_come_out_best_first_then_in_arrival_order_and_a_dead_takers_rows_come_back() {
    let Some((_redis, mut a, mut b, host)) = two_processes("test") else {
        return;
    };
    assert_eq!(
        b.host_id("http://o.test").unwrap(),
        host,
        "one id in every process"
    );
    let mut urls = offers(9, 6);
    urls[4].priority = 100.0;
    assert_eq!(a.offer(host, &urls).unwrap(), 6);
    assert_eq!(b.offer(host, &urls).unwrap(), 0, "seen");
    let order: Vec<String> = a
        .take(host, 6, LEASE)
        .unwrap()
        .into_iter()
        .map(|t| t.job.url)
        .collect();
    assert_eq!(order[0], "http://s9.test/4", "the most cash first");
    // The rest by priority (i % 7 here is i), then arrival.
    assert_eq!(
        order[1..],
        [
            "http://s9.test/5",
            "http://s9.test/3",
            "http://s9.test/2",
            "http://s9.test/1",
            "http://s9.test/0"
        ]
    );
    // A taker that dies: its rows come back once their lease expires, not before.
    let more = offers(8, 3);
    a.offer(host, &more).unwrap();
    let short = Duration::from_millis(300);
    let lost = a.take(host, 3, short).unwrap();
    assert_eq!(lost.len(), 3);
    drop(a);
    assert!(b.take(host, 3, LEASE).unwrap().is_empty(), "still leased");
    std::thread::sleep(short + Duration::from_millis(100));
    let back = b.take(host, 3, LEASE).unwrap();
    assert_eq!(back.len(), 3, "the dead taker's rows come back");
    // A retry keeps its place and counts the attempt; settling a row taken over fails.
    assert!(b.settle(host, &back[0], Settle::Retry).unwrap());
    let again = b.take(host, 1, LEASE).unwrap();
    assert_eq!(again[0].job.url, back[0].job.url);
    assert_eq!(again[0].job.attempts, 1);
    assert!(
        !b.settle(host, &lost[1], Settle::Done).unwrap(),
        "its lease had expired"
    );
    assert_eq!(b.queued(host).unwrap(), 0);
    // A revisit is queued although seen.
    let mut revisit = urls[0].clone();
    revisit.revisit = true;
    assert_eq!(b.offer(host, &[revisit]).unwrap(), 1);
}

#[test]
fn urls_offered_by_their_host_s_holder_are_taken_at_once_and_come_back_if_it_dies() {
    let Some((redis, mut a, mut b, host)) = two_processes("held") else {
        return;
    };
    // b found two of them first: those stay queued as b offered them.
    let urls = offers(7, 5);
    assert_eq!(b.offer(host, &urls[3..]).unwrap(), 2);
    let short = Duration::from_millis(300);
    let mut twice = urls.clone();
    twice.push(urls[0].clone());
    let held = a.offer_held(host, &twice, short).unwrap();
    let mut got: Vec<(String, f64)> = held
        .iter()
        .map(|t| (t.job.url.clone(), t.job.priority))
        .collect();
    got.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        got,
        [
            ("http://s7.test/0".to_string(), 0.0),
            ("http://s7.test/1".to_string(), 1.0),
            ("http://s7.test/2".to_string(), 2.0)
        ],
        "the new ones, once each, with their cash"
    );
    assert!(held.iter().all(|t| t.job.attempts == 0 && !t.job.revisit));
    assert_eq!(b.queued(host).unwrap(), 2, "held rows are not queued");
    assert!(
        a.offer_held(host, &urls, short).unwrap().is_empty(),
        "seen: nothing new to hold"
    );
    // a settles one and dies: the other two come back to whoever takes next, after the lease.
    assert!(a.settle(host, &held[0], Settle::Done).unwrap());
    drop(a);
    let first: Vec<String> = b
        .take(host, 5, LEASE)
        .unwrap()
        .into_iter()
        .map(|t| t.job.url)
        .collect();
    assert_eq!(
        first.len(),
        2,
        "only b's own two while a's lease runs: {first:?}"
    );
    std::thread::sleep(short + Duration::from_millis(100));
    let mut back: Vec<String> = b
        .take(host, 5, LEASE)
        .unwrap()
        .into_iter()
        .map(|t| t.job.url)
        .collect();
    back.sort();
    let mut expected: Vec<String> = held[1..].iter().map(|t| t.job.url.clone()).collect();
    expected.sort();
    assert_eq!(
        back, expected,
        "the dead holder's rows come back, the settled one not"
    );
    // A revisit offered by a holder is queued, not held.
    let mut revisit = urls[0].clone();
    revisit.revisit = true;
    let mut c = SharedQueue::connect(&redis.url(), "held", "c").unwrap();
    assert!(c.offer_held(host, &[revisit], LEASE).unwrap().is_empty());
    assert_eq!(c.queued(host).unwrap(), 1);
}

#[test]
fn cash_paid_by_any_process_reorders_the_shared_queue() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let mut a = SharedQueue::connect(&redis.url(), "cash", "a").unwrap();
    let mut b = SharedQueue::connect(&redis.url(), "cash", "b").unwrap();
    let host = a.host_id("http://o.test").unwrap();
    let mut urls = offers(3, 3);
    for (u, cash) in urls.iter_mut().zip([0.1, 0.2, 0.3]) {
        u.priority = cash;
    }
    assert_eq!(a.offer(host, &urls).unwrap(), 3);
    // Process b read pages linking to the first URL: OPIC pays it, though a queued it.
    b.deposit(host, &[(urls[0].fp, 0.5)]).unwrap();
    // Process b found the second URL too, with cash of its own: the shares add up.
    let mut found = urls[1].clone();
    found.priority = 0.25;
    assert_eq!(b.offer(host, &[found]).unwrap(), 0, "queued once");
    let taken = b.take(host, 3, LEASE).unwrap();
    let got: Vec<(String, f64)> = taken
        .iter()
        .map(|t| {
            (
                t.job.url.clone(),
                (t.job.priority * 1000.0).round() / 1000.0,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("http://s3.test/0".to_string(), 0.6),
            ("http://s3.test/1".to_string(), 0.45),
            ("http://s3.test/2".to_string(), 0.3),
        ]
    );
    // Cash owed to a URL taken meanwhile is not created out of nothing.
    b.deposit(host, &[(urls[2].fp, 9.0)]).unwrap();
    assert!(b.settle(host, &taken[2], Settle::Return).unwrap());
    assert_eq!(b.take(host, 1, LEASE).unwrap()[0].job.priority, 0.3);
}

/// Cash owed to one or two URLs of a host is paid by a command per URL, to more by one read
/// and one write: either way only URLs still queued are paid, and each gets its own share.
#[test]
fn cash_owed_to_few_or_many_urls_of_a_host_is_paid_alike() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let mut q = SharedQueue::connect(&redis.url(), "owed", "a").unwrap();
    let host = q.host_id("http://o.test").unwrap();
    let mut urls = offers(5, 6);
    for u in urls.iter_mut() {
        u.priority = 0.0;
    }
    assert_eq!(q.offer(host, &urls).unwrap(), 6);
    // One URL taken: cash owed to it is not created out of nothing, by either way of paying.
    let first = q.take(host, 1, LEASE).unwrap();
    let gone = first[0].job.fp;
    let fp = |i: usize| urls[i].fp;
    let others: Vec<usize> = (0..6).filter(|&i| fp(i) != gone).collect();
    // Few: one URL named twice (its shares add up) and the taken one.
    q.deposit(
        host,
        &[(fp(others[0]), 1.0), (gone, 50.0), (fp(others[0]), 0.5)],
    )
    .unwrap();
    // Many: three URLs, the taken one among them.
    q.deposit(
        host,
        &[(fp(others[1]), 4.0), (fp(others[2]), 2.0), (gone, 60.0)],
    )
    .unwrap();
    let taken = q.take(host, 10, LEASE).unwrap();
    let got: Vec<(u64, f64)> = taken.iter().map(|t| (t.job.fp.0, t.job.priority)).collect();
    assert_eq!(
        &got[..3],
        [
            (fp(others[1]).0, 4.0),
            (fp(others[2]).0, 2.0),
            (fp(others[0]).0, 1.5)
        ]
    );
    assert_eq!(got.len(), 5, "the taken URL was not queued again by cash");
    assert!(got[3..].iter().all(|(_, cash)| *cash == 0.0));
}

/// The scripts send each command once per bucket, not once per row: one call naming a URL
/// twice must still answer as two calls in a row would.
#[test]
fn one_call_naming_a_url_twice_answers_as_two_calls_would() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let mut q = SharedQueue::connect(&redis.url(), "twice", "a").unwrap();
    let host = q.host_id("http://o.test").unwrap();
    let urls = offers(4, 3);
    let with = |i: usize, cash: f64, revisit: bool| NewUrl {
        priority: cash,
        revisit,
        ..urls[i].clone()
    };
    // Found twice in one batch: queued once, with both shares.
    assert_eq!(
        q.offer(host, &[with(0, 0.25, false), with(0, 0.5, false)])
            .unwrap(),
        1
    );
    // Queued before, found again twice: both shares added to what it had.
    assert_eq!(q.offer(host, &[with(1, 0.125, false)]).unwrap(), 1);
    assert_eq!(
        q.offer(host, &[with(1, 0.25, false), with(1, 0.5, false)])
            .unwrap(),
        0
    );
    // Paid, then queued again as a revisit in the same batch: the revisit's cash, as
    // `ZADD` after `ZADD INCR` would leave it, then paid again after.
    assert_eq!(q.offer(host, &[with(2, 0.125, false)]).unwrap(), 1);
    let batch = [
        with(2, 4.0, false),
        with(2, 0.0625, true),
        with(2, 1.0, false),
    ];
    assert_eq!(q.offer(host, &batch).unwrap(), 1);
    q.deposit(host, &[(urls[0].fp, 1.0), (urls[0].fp, 2.0)])
        .unwrap();
    let taken = q.take(host, 10, LEASE).unwrap();
    let got: Vec<(u64, f64)> = taken.iter().map(|t| (t.job.fp.0, t.job.priority)).collect();
    assert_eq!(
        got,
        [
            (urls[0].fp.0, 3.75),
            (urls[2].fp.0, 1.0625),
            (urls[1].fp.0, 0.875)
        ]
    );
    assert!(taken[1].job.revisit, "the revisit's row replaced the first");
    // Settled with the same row named twice: settled once.
    let twice = [taken[0].clone(), taken[0].clone(), taken[1].clone()];
    assert_eq!(q.settle_done(host, &twice).unwrap(), 2);
    assert!(
        !q.settle(host, &taken[0], Settle::Done).unwrap(),
        "already done"
    );
    assert!(q.settle(host, &taken[2], Settle::Retry).unwrap());
    let again = q.take(host, 10, LEASE).unwrap();
    assert_eq!(again.len(), 1, "done rows stay done: {again:?}");
    assert_eq!((again[0].job.fp, again[0].job.attempts), (urls[1].fp, 1));
    assert_eq!(
        q.offer(host, &urls).unwrap(),
        0,
        "every one of them stays seen"
    );
}

/// A taking's rows are one string of fingerprints and cash, searched for the rows settled: a
/// fingerprint whose bytes also occur across a row's boundary (the end of another's
/// fingerprint and the start of its cash) settles its own row, and the other stays held.
#[test]
fn a_fingerprint_found_across_a_row_boundary_settles_only_its_own_row() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let mut q = SharedQueue::connect(&redis.url(), "boundary", "a").unwrap();
    let host = q.host_id("http://o.test").unwrap();
    let a = 0x1111_1111_2222_2222u64;
    let mut tail = [0u8; 8];
    tail[..4].copy_from_slice(&a.to_be_bytes()[4..]);
    tail[4..].copy_from_slice(&0.5f64.to_be_bytes()[..4]);
    // The second half of a's fingerprint, then the first half of its cash (0.5).
    let b = u64::from_be_bytes(tail);
    let url = |fp: u64, cash: f64, i: usize| NewUrl {
        seq: 0,
        host: HostId(0),
        url: format!("http://o.test/{i}"),
        fp: Fp(fp),
        depth: 1,
        hops: 0,
        priority: cash,
        revisit: false,
    };
    assert_eq!(
        q.offer(host, &[url(a, 0.5, 0), url(b, 0.25, 1)]).unwrap(),
        2
    );
    let taken = q.take(host, 10, LEASE).unwrap();
    let fps: Vec<u64> = taken.iter().map(|t| t.job.fp.0).collect();
    assert_eq!(
        fps,
        [a, b],
        "held in this order, b's bytes straddling a's row"
    );
    assert!(q.settle(host, &taken[1], Settle::Return).unwrap());
    let back = q.take(host, 10, LEASE).unwrap();
    assert_eq!(back.len(), 1, "only b came back: {back:?}");
    assert_eq!((back[0].job.fp.0, back[0].job.priority), (b, 0.25));
    assert!(
        q.settle(host, &taken[0], Settle::Done).unwrap(),
        "a is still held"
    );
    assert!(q.settle(host, &back[0], Settle::Done).unwrap());
    assert!(q.take(host, 10, LEASE).unwrap().is_empty());
}

#[test]
fn a_queued_url_costs_little_memory_in_redis() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let mut q = SharedQueue::connect(&redis.url(), "test", "p").unwrap();
    let used = || {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &redis.port.to_string(), "info", "memory"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap()
    };
    let before = used();
    let n = 20_000;
    // Ten hosts, each with 2,000 URLs of about 40 bytes.
    for s in 0..10 {
        let host = q.host_id(&format!("http://s{s}.test")).unwrap();
        for chunk in offers(s, n / 10).chunks(500) {
            q.offer(host, chunk).unwrap();
        }
    }
    let per_url = (used() - before) as f64 / n as f64;
    eprintln!("Redis memory per queued URL: {per_url:.0} B");
    // About 155 B: the fingerprint as the queue's member (so that any process can pay it
    // cash), and as the field of its row, which is also the seen-set, in a bucket small
    // enough to be a listpack. docs/ARCHITECTURE.md has the sums.
    assert!(per_url < 190.0, "{per_url:.0} B per queued URL");
}

#[test]
fn a_crawl_begun_with_another_frontier_layout_is_refused_by_name() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &redis.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    // A crawl an older build began: its keys, and no layout named.
    cli(&["SET", "{old:crawl}:host_ids", "3"]);
    let err = SharedQueue::connect(&redis.url(), "old", "p")
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("\"old\"") && err.contains("layout is 1"),
        "{err}"
    );
    // A layout this build does not know.
    cli(&["SET", "{odd:crawl}:layout", "9"]);
    let err = SharedQueue::connect(&redis.url(), "odd", "p")
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("layout is 9"), "{err}");
    // A new crawl is marked, and a second process joins it.
    let mut q = SharedQueue::connect(&redis.url(), "new", "p").unwrap();
    let host = q.host_id("http://s0.test").unwrap();
    assert_eq!(q.offer(host, &offers(0, 3)).unwrap(), 3);
    let mut other = SharedQueue::connect(&redis.url(), "new", "q").unwrap();
    let taken = other.take(host, 3, LEASE).unwrap();
    assert_eq!(taken.len(), 3);
    assert!(
        taken
            .iter()
            .all(|t| t.job.url.starts_with("http://s0.test/"))
    );
}

/// Processes starting together on a new crawl: one marks its layout and gives out the first
/// host id while the others check it; none may take the other's first id for an older crawl.
#[test]
fn processes_starting_together_on_a_new_crawl_are_all_let_in() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    for round in 0..20 {
        let start = Arc::new(std::sync::Barrier::new(6));
        let joined: Vec<_> = (0..6)
            .map(|p| {
                let (url, start) = (redis.url(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let mut q =
                        SharedQueue::connect(&url, &format!("new{round}"), &format!("p{p}"))?;
                    q.host_id(&format!("http://h{p}.test"))
                })
            })
            .collect();
        for j in joined {
            let joined = j.join().unwrap();
            assert!(joined.is_ok(), "round {round}: {joined:?}");
        }
    }
}

#[test]
fn a_host_grown_through_many_bucket_splits_keeps_every_row_once() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let mut q = SharedQueue::connect(&redis.url(), "grow", "p").unwrap();
    let host = q.host_id("http://s1.test").unwrap();
    // 30,000 rows: their buckets split about 700 times, some while rows are taken.
    let urls = offers(1, 30_000);
    let mut taken = Vec::new();
    for (i, chunk) in urls.chunks(1000).enumerate() {
        assert_eq!(q.offer(host, chunk).unwrap(), chunk.len());
        if i % 5 == 0 {
            taken.extend(q.take(host, 100, LEASE).unwrap());
        }
    }
    // Offered again: every one is seen, wherever its bucket went.
    for chunk in urls.chunks(1000) {
        assert_eq!(q.offer(host, chunk).unwrap(), 0);
    }
    // Rows taken before the splits settle where their rows went since.
    for t in &taken[..50] {
        assert!(q.settle(host, t, Settle::Retry).unwrap());
    }
    for t in &taken[50..] {
        assert!(q.settle(host, t, Settle::Done).unwrap());
    }
    let mut seen = std::collections::HashSet::new();
    let mut retried = 0;
    loop {
        let batch = q.take(host, 1000, LEASE).unwrap();
        if batch.is_empty() {
            break;
        }
        for t in &batch {
            assert!(seen.insert(t.job.url.clone()), "{} twice", t.job.url);
            retried += usize::from(t.job.attempts == 1);
            assert!(q.settle(host, t, Settle::Done).unwrap());
        }
    }
    assert_eq!(seen.len() + taken.len() - 50, 30_000);
    assert_eq!(retried, 50, "a retry's count survives its row's move");
    assert_eq!(q.queued(host).unwrap(), 0);
}

#[test]
fn offers_on_a_cluster_whose_nodes_forgot_their_scripts_still_count_each_url_once() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let mut q = SharedQueue::connect(&cluster.frontier_url(), "test", "p").unwrap();
    let hosts: Vec<HostId> = (0..6)
        .map(|s| q.host_id(&format!("http://s{s}.test")).unwrap())
        .collect();
    for (s, host) in hosts.iter().enumerate() {
        assert_eq!(q.offer(*host, &offers(s, 10)).unwrap(), 10);
    }
    // Every node restarts its script cache: the next offers, ten seen and five new per
    // host, are counted as the first were, and each URL is handed out once.
    super::fleet_leases::flush_scripts(&cluster);
    for (s, host) in hosts.iter().enumerate() {
        assert_eq!(q.offer(*host, &offers(s, 15)).unwrap(), 5, "host {s}");
    }
    for (s, host) in hosts.iter().enumerate() {
        let taken = q.take(*host, 100, LEASE).unwrap();
        let mut urls: Vec<String> = taken.iter().map(|t| t.job.url.clone()).collect();
        urls.sort();
        urls.dedup();
        assert_eq!((taken.len(), urls.len()), (15, 15), "host {s}");
        assert_eq!(q.settle_done(*host, &taken).unwrap(), 15);
        assert_eq!(q.queued(*host).unwrap(), 0);
    }
}

/// Ids of `n` hosts (`s0.test`, ...) on `q`, with the batch script loaded first (a server
/// that lacks it answers each call, then runs it again) and one URL of the first host seen.
pub(super) fn hosts_first_seen(q: &mut SharedQueue, n: usize) -> Vec<HostId> {
    let hosts: Vec<HostId> = (0..n)
        .map(|s| q.host_id(&format!("http://s{s}.test")).unwrap())
        .collect();
    assert_eq!(q.offer(hosts[0], &offers(0, 1)).unwrap(), 1);
    hosts
}

/// `n` URLs offered to each of `hosts`, in one batch.
pub(super) fn batch_of(hosts: &[HostId], n: usize) -> Vec<(HostId, Vec<NewUrl>)> {
    hosts
        .iter()
        .enumerate()
        .map(|(s, h)| (*h, offers(s, n)))
        .collect()
}

/// Offers of 300 hosts in one batch on `url`: each host's part answered for itself, only
/// new URLs queued, and each host's URLs back from its own queue once; `calls` counts the
/// script calls the two batches made, where it can.
fn a_batch_of_many_hosts(url: &str, calls: impl Fn() -> u64) -> u64 {
    let mut q = SharedQueue::connect(url, "test", "p").unwrap();
    let hosts = hosts_first_seen(&mut q, 300);
    let batch = |n| batch_of(&hosts, n);
    let before = calls();
    let queued: HashMap<HostId, usize> = q.offer_many(batch(3)).unwrap().into_iter().collect();
    let again: HashMap<HostId, usize> = q.offer_many(batch(5)).unwrap().into_iter().collect();
    let made = calls() - before;
    for (s, h) in hosts.iter().enumerate() {
        assert_eq!(
            queued.get(h),
            Some(if s == 0 { &2 } else { &3 }),
            "host {s}"
        );
        assert_eq!(again.get(h), Some(&2), "host {s}");
        let taken = q.take(*h, 100, LEASE).unwrap();
        let mut urls: Vec<String> = taken.iter().map(|t| t.job.url.clone()).collect();
        urls.sort();
        let mut want: Vec<String> = offers(s, 5).into_iter().map(|u| u.url).collect();
        want.sort();
        assert_eq!(urls, want, "host {s}");
        assert_eq!(q.settle_done(*h, &taken).unwrap(), 5, "host {s}");
    }
    made
}

#[test]
fn a_batch_for_hundreds_of_hosts_is_a_call_per_group_and_queues_each_url_once() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let port = redis.port;
    let made = a_batch_of_many_hosts(&redis.url(), || super::fleet_leases::script_calls(port));
    // Two batches of 300 hosts in 32 groups, where a call per host made 600.
    assert!(
        made <= 64,
        "{made} script calls for two batches of 300 hosts"
    );
    assert!(made >= 2, "{made}: the counter counts nothing");
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    a_batch_of_many_hosts(&cluster.frontier_url(), || 0);
}

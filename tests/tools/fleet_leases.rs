//! The fleet's politeness invariant on real Redis: processes (here threads, each with its own
//! connection, as each process has) contend for the same hosts through `HostLeases`, on one
//! `redis-server` and on a three-master Redis Cluster. Whatever the interleaving, a host never
//! has more requests under way than its limit, requests start no sooner than the delay after
//! the one before ended, and a holder that dies blocks the host only until its lease expires.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop_crawler::fleet::FleetError;
use webcoop_crawler::fleet::{Grant, HostLeases};
use webcoop_testkit::redis::{RedisCluster, RedisServer};

const HOLD: Duration = Duration::from_millis(15);
const DELAY: Duration = Duration::from_millis(40);
const LEASE: Duration = Duration::from_secs(10);

/// Every request made to each host: (host, start, end), in local monotonic time.
type Log = Arc<Mutex<Vec<(String, Instant, Instant)>>>;

/// `processes` holders take `per_host` leases on each host in turn, each request held for
/// `HOLD`, then released with `DELAY`.
fn contend(url: &str, hosts: &[&str], processes: usize, per_host: usize, limit: usize) -> Log {
    let log: Log = Arc::default();
    let mut threads = Vec::new();
    for p in 0..processes {
        let (url, log) = (url.to_string(), log.clone());
        let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        threads.push(std::thread::spawn(move || {
            let mut leases = HostLeases::connect(&url, "test", &format!("p{p}")).unwrap();
            for host in &hosts {
                let mut done = 0;
                while done < per_host {
                    match leases.acquire(host, limit, LEASE, DELAY).unwrap() {
                        Grant::Granted(token) => {
                            let start = Instant::now();
                            std::thread::sleep(HOLD);
                            let end = Instant::now();
                            log.lock().unwrap().push((host.clone(), start, end));
                            assert!(leases.release(host, &token, DELAY).unwrap());
                            done += 1;
                        }
                        Grant::Wait(d) => std::thread::sleep(d.min(Duration::from_millis(20))),
                        Grant::Busy => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    log
}

/// With a limit of one: no overlap, and a gap of at least the delay (less the 1 ms the
/// server's clock rounds to) between one request's end and the next one's start.
fn assert_polite(log: &Log, hosts: &[&str], expected_each: usize) {
    let log = log.lock().unwrap();
    for host in hosts {
        let mut spans: Vec<(Instant, Instant)> = log
            .iter()
            .filter(|(h, _, _)| h == host)
            .map(|(_, s, e)| (*s, *e))
            .collect();
        assert_eq!(spans.len(), expected_each, "{host}");
        spans.sort();
        for w in spans.windows(2) {
            let gap = w[1].0.saturating_duration_since(w[0].1);
            assert!(
                w[1].0 >= w[0].1 && gap + Duration::from_millis(2) >= DELAY,
                "{host}: a request started {gap:?} after the one before ended"
            );
        }
    }
}

#[test]
fn one_server_keeps_every_host_polite_across_processes() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let log = contend(&redis.url(), &["http://a.test", "http://b.test"], 3, 6, 1);
    assert_polite(&log, &["http://a.test", "http://b.test"], 18);
}

#[test]
fn a_connection_limit_of_two_is_never_exceeded() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let log = contend(&redis.url(), &["http://c.test"], 4, 5, 2);
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 20);
    let mut most = 0;
    for (_, s, _) in log.iter() {
        let under_way = log.iter().filter(|(_, s2, e2)| s2 <= s && e2 > s).count();
        most = most.max(under_way);
    }
    assert!(most <= 2, "{most} requests under way at once");
}

#[test]
fn a_dead_holder_blocks_its_host_only_until_its_lease_expires() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let host = "http://d.test";
    let mut dead = HostLeases::connect(&redis.url(), "test", "dead").unwrap();
    let lease = Duration::from_millis(400);
    let Grant::Granted(_) = dead.acquire(host, 1, lease, DELAY).unwrap() else {
        panic!("the first lease is granted")
    };
    let taken = Instant::now();
    drop(dead); // the process dies without giving the lease back
    let mut other = HostLeases::connect(&redis.url(), "test", "other").unwrap();
    assert_eq!(other.acquire(host, 1, LEASE, DELAY).unwrap(), Grant::Busy);
    let granted = loop {
        match other.acquire(host, 1, LEASE, DELAY).unwrap() {
            Grant::Granted(_) => break taken.elapsed(),
            Grant::Wait(d) => std::thread::sleep(d),
            Grant::Busy => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    assert!(
        granted >= lease + DELAY - Duration::from_millis(2),
        "taken over after {granted:?}"
    );
    assert!(granted < lease + Duration::from_secs(2), "{granted:?}");
}

#[test]
fn a_renewed_lease_outlives_its_first_term_and_an_expired_one_cannot_be_renewed() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let host = "http://e.test";
    let short = Duration::from_millis(200);
    let mut a = HostLeases::connect(&redis.url(), "test", "a").unwrap();
    let mut b = HostLeases::connect(&redis.url(), "test", "b").unwrap();
    let Grant::Granted(token) = a.acquire(host, 1, short, DELAY).unwrap() else {
        panic!("granted")
    };
    std::thread::sleep(Duration::from_millis(120));
    assert!(a.renew(host, &token, short).unwrap());
    std::thread::sleep(Duration::from_millis(120));
    assert_eq!(b.acquire(host, 1, short, DELAY).unwrap(), Grant::Busy);
    std::thread::sleep(Duration::from_millis(200));
    assert!(matches!(
        b.acquire(host, 1, short, DELAY).unwrap(),
        Grant::Wait(_) | Grant::Granted(_)
    ));
    assert!(
        !a.renew(host, &token, short).unwrap(),
        "expired, then taken over"
    );
    assert!(!a.release(host, &token, DELAY).unwrap());
}

#[test]
fn a_redis_cluster_keeps_hosts_on_every_master_polite() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let url = format!(
        "redis+cluster://{}",
        cluster
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect::<Vec<_>>()
            .join(",")
    );
    let hosts = [
        "http://a.test",
        "http://b.test",
        "http://c.test",
        "http://d.test",
        "http://e.test",
        "http://f.test",
    ];
    let log = contend(&url, &hosts, 3, 3, 1);
    assert_polite(&log, &hosts, 9);
    // The hosts' keys are spread over the masters, each host's keys in one slot.
    let holding = cluster
        .nodes
        .iter()
        .filter(|n| {
            let out = std::process::Command::new("redis-cli")
                .args(["-p", &n.port.to_string(), "dbsize"])
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).trim() != "0"
        })
        .count();
    assert!(holding >= 2, "keys on {holding} masters");
}

#[test]
fn a_bad_frontier_address_is_named() {
    let e = HostLeases::connect("http://localhost/", "test", "p")
        .err()
        .expect("refused");
    assert!(matches!(e, FleetError::Address { .. }), "{e}");
    assert!(e.to_string().contains("redis://HOST:PORT/DB"), "{e}");
    let e = HostLeases::connect("redis://127.0.0.1:1/", "test", "p")
        .err()
        .expect("nothing listens on port 1");
    assert!(
        e.to_string().starts_with("frontier redis://127.0.0.1:1/"),
        "{e}"
    );
}

/// Every master of `cluster` forgets its scripts, as a restarted node has.
pub(crate) fn flush_scripts(cluster: &RedisCluster) {
    for n in &cluster.nodes {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &n.port.to_string(), "script", "flush"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    }
}

/// A lease on `host` for `lease`, waiting out the host's delay.
fn granted(leases: &mut HostLeases, host: &str, lease: Duration) -> String {
    for _ in 0..100 {
        match leases.acquire(host, 1, lease, DELAY).unwrap() {
            Grant::Granted(token) => return token,
            Grant::Wait(d) => std::thread::sleep(d.min(Duration::from_millis(50))),
            Grant::Busy => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    panic!("{host}: no lease in 100 tries")
}

#[test]
fn leases_renewed_together_on_a_cluster_say_which_was_lost_even_once_its_nodes_forgot_the_script() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let url = cluster.frontier_url();
    let hosts: Vec<String> = (0..12).map(|i| format!("http://h{i}.test")).collect();
    let short = Duration::from_millis(300);
    let mut a = HostLeases::connect(&url, "test", "a").unwrap();
    let mut b = HostLeases::connect(&url, "test", "b").unwrap();
    let held: Vec<(String, String)> = hosts
        .iter()
        .map(|h| (h.clone(), granted(&mut a, h, short)))
        .collect();
    // Renewed together, every lease outlives its first term.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(a.renew_many(&held, short).unwrap(), vec![true; 12]);
    std::thread::sleep(Duration::from_millis(200));
    for h in &hosts {
        assert_eq!(b.acquire(h, 1, short, DELAY).unwrap(), Grant::Busy, "{h}");
    }
    // One of them expires and changes hands: renewed with the others, after every node lost
    // its scripts (as a node that restarts does), it alone is said lost.
    let others: Vec<(String, String)> = (0..12)
        .filter(|&i| i != 5)
        .map(|i| held[i].clone())
        .collect();
    assert_eq!(a.renew_many(&others, LEASE).unwrap(), vec![true; 11]);
    std::thread::sleep(short);
    granted(&mut b, &hosts[5], LEASE);
    flush_scripts(&cluster);
    let mut want = vec![true; 12];
    want[5] = false;
    assert_eq!(a.renew_many(&held, LEASE).unwrap(), want);
}

/// Calls of `EVALSHA` the server on `port` has answered.
pub(super) fn script_calls(port: u16) -> u64 {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string(), "info", "commandstats"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn renewing_hundreds_of_leases_is_a_call_per_group_not_per_host() {
    let Some(redis) = RedisServer::start(false) else {
        return;
    };
    let url = redis.url();
    let mut a = HostLeases::connect(&url, "test", "a").unwrap();
    let mut b = HostLeases::connect(&url, "test", "b").unwrap();
    let short = Duration::from_millis(400);
    let hosts: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let held: Vec<(String, String)> = hosts
        .iter()
        .map(|h| (h.clone(), granted(&mut a, h, short)))
        .collect();
    // A few lapse and change hands; the rest are renewed together.
    std::thread::sleep(short + Duration::from_millis(50));
    let lapsed = [7, 150, 299];
    for &i in &lapsed {
        granted(&mut b, &hosts[i], LEASE);
    }
    // The script loaded first (a server that lacks it answers each call, then runs it again).
    let none = [("none".to_string(), "none".to_string())];
    assert_eq!(a.renew_many(&none, LEASE).unwrap(), vec![false]);
    let before = script_calls(redis.port);
    let kept = a.renew_many(&held, LEASE).unwrap();
    let calls = script_calls(redis.port) - before;
    // 300 leases in 32 groups (one call each), where a call per lease made 300.
    assert!(calls <= 32, "{calls} script calls renewed 300 leases");
    let want: Vec<bool> = (0..300).map(|i| !lapsed.contains(&i)).collect();
    assert_eq!(kept, want);
    // Renewed in their groups, the others are still held: nobody else gets them.
    for (i, h) in hosts
        .iter()
        .enumerate()
        .filter(|(i, _)| !lapsed.contains(i))
    {
        assert_eq!(b.acquire(h, 1, LEASE, DELAY).unwrap(), Grant::Busy, "{i}");
    }
}

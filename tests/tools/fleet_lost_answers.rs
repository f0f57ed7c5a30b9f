//! The fleet's calls to Redis when an answer is lost: a proxy lets a call through, lets the
//! server run it, and closes the connection before the answer comes back. The process sends
//! the call again on a new connection (as after any broken connection), and that second
//! sending must not run the call's effects twice: a batch's counts, its cash and the URLs it
//! held for the process, a taking's URLs and a host's lease are what the first sending made.

use super::fleet_queue::{batch_of, hosts_first_seen, offers};
use std::collections::HashMap;
use std::time::Duration;
use webcoop_crawler::fleet::{Grant, HostLeases, SharedQueue};
use webcoop_crawler::{HostId, NewUrl};
use webcoop_testkit::redis::RedisServer;
use webcoop_testkit::reply_cutter::ReplyCutter;

const LEASE: Duration = Duration::from_secs(30);

/// A server, and a proxy in front of it whose next answer to a script call can be lost.
fn cut_server() -> Option<(RedisServer, ReplyCutter, String)> {
    let redis = RedisServer::start(false)?;
    let cutter = ReplyCutter::start(redis.port).unwrap();
    let url = format!("redis://127.0.0.1:{}/", cutter.port);
    Some((redis, cutter, url))
}

#[test]
fn a_batch_sent_again_after_its_answer_was_lost_counts_pays_and_holds_as_the_first_time() {
    let Some((_redis, cutter, url)) = cut_server() else {
        return;
    };
    let mut q = SharedQueue::connect(&url, "test", "p").unwrap();
    let hosts = hosts_first_seen(&mut q, 40);
    let batch = |n| batch_of(&hosts, n);

    cutter.cut_answer_to(b"EVALSHA");
    let queued: HashMap<HostId, usize> = q.offer_many(batch(3)).unwrap().into_iter().collect();
    assert_eq!(
        (cutter.cut(), cutter.connections()),
        (1, 2),
        "the answer was lost"
    );
    for (s, h) in hosts.iter().enumerate() {
        let want = if s == 0 { 2 } else { 3 };
        assert_eq!(
            queued.get(h),
            Some(&want),
            "host {s}: counted as the first sending"
        );
    }
    // The twin: the same URLs offered by a new batch are seen, and counted so.
    let again: HashMap<HostId, usize> = q.offer_many(batch(3)).unwrap().into_iter().collect();
    assert!(again.values().all(|n| *n == 0), "{again:?}");

    // Cash paid once, though the payment ran and was sent again.
    let url0 = offers(0, 1).remove(0);
    cutter.cut_answer_to(b"EVALSHA");
    q.deposit(hosts[0], &[(url0.fp, 5.0)]).unwrap();
    assert_eq!(cutter.cut(), 2);
    let taken = q.take(hosts[0], 1, LEASE).unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].job.fp, url0.fp, "the URL paid comes first");
    // Its cash: 0 from each of its three offers, and the 5 paid once.
    assert_eq!(taken[0].job.priority, 5.0, "paid once");
    assert_eq!(q.settle_done(hosts[0], &taken).unwrap(), 1);

    // URLs held for this process as they are offered: the same ones, once.
    let fresh: Vec<NewUrl> = offers(1, 6).split_off(3);
    cutter.cut_answer_to(b"EVALSHA");
    let held = q.offer_held(hosts[1], &fresh, LEASE).unwrap();
    assert_eq!(cutter.cut(), 3);
    let mut got: Vec<u64> = held.iter().map(|t| t.job.fp.0).collect();
    got.sort();
    assert_eq!(got, fresh.iter().map(|u| u.fp.0).collect::<Vec<_>>());
    assert_eq!(
        q.settle_done(hosts[1], &held).unwrap(),
        3,
        "each still held, once"
    );
    let rest = q.take(hosts[1], 100, LEASE).unwrap();
    assert_eq!(
        rest.len(),
        3,
        "the three offered first, not the held ones again"
    );
    assert_eq!(q.settle_done(hosts[1], &rest).unwrap(), 3);
    assert_eq!(q.queued(hosts[1]).unwrap(), 0);
}

#[test]
fn a_taking_sent_again_after_its_answer_was_lost_hands_out_the_same_urls() {
    let Some((_redis, cutter, url)) = cut_server() else {
        return;
    };
    let mut q = SharedQueue::connect(&url, "test", "p").unwrap();
    let host = q.host_id("http://s0.test").unwrap();
    let empty = q.host_id("http://empty.test").unwrap();
    assert_eq!(q.offer(host, &offers(0, 10)).unwrap(), 10);
    assert!(
        q.take(empty, 1, LEASE).unwrap().is_empty(),
        "the script loaded"
    );

    cutter.cut_answer_to(b"EVALSHA");
    let first = q.take(host, 4, LEASE).unwrap();
    assert_eq!(cutter.cut(), 1, "the answer was lost");
    assert_eq!(first.len(), 4);
    // The twin: a new taking hands out the next URLs, not the same.
    let second = q.take(host, 100, LEASE).unwrap();
    assert_eq!(
        second.len(),
        6,
        "none of the first taking's URLs stayed held twice"
    );
    let mut urls: Vec<&str> = first.iter().chain(&second).map(|t| &*t.job.url).collect();
    urls.sort();
    urls.dedup();
    assert_eq!(urls.len(), 10, "each URL handed out once");
    assert_eq!(q.settle_done(host, &first).unwrap(), 4);
    assert_eq!(q.settle_done(host, &second).unwrap(), 6);
    assert!(q.take(host, 100, LEASE).unwrap().is_empty());
}

#[test]
fn a_lease_granted_to_a_call_whose_answer_was_lost_is_granted_to_it_again() {
    let Some((_redis, cutter, url)) = cut_server() else {
        return;
    };
    let mut leases = HostLeases::connect(&url, "test", "p").unwrap();
    let delay = Duration::from_millis(100);
    let Grant::Granted(warm) = leases.acquire("http://w.test", 1, LEASE, delay).unwrap() else {
        panic!("a free host's lease is granted");
    };
    leases
        .release("http://w.test", &warm, Duration::ZERO)
        .unwrap();

    cutter.cut_answer_to(b"EVALSHA");
    let Grant::Granted(token) = leases.acquire("http://s.test", 1, LEASE, delay).unwrap() else {
        panic!("the lease the lost answer granted is this call's, not another's");
    };
    assert_eq!(cutter.cut(), 1, "the answer was lost");
    // The twin: the lease is held, so another asking is refused until it is given back.
    let mut other = HostLeases::connect(&url, "test", "q").unwrap();
    assert_eq!(
        other.acquire("http://s.test", 1, LEASE, delay).unwrap(),
        Grant::Busy
    );
    assert!(leases.release("http://s.test", &token, delay).unwrap());
}

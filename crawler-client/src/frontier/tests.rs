//! The frontier's order, politeness and persistence, on SQLite and in memory.

use super::*;
use crate::ids::{Fp, HostId};
use crate::state::{Batch, Store};
use politeness::DelayWhy;
use queue_store::memory::MemoryQueue;
use std::fmt::Debug;
use std::time::Duration;

/// A queue store the tests can save batches to.
trait Saves: QueueStore<Error: Debug> {
    fn save_batch(&mut self, new_urls: Vec<NewUrl>, done: Vec<i64>);
}

impl Saves for Store {
    fn save_batch(&mut self, new_urls: Vec<NewUrl>, done: Vec<i64>) {
        let batch = Batch {
            new_urls,
            done,
            ..Default::default()
        };
        self.commit(&batch).unwrap();
    }
}

impl Saves for MemoryQueue {
    fn save_batch(&mut self, new_urls: Vec<NewUrl>, done: Vec<i64>) {
        self.save(new_urls, &done);
    }
}

fn load<S: Saves>(q: &S, per_host: usize) -> Frontier {
    Frontier::load(q, per_host, 0.15, |_| {
        (RobotsState::Unknown, None, Instant::now())
    })
    .unwrap()
}

fn save<S: Saves>(f: &mut Frontier, q: &mut S, settled: &[(HostId, i64)], done: Vec<i64>) {
    q.save_batch(f.drain_pending(), done);
    f.saved(settled);
}

fn page(d: Option<Dispatch>) -> Queued {
    match d {
        Some(Dispatch::Page(q)) => q,
        other => panic!("expected a page, got {other:?}"),
    }
}

#[test]
fn robots_first_then_fifo_with_politeness_and_spill_to_the_store() {
    let dir = tempfile::tempdir().unwrap();
    robots_first_then_fifo(Store::open(dir.path()).unwrap());
    robots_first_then_fifo(MemoryQueue::default());
}

fn robots_first_then_fifo<S: Saves>(mut q: S) {
    let mut f = load(&q, 1);
    let h = f.host_for(&q, "http://e.com").unwrap();
    for i in 0..40 {
        let url = format!("http://e.com/{i}");
        assert!(f.push(h, url.clone(), Fp(i), 0, 0));
        assert!(!f.push(h, url, Fp(i), 0, 0), "seen");
    }
    assert_eq!(f.queued(), 40);
    let now = Instant::now();
    assert!(matches!(f.next(&q, now).unwrap(), Some(Dispatch::Robots(id)) if id == h));
    assert!(
        f.next(&q, now).unwrap().is_none(),
        "one connection, busy with robots.txt"
    );
    f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
    f.finished(h, now);
    // Half the URLs are saved before they are needed, half are not: the order holds.
    save(&mut f, &mut q, &[], vec![]);
    let mut got = Vec::new();
    let mut settled = Vec::new();
    for i in 0..40 {
        let t = Instant::now();
        let job = page(f.next(&q, t).unwrap());
        assert!(f.next(&q, t).unwrap().is_none(), "one at a time");
        got.push(job.url.clone());
        settled.push((h, job.seq));
        f.finished(h, t);
        if i == 20 {
            for j in 40..45 {
                f.push(h, format!("http://e.com/{j}"), Fp(j), 1, 0);
            }
        }
        if i % 7 == 0 {
            let done: Vec<i64> = settled.iter().map(|s| s.1).collect();
            save(&mut f, &mut q, &settled, done);
            settled.clear();
        }
    }
    let expected: Vec<String> = (0..40).map(|i| format!("http://e.com/{i}")).collect();
    assert_eq!(got, expected);
    let mut rest = Vec::new();
    for _ in 0..5 {
        let q = page(f.next(&q, Instant::now()).unwrap());
        f.finished(h, Instant::now());
        rest.push(q.url);
    }
    assert_eq!(
        rest,
        (40..45)
            .map(|i| format!("http://e.com/{i}"))
            .collect::<Vec<_>>()
    );
    assert!(f.next(&q, Instant::now()).unwrap().is_none());
}

#[test]
fn a_host_queues_no_more_than_its_cap_and_others_are_not_held_back() {
    let mut q = MemoryQueue::default();
    let mut f = load(&q, 1);
    f.set_queue_cap(10);
    let (trap, other) = (
        f.host_for(&q, "http://trap.test").unwrap(),
        f.host_for(&q, "http://other.test").unwrap(),
    );
    let queued = (0..1000u64)
        .filter(|i| f.push(trap, format!("http://trap.test/{i}"), Fp(*i), 0, 0))
        .count();
    assert_eq!(queued, 10);
    // Refused URLs are not marked seen: they can be queued once there is room.
    assert!(!f.seen(Fp(999)));
    assert!(f.push(other, "http://other.test/".into(), Fp(5000), 0, 0));
    save(&mut f, &mut q, &[], vec![]);
    assert_eq!(f.queued(), 11);
}

#[test]
fn a_host_waits_for_its_delay_and_others_go_meanwhile() {
    let q = MemoryQueue::default();
    let mut f = load(&q, 1);
    let a = f.host_for(&q, "http://a.com").unwrap();
    let b = f.host_for(&q, "http://b.com").unwrap();
    let far = Instant::now() + Duration::from_secs(3600);
    for (h, n) in [(a, 0u64), (b, 100)] {
        f.push(h, format!("x{n}"), Fp(n), 0, 0);
        f.push(h, format!("y{n}"), Fp(n + 1), 0, 0);
        f.robots_known(h, Rules::AllowAll, far);
    }
    let now = Instant::now();
    let first = page(f.next(&q, now).unwrap());
    let second = page(f.next(&q, now).unwrap());
    assert_ne!(first.host, second.host);
    f.finished(a, now + Duration::from_secs(10));
    f.finished(b, now);
    let third = page(f.next(&q, now).unwrap());
    assert_eq!(third.host, b, "a must wait 10 s");
    f.finished(b, now);
    assert!(f.next(&q, now).unwrap().is_none());
    assert_eq!(f.next_wakeup(), Some(now + Duration::from_secs(10)));
    assert_eq!(
        page(f.next(&q, now + Duration::from_secs(10)).unwrap()).host,
        a
    );
}

#[test]
fn a_retried_url_is_handed_out_again_once() {
    let mut q = MemoryQueue::default();
    let mut f = load(&q, 1);
    let h = f.host_for(&q, "http://e.com").unwrap();
    for i in 0..20 {
        f.push(h, format!("http://e.com/{i}"), Fp(i), 0, 0);
    }
    f.robots_known(h, Rules::AllowAll, Instant::now() + Duration::from_secs(60));
    save(&mut f, &mut q, &[], vec![]);
    let first = page(f.next(&q, Instant::now()).unwrap());
    f.finished(h, Instant::now());
    f.requeue(first.clone());
    let again = page(f.next(&q, Instant::now()).unwrap());
    f.finished(h, Instant::now());
    assert_eq!(again.seq, first.seq, "a retry goes first");
    // The save that records the retry's attempt count settles nothing: the row is taken
    // again and must not come back from the database while it is.
    save(&mut f, &mut q, &[], vec![]);
    let mut order = vec![again.seq];
    while let Some(d) = f.next(&q, Instant::now()).unwrap() {
        let q = page(Some(d));
        order.push(q.seq);
        f.finished(h, Instant::now());
    }
    assert_eq!(order.len(), 20, "{order:?}");
    assert_eq!(
        order.iter().filter(|s| **s == first.seq).count(),
        1,
        "{order:?}"
    );
}

#[test]
fn the_queue_survives_a_reload_and_the_seen_set_with_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut q = Store::open(dir.path()).unwrap();
        let mut f = load(&q, 2);
        let h = f.host_for(&q, "http://e.com").unwrap();
        for i in 0..30 {
            f.push(h, format!("http://e.com/{i}"), Fp(i), 0, 0);
        }
        save(&mut f, &mut q, &[], vec![]);
    }
    let q = Store::open(dir.path()).unwrap();
    let mut f = load(&q, 2);
    let h = f.host_for(&q, "http://e.com").unwrap();
    assert_eq!(f.queued(), 30);
    assert!(!f.push(h, "http://e.com/3".into(), Fp(3), 0, 0));
    assert!(f.push(h, "http://e.com/new".into(), Fp(999), 0, 0));
    f.robots_known(h, Rules::AllowAll, Instant::now() + Duration::from_secs(60));
    let now = Instant::now();
    let a = page(f.next(&q, now).unwrap());
    let b = page(f.next(&q, now).unwrap());
    assert_eq!(
        (a.url.as_str(), b.url.as_str()),
        ("http://e.com/0", "http://e.com/1")
    );
    assert!(f.next(&q, now).unwrap().is_none(), "two connections");
    assert!(b.seq > a.seq);
    f.abandon(h, "gone".into());
    assert_eq!(f.queued(), 0);
}

#[test]
fn cash_orders_urls_within_a_host_and_hosts_among_those_ready() {
    let mut q = MemoryQueue::default();
    let mut f = load(&q, 1);
    let a = f.host_for(&q, "http://a.com").unwrap();
    let b = f.host_for(&q, "http://b.com").unwrap();
    let far = Instant::now() + Duration::from_secs(3600);
    f.robots_known(a, Rules::AllowAll, far);
    f.robots_known(b, Rules::AllowAll, far);
    f.push(a, "http://a.com/".into(), Fp(1), 0, 0);
    f.endow_seeds(&[Fp(1)]);
    for (fp, host, url) in [
        (2, a, "http://a.com/x"),
        (3, a, "http://a.com/y"),
        (4, b, "http://b.com/z"),
    ] {
        assert!(f.push(host, url.into(), Fp(fp), 1, 0));
    }
    // The seed is read: y gets cash twice (two links), x once, z once.
    let home = page(f.next(&q, Instant::now()).unwrap());
    assert_eq!(home.fp, Fp(1));
    f.finished(a, Instant::now());
    f.read_cash(Fp(1), &[Fp(3), Fp(2), Fp(3), Fp(4)]);
    assert!(f.cash().cash(Fp(3)) > f.cash().cash(Fp(2)));
    save(&mut f, &mut q, &[(a, home.seq)], vec![home.seq]);
    let now = Instant::now();
    let first = page(f.next(&q, now).unwrap());
    assert_eq!(
        first.url, "http://a.com/y",
        "a's best URL has more cash than b's"
    );
    let second = page(f.next(&q, now).unwrap());
    assert_eq!(second.url, "http://b.com/z");
    f.finished(a, now);
    assert_eq!(page(f.next(&q, now).unwrap()).url, "http://a.com/x");
    assert!((f.cash().total() - 1.0).abs() < 1e-9);
}

#[test]
fn refills_from_a_cursor_hand_out_every_url_once_in_order_and_see_what_a_save_adds() {
    let dir = tempfile::tempdir().unwrap();
    refills_from_a_cursor(Store::open(dir.path()).unwrap());
    refills_from_a_cursor(MemoryQueue::default());
}

fn refills_from_a_cursor<S: Saves>(mut q: S) {
    let mut f = load(&q, 1);
    let h = f.host_for(&q, "http://e.com").unwrap();
    f.robots_known(
        h,
        Rules::AllowAll,
        Instant::now() + Duration::from_secs(3600),
    );
    // Many more URLs than one refill reads, all saved: later refills read after a cursor.
    for i in 0..300 {
        assert!(f.push(h, format!("http://e.com/{i}"), Fp(i), 1, 0));
    }
    save(&mut f, &mut q, &[], vec![]);
    let mut got = Vec::new();
    let mut settled = Vec::new();
    let mut revisit_at = None;
    for i in 0..301 {
        let t = Instant::now();
        let job = page(f.next(&q, t).unwrap());
        f.finished(h, t);
        if job.revisit {
            revisit_at = Some(i);
        } else {
            got.push(job.fp.0);
        }
        settled.push((h, job.seq));
        if i == 100 {
            // A revisit ranks before everything: once saved, the next refill must find it,
            // although the cursor is past where it sorts.
            f.push_revisit(h, "http://e.com/0".into(), Fp(0), 0);
        }
        if i % 9 == 0 {
            let done: Vec<i64> = settled.iter().map(|s| s.1).collect();
            save(&mut f, &mut q, &settled, done);
            settled.clear();
        }
    }
    assert!(
        f.next(&q, Instant::now()).unwrap().is_none(),
        "nothing left"
    );
    assert_eq!(got, (0..300).collect::<Vec<u64>>(), "each once, in order");
    let at = revisit_at.expect("the revisit was handed out");
    assert!(
        (101..=126).contains(&at),
        "handed out at {at}: within a refill of its save"
    );
}

#[test]
fn a_host_with_no_delay_is_handed_requests_ahead_which_leave_the_crawl_s_count() {
    let q = MemoryQueue::default();
    let mut f = load(&q, 2);
    let h = f.host_for(&q, "http://e.com").unwrap();
    for i in 0..20 {
        assert!(f.push(h, format!("http://e.com/{i}"), Fp(i), 0, 0));
    }
    let now = Instant::now();
    assert!(matches!(
        f.next(&q, now).unwrap(),
        Some(Dispatch::Robots(_))
    ));
    f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
    f.finished(h, now);
    // Without lookahead: as many as its connections.
    let first: Vec<Queued> = (0..2).map(|_| page(f.next(&q, now).unwrap())).collect();
    assert!(f.next(&q, now).unwrap().is_none(), "two connections");
    assert_eq!(f.surplus(), 0);
    // Its delay is zero: four more, which wait on the fetching side.
    f.set_lookahead(h, 4);
    let ahead: Vec<Queued> = (0..4).map(|_| page(f.next(&q, now).unwrap())).collect();
    assert!(
        f.next(&q, now).unwrap().is_none(),
        "two connections and four ahead"
    );
    assert_eq!((f.surplus(), f.in_flight()), (4, 6));
    // One ends: one fewer ahead, and one more may be handed out.
    f.finished(h, now);
    assert_eq!(f.surplus(), 3);
    let more = page(f.next(&q, now).unwrap());
    assert_eq!(f.surplus(), 4);
    // A delay appears: no more ahead; what waited comes back, in front of the queue.
    f.set_lookahead(h, 0);
    f.returned(more);
    for job in ahead.into_iter().rev() {
        f.returned(job);
    }
    assert_eq!((f.surplus(), f.in_flight()), (0, 1));
    let next = page(f.next(&q, now).unwrap());
    assert_eq!(
        next.seq,
        first[1].seq + 1,
        "what came back comes first, in order"
    );
    assert!(
        f.next(&q, now).unwrap().is_none(),
        "two under way, two allowed"
    );
    assert_eq!(f.surplus(), 0);
    assert!(f.next(&q, now).unwrap().is_none());
}

#[test]
fn a_stated_popularity_raises_a_page_above_richer_ones_of_its_host_only() {
    let mut q = MemoryQueue::default();
    let mut f = load(&q, 1);
    let a = f.host_for(&q, "http://a.com").unwrap();
    let far = Instant::now() + Duration::from_secs(3600);
    f.robots_known(a, Rules::AllowAll, far);
    f.push(a, "http://a.com/".into(), Fp(1), 0, 0);
    f.endow_seeds(&[Fp(1)]);
    for (fp, url) in [
        (2, "http://a.com/x"),
        (3, "http://a.com/y"),
        (4, "http://a.com/z"),
    ] {
        assert!(f.push(a, url.into(), Fp(fp), 1, 0));
    }
    let home = page(f.next(&q, Instant::now()).unwrap());
    f.finished(a, Instant::now());
    // y gets cash twice, x and z once each.
    f.read_cash(Fp(1), &[Fp(3), Fp(2), Fp(3), Fp(4)]);
    save(&mut f, &mut q, &[(a, home.seq)], vec![home.seq]);
    let gap = f.cash().cash(Fp(3)) - f.cash().cash(Fp(2));
    assert!(gap > 0.0);
    // z is read by people: its stated popularity outweighs y's extra cash.
    f.boost(a, Fp(4), 2.0 * gap);
    let mut order = Vec::new();
    let mut now = Instant::now();
    while let Some(d) = f.next(&q, now).unwrap() {
        let p = page(Some(d));
        order.push(p.url);
        f.finished(a, now);
        now += Duration::from_secs(1);
    }
    assert_eq!(
        order,
        ["http://a.com/z", "http://a.com/y", "http://a.com/x"]
    );
    // The cash itself is OPIC's, untouched by the boost.
    assert!((f.cash().total() - 1.0).abs() < 1e-9);
    // A boost that is not a number is no boost.
    f.boost(a, Fp(2), f64::NAN);
    assert_eq!(f.boost_of(Fp(2)), 0.0);
}

/// Three hosts, a.com, b.com and c.com, made in that order with one URL each (and a first
/// page, sent by `first_looks`), at most `places` crawled at once, each sent its robots.txt.
fn three_hosts_asked_robots(places: usize) -> (MemoryQueue, Frontier, Vec<HostId>, Instant) {
    let q = MemoryQueue::default();
    let mut f = load(&q, 1);
    f.set_hosts_at_once(places, Duration::from_secs(1));
    let hosts: Vec<HostId> = ["http://a.com", "http://b.com", "http://c.com"]
        .iter()
        .enumerate()
        .map(|(i, origin)| {
            let h = f.host_for(&q, origin).unwrap();
            assert!(f.push(h, format!("{origin}/"), Fp(i as u64 + 11), 0, 0));
            assert!(f.push(h, format!("{origin}/p"), Fp(i as u64 + 1), 0, 0));
            h
        })
        .collect();
    let now = Instant::now();
    // robots.txt goes to every host, room or not: its answer tells how long a host will take.
    for _ in 0..3 {
        assert!(matches!(
            f.next(&q, now).unwrap(),
            Some(Dispatch::Robots(_))
        ));
    }
    (q, f, hosts, now)
}

/// Each host's first page, sent whether or not it has a place, answered.
fn first_looks(q: &MemoryQueue, f: &mut Frontier, hosts: &[HostId], now: Instant) {
    let mut looked: Vec<HostId> = (0..hosts.len())
        .map(|_| page(f.next(q, now).unwrap()).host)
        .collect();
    looked.sort();
    let mut all = hosts.to_vec();
    all.sort();
    assert_eq!(looked, all, "a first page to every host, room or not");
    for &h in hosts {
        f.finished(h, now);
    }
}

#[test]
fn a_host_first_page_goes_without_room_and_its_second_waits() {
    let (q, mut f, hosts, now) = three_hosts_asked_robots(1);
    for &h in &hosts {
        f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
        f.finished(h, now);
    }
    first_looks(&q, &mut f, &hosts, now);
    // One place: the host that took it at robots.txt goes on; the other two wait.
    let next = page(f.next(&q, now).unwrap());
    assert_eq!(next.host, hosts[0]);
    assert!(
        f.next(&q, now).unwrap().is_none(),
        "second pages wait for room"
    );
}

#[test]
fn a_first_look_keeps_its_connection_and_a_host_waiting_for_room_then_does_not() {
    let (q, mut f, hosts, now) = three_hosts_asked_robots(1);
    // robots.txt and the probes of every host keep the connection for the first page,
    // room or not.
    assert!(hosts.iter().all(|&h| f.keeps_connection(h)));
    for &h in &hosts {
        f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
        f.finished(h, now);
    }
    first_looks(&q, &mut f, &hosts, now);
    // Past the first page: only the host with the place keeps it; the two waiting for
    // room would hold an idle connection until their turn.
    let kept: Vec<HostId> = hosts
        .iter()
        .copied()
        .filter(|&h| f.keeps_connection(h))
        .collect();
    assert_eq!(kept, vec![hosts[0]]);
    assert!(
        !f.keeps_connection(HostId(999)),
        "an unknown host keeps nothing"
    );
}

#[test]
fn past_the_hosts_at_once_a_host_waits_until_one_is_done() {
    let (q, mut f, hosts, now) = three_hosts_asked_robots(2);
    // The first two took the places free at their robots.txt (their connection is kept).
    let in_at_robots = hosts.iter().filter(|&&h| f.on_bench(h)).count();
    assert_eq!(in_at_robots, 2);
    for &h in &hosts {
        f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
        f.finished(h, now);
    }
    first_looks(&q, &mut f, &hosts, now);
    let first: Vec<Queued> = (0..2).map(|_| page(f.next(&q, now).unwrap())).collect();
    assert!(f.next(&q, now).unwrap().is_none(), "two hosts at once");
    assert_eq!(
        f.active_hosts(),
        3,
        "the third host's page still counts as work"
    );
    let waiting = *hosts
        .iter()
        .find(|h| first.iter().all(|j| j.host != **h))
        .unwrap();
    // The first host's only page done, it leaves, and the third host comes in.
    f.finished(first[0].host, now);
    let third = page(f.next(&q, now).unwrap());
    assert_eq!(third.host, waiting, "the waiting host is let in");
    // A host given up leaves room too.
    f.abandon(first[1].host, "gone".into());
    f.finished(first[1].host, now);
    assert!(f.next(&q, now).unwrap().is_none());
}

/// One place on the workbench, held by `a`; `b` (made first) and `c` wait with one URL each
/// and a delay at its minimum, their last answers taking `b_ms` and `c_ms`. Which comes in
/// when `a` is done.
fn let_in_after(b_ms: u64, c_ms: u64) -> &'static str {
    let (q, mut f, hosts, now) = three_hosts_asked_robots(1);
    let origins = ["http://a.com", "http://b.com", "http://c.com"];
    for (&h, ms) in hosts.iter().zip([1, b_ms, c_ms]) {
        f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
        f.finished(h, now);
        let host = f.host_mut(h).unwrap();
        host.delay = (Duration::from_secs(1), DelayWhy::Minimum);
        host.answered_in = Duration::from_millis(ms);
    }
    first_looks(&q, &mut f, &hosts, now);
    let first = page(f.next(&q, now).unwrap());
    assert_eq!(
        first.host, hosts[0],
        "the host that took the place at robots.txt"
    );
    assert!(f.next(&q, now).unwrap().is_none(), "one host at once");
    f.finished(first.host, now);
    let next = page(f.next(&q, now).unwrap());
    origins[hosts.iter().position(|&h| h == next.host).unwrap()]
}

#[test]
fn waiting_for_room_a_slow_server_goes_first_though_its_delay_is_at_the_minimum() {
    // 150 ms an answer against 1 ms: both delays are the minimum second, yet each page of c
    // takes its crawl 15% longer, and the longest crawl goes first.
    assert_eq!(let_in_after(1, 150), "http://c.com");
    // The twin: answers alike, the tie goes to the host made first.
    assert_eq!(let_in_after(1, 1), "http://b.com");
}

/// One place, taken by `a` at its robots.txt; `b` (fast, five URLs known: linked from many
/// hosts) and `c` (answers in 150 ms, one URL known) wait. `a` has `a_pages` pages and is
/// crawled through. Which comes in after it.
fn let_in_after_a_crawled(a_pages: u64) -> &'static str {
    let (q, mut f, hosts, now) = three_hosts_asked_robots(1);
    for i in 1..a_pages {
        assert!(f.push(hosts[0], format!("http://a.com/{i}"), Fp(200 + i), 0, 0));
    }
    for i in 0..4 {
        assert!(f.push(hosts[1], format!("http://b.com/{i}"), Fp(300 + i), 0, 0));
    }
    for (&h, ms) in hosts.iter().zip([1, 1, 150]) {
        f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
        f.finished(h, now);
        let host = f.host_mut(h).unwrap();
        host.delay = (Duration::from_secs(1), DelayWhy::Minimum);
        host.answered_in = Duration::from_millis(ms);
    }
    first_looks(&q, &mut f, &hosts, now);
    let mut next = page(f.next(&q, now).unwrap());
    assert!(f.next(&q, now).unwrap().is_none(), "b and c wait for room");
    let mut of_a = 0;
    while next.host == hosts[0] {
        of_a += 1;
        f.finished(next.host, now);
        next = page(f.next(&q, now).unwrap());
    }
    assert_eq!(of_a, a_pages, "a crawled through first");
    ["http://a.com", "http://b.com", "http://c.com"]
        [hosts.iter().position(|&h| h == next.host).unwrap()]
}

#[test]
fn a_slow_host_not_yet_crawled_counts_as_large_as_those_crawled_through() {
    // Eleven pages a host so far (a's first and ten): c's eleven would take 12.65 s, b's
    // 11 s, though more links led to b.
    assert_eq!(let_in_after_a_crawled(10), "http://c.com");
    // The twin: with hosts of two pages so far, the URLs known decide (b's 5 s against 2.3).
    assert_eq!(let_in_after_a_crawled(1), "http://b.com");
}

/// One place, taken by `a` at its robots.txt; `b` and `c` answer in `slow_ms` with the
/// delay five times that (a second at least) set for `why`, one URL each. How many hosts are
/// sent a page at once, then after `a` is done, then after the next host in is done.
fn slow_hosts_past_one_place(slow_ms: u64, why: DelayWhy) -> [usize; 3] {
    let (q, mut f, hosts, now) = three_hosts_asked_robots(1);
    for (&h, ms) in hosts.iter().zip([1, slow_ms, slow_ms]) {
        f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
        f.finished(h, now);
        let host = f.host_mut(h).unwrap();
        let took = Duration::from_millis(ms);
        host.delay = ((took * 5).max(Duration::from_secs(1)), why);
        host.answered_in = took;
    }
    first_looks(&q, &mut f, &hosts, now);
    let mut sent = Vec::new();
    let mut counts = [0; 3];
    for (round, count) in counts.iter_mut().enumerate() {
        if round > 0 {
            // a first, then the other host sent a page in the first round.
            let done = *sent
                .iter()
                .find(|&&h| (h == hosts[0]) == (round == 1))
                .unwrap();
            sent.retain(|&h| h != done);
            f.finished(done, now);
        }
        while let Some(d) = f.next(&q, now).unwrap() {
            sent.push(page(Some(d)).host);
            *count += 1;
        }
    }
    counts
}

#[test]
fn a_host_whose_pages_cost_twice_the_minimum_delay_comes_in_past_the_limit() {
    // 1.5 s an answer and 7.5 s after it: a slow host comes in at once, in the tenth past
    // the one place, and the other waits; a leaving frees no place while one host is past
    // the limit; the slow one leaving does.
    assert_eq!(
        slow_hosts_past_one_place(1_500, DelayWhy::ResponseTime),
        [2, 0, 1]
    );
    // The twin: at 150 ms a page costs 1.15 s (the delay is the minimum second), less than
    // twice it: both wait, one comes in as a leaves, the other as that one leaves.
    assert_eq!(slow_hosts_past_one_place(150, DelayWhy::Minimum), [1, 1, 1]);
    // A 7.5 s park after failures is no sign of a long crawl: those hosts wait.
    assert_eq!(
        slow_hosts_past_one_place(1_500, DelayWhy::Parked),
        [1, 1, 1]
    );
}

#[test]
fn a_probe_waits_until_enough_of_its_host_s_pages_were_handed_out() {
    let q = MemoryQueue::default();
    let mut f = load(&q, 1);
    f.set_probe_after(2);
    let h = f.host_for(&q, "http://e.com").unwrap();
    assert!(f.push(h, "http://e.com/a".into(), Fp(1), 0, 0));
    let now = Instant::now();
    assert!(matches!(f.next(&q, now).unwrap(), Some(Dispatch::Robots(id)) if id == h));
    f.robots_known(h, Rules::AllowAll, now + Duration::from_secs(3600));
    f.finished(h, now);
    let probe = CoopJob::Fetch {
        kind: MetaKind::Listing,
        url: url::Url::parse("http://e.com/robots.rdf").unwrap(),
        etag: None,
        last_modified: None,
    };
    f.push_probe(h, probe.clone());
    assert_eq!(page(f.next(&q, now).unwrap()).fp, Fp(1));
    f.finished(h, now);
    // One page of two: the probe is not due, and the host has nothing left, so a one-pass
    // crawl of it ends here.
    assert!(f.next(&q, now).unwrap().is_none());
    assert!(!f.host(h).unwrap().has_queue());
    assert_eq!(f.active_hosts(), 0);
    // A second page (a refresh of a crawl kept fresh) earns it: after that page, not before.
    assert!(f.push(h, "http://e.com/b".into(), Fp(2), 0, 0));
    assert_eq!(page(f.next(&q, now).unwrap()).fp, Fp(2));
    f.finished(h, now);
    match f.next(&q, now).unwrap() {
        Some(Dispatch::Coop(id, job)) => assert!(id == h && job == probe),
        other => panic!("expected the probe, got {other:?}"),
    }
}

//! The agent's watch loop behind a stream of changes it cannot keep up with: what arrived
//! while it was busy is published in a few batches, not file by file.

use crate::common::{Options, config_for};
use chrono::{TimeZone, Utc};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop_agent::Agent;
use webcoop_protocol::clock::ManualClock;

/// Bursts of deletions, each made while the loop holds the batch before it. Deletions, because
/// the loop publishes them at once (a file just written waits for its writer to close it).
const BURSTS: usize = 3;
const BURST: usize = 400;
const FILES: usize = BURSTS * BURST;

/// How long each saved batch holds the loop, as a slow disk or a busy machine would.
const HOLD: Duration = Duration::from_millis(1_500);

/// Watches a docroot of `FILES` files, each saved batch holding the loop for `HOLD`, while
/// `BURSTS` bursts of them are deleted: the first at once, each next one while the loop holds
/// a batch, so that its events wait for the loop; returns the size of every batch saved, once
/// every deletion is or `limit` has passed.
fn batches_behind_a_stream(limit: Duration) -> Vec<usize> {
    crate::common::install_tls_provider();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("www")).unwrap();
    let docroot = tmp.path().join("www").canonicalize().unwrap();
    for i in 0..FILES {
        std::fs::write(docroot.join(format!("f{i}.html")), format!("page {i}")).unwrap();
    }
    let server = webcoop_testkit::static_site::StaticServer::serve(&docroot);
    let config = config_for(
        &docroot,
        &tmp.path().join("state"),
        &server.url(),
        &Options::default(),
    );
    let clock = Arc::new(ManualClock::new(
        Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
    ));
    let mut agent = Agent::open(config, clock).unwrap();
    agent.start_watching();
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let seen = sizes.clone();
    agent.observe(Box::new(move |changes, _| {
        if !changes.is_empty() {
            seen.lock().unwrap().push(changes.len());
        }
        std::thread::sleep(HOLD);
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let watching = std::thread::spawn(move || agent.watch(&stopping).unwrap());
    let started = Instant::now();
    for burst in 0..BURSTS {
        while sizes.lock().unwrap().len() < burst && started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(5));
        }
        for i in burst * BURST..(burst + 1) * BURST {
            std::fs::remove_file(docroot.join(format!("f{i}.html"))).unwrap();
        }
    }
    while sizes.lock().unwrap().iter().sum::<usize>() < FILES && started.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    watching.join().unwrap();
    sizes.lock().unwrap().clone()
}

#[test]
fn changes_made_while_the_loop_is_busy_are_saved_in_a_few_batches() {
    let sizes = batches_behind_a_stream(Duration::from_secs(60));
    let saved: usize = sizes.iter().sum();
    assert_eq!(
        saved,
        FILES,
        "{saved} of {FILES} deletions saved within a minute of the first, in {} batches: {sizes:?}",
        sizes.len()
    );
    // A batch per burst, or two where a burst's events were cut by a batch's window. Once,
    // every change waiting after the sitemaps had waited a second was a batch of its own.
    assert!(
        sizes.len() <= 2 * BURSTS,
        "{} batches: {sizes:?}",
        sizes.len()
    );
    // The twin: the loop really was behind, holding a batch while the next burst was made.
    assert!(
        sizes.len() >= BURSTS,
        "fewer batches than bursts: {sizes:?}"
    );
}

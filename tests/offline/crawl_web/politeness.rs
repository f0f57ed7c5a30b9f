//! Politeness seen from the server: hosts of one address paced together, a host without a
//! delay given requests back to back within its connections, a 429 stopping them.

use super::*;

/// Arrival gaps between consecutive requests to the whole web, all hosts together.
fn server_gaps(web: &TestWeb) -> Vec<Duration> {
    let log = web.log();
    log.windows(2)
        .map(|w| w[1].arrived.duration_since(w[0].arrived))
        .collect()
}

#[test]
fn politeness_keyed_by_address_paces_every_host_of_one_server_together() {
    let hosts = ["a.test", "b.test", "c.test"];
    let spec = |name: &str, next: &str| {
        let mut h = HostSpec::new(name, 6);
        h.links_to = vec![next.to_string()];
        h
    };
    let crawl_with = |key: &str| {
        let web = TestWeb::start(vec![
            spec(hosts[0], hosts[1]),
            spec(hosts[1], hosts[2]),
            spec(hosts[2], hosts[0]),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join(key);
        let seeds: Vec<String> = hosts
            .iter()
            .map(|h| format!("{}/", web.origin(h)))
            .collect();
        let mut args = vec![
            "--scope",
            "any",
            "--delay-min",
            "0.2",
            "--delay-factor",
            "0",
        ];
        args.extend(["--politeness-key", key, "--seeds"]);
        args.extend(seeds.iter().map(String::as_str));
        crawl(&web, &out, QUICK, &args);
        let pages: usize = web.answered_counts().values().sum();
        (server_gaps(&web), pages)
    };
    // By address: the three names are one server (127.0.0.1), so no two requests of the
    // whole crawl are closer than the delay.
    let (gaps, pages) = crawl_with("ip");
    assert!(pages >= 3 * 7, "{pages} pages");
    let min = gaps.iter().min().copied().unwrap_or_default();
    assert!(
        min >= Duration::from_millis(160),
        "two requests to one server {min:?} apart"
    );
    // By host (the default): the names are paced apart, so requests to different names come
    // together.
    let (gaps, _) = crawl_with("host");
    let close = gaps
        .iter()
        .filter(|g| **g < Duration::from_millis(100))
        .count();
    assert!(close > 3, "hosts kept apart: {close} close pairs");
}

/// The most requests of `log` the server was serving at once.
fn most_at_once(log: &[testweb::Logged]) -> usize {
    let mut events: Vec<(Instant, i32)> = Vec::new();
    for r in log {
        events.push((r.arrived, 1));
        events.push((r.answered.unwrap_or_else(Instant::now), -1));
    }
    // An answer and an arrival at the same instant: the answer first.
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as usize
}

#[test]
fn a_host_without_delay_gets_requests_back_to_back_within_its_connections_and_a_429_stops_them() {
    let spec = HostSpec::new("ahead.test", 150)
        .latency(Duration::from_millis(10))
        .with_features();
    let web = TestWeb::start(vec![spec.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ahead");
    let seed = format!("{}/", web.origin("ahead.test"));
    let args = [
        "--delay-min",
        "0",
        "--delay-factor",
        "0",
        "--per-host-connections",
        "2",
        "--seeds",
        seed.as_str(),
    ];
    crawl(&web, &out, QUICK, &args);
    let log = web.log();
    let counts = web.answered_counts();
    for path in spec.generated_paths() {
        if path.starts_with("/private/") {
            continue;
        }
        assert_eq!(
            counts.get(&("ahead.test".to_string(), path.clone())),
            Some(&1),
            "{path} fetched once"
        );
    }
    // Requests waiting ahead start as others end: never more than two at once, and two
    // most of the time.
    assert_eq!(most_at_once(&log), 2, "two connections");
    // A 429 stops what waited behind it and what is handed over before the scheduler has
    // read it: only a request the other connection had begun may arrive before its
    // Retry-After, and the page itself comes after it.
    let busy: Vec<&testweb::Logged> = log.iter().filter(|r| r.target == "/busy.html").collect();
    assert_eq!(
        busy.iter().map(|r| r.status).collect::<Vec<_>>(),
        [429, 200]
    );
    let answered = busy[0].answered.unwrap();
    let until = answered + Duration::from_secs(2);
    let meanwhile: Vec<&str> = log
        .iter()
        .filter(|r| r.arrived > answered && r.arrived < until)
        .map(|r| r.target.as_str())
        .collect();
    assert!(
        meanwhile.len() <= 1,
        "arrived during the Retry-After: {meanwhile:?}"
    );
    assert!(busy[1].arrived >= until, "Retry-After: 2 honoured");
}

//! The crawler on a small web of the web's shape (`webcoop_testkit::webshape`): hosts on
//! addresses of their own, names answered by a DNS server the crawler is pointed at
//! (`nameserver`), slow and failing hosts, power-law links across hosts. Asserted from the
//! server's side: every page once (across a `kill -9` too), no request closer to its host's
//! previous answer than the delay, nothing robots.txt forbids, one name lookup per host.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::webshape::{Kind, ShapeSpec, WebShape};

const DELAY: f64 = 0.2;

fn small_web() -> WebShape {
    WebShape::start(ShapeSpec {
        hosts: 40,
        pages: 6,
        page_bytes: 600,
        slow_share: 0.1,
        slow_ms: (20, 120),
        failing_share: 0.2,
        seeds: 4,
        politeness: (Duration::from_secs_f64(DELAY), 5.0),
        ..ShapeSpec::default()
    })
}

fn crawl_command(web: &WebShape, dir: &Path, nameserver: bool, at_once: usize) -> Command {
    std::fs::create_dir_all(dir).unwrap();
    let seeds: Vec<String> = (0..4).map(|i| web.root(i)).collect();
    std::fs::write(dir.join("seeds.txt"), seeds.join("\n") + "\n").unwrap();
    let config = if nameserver {
        format!("nameserver = \"{}\"\ncoop = \"off\"\n", web.dns)
    } else {
        "coop = \"off\"\n".to_string()
    };
    std::fs::write(dir.join("crawl.toml"), config).unwrap();
    let mut c = Command::new(testkit::workspace_bin("webcoop-crawl"));
    c.args(["crawl", "--allow-net", "127.0.0.0/8", "--progress", "quiet"])
        .args(["--scope", "any", "--delay-min", &DELAY.to_string()])
        .args([
            "--timeout",
            "1",
            "--park-base",
            "0.5",
            "--host-give-up",
            "2",
        ])
        .args(["--hosts-at-once", &at_once.to_string()])
        .arg("--seeds")
        .arg(dir.join("seeds.txt"))
        .arg("--config")
        .arg(dir.join("crawl.toml"))
        .arg("--out")
        .arg(dir.join("out"));
    c
}

/// What the server saw: complete, once, polite; names asked once per process (`runs`).
fn assert_polite_and_complete(web: &WebShape, runs: u64) {
    let f = web.figures();
    assert_eq!(f.missed, 0, "pages never fetched: {f:?}");
    assert_eq!(f.pages_served, web.crawlable(), "{f:?}");
    assert_eq!(f.served_twice, 0, "pages fetched twice: {f:?}");
    assert_eq!(f.overlaps, 0, "two requests at once to a host: {f:?}");
    assert_eq!(f.forbidden, 0, "requests robots.txt forbids: {f:?}");
    let (gap, required) = f.closest_gap.expect("hosts asked more than once");
    assert!(
        gap >= required,
        "a request {gap:?} after its host's answer, {required:?} required"
    );
    // Each name asked once a process (its answer lives 300 s), however many connections and
    // requests.
    assert!(
        f.lookups <= runs * f.hosts_looked_up,
        "names asked again within their TTL: {f:?}"
    );
    assert!(f.hosts_looked_up >= 30, "{f:?}");
}

#[test]
fn a_polite_crawl_of_a_web_shaped_web_resolves_each_name_once_and_fetches_each_page_once() {
    let web = small_web();
    let kinds: Vec<Kind> = (0..40).map(|i| web.kind(i)).collect();
    assert!(kinds.contains(&Kind::Slow) && kinds.contains(&Kind::RobotsError));
    let tmp = tempfile::tempdir().unwrap();
    // Eight hosts at once of the 40: the others wait after their robots.txt, and come in.
    testkit::run_ok(&mut crawl_command(&web, tmp.path(), true, 8));
    assert_polite_and_complete(&web, 1);
}

#[test]
fn without_the_name_server_the_web_does_not_resolve() {
    // The honest twin: the same crawl on the system's resolver knows none of the names, so
    // the pages above came through the name server.
    let web = small_web();
    let tmp = tempfile::tempdir().unwrap();
    let o = crawl_command(&web, tmp.path(), false, 0).output().unwrap();
    let f = web.figures();
    assert_eq!(f.requests, 0, "{f:?}");
    assert_eq!(f.lookups, 0, "{f:?}");
    let log = std::fs::read_to_string(tmp.path().join("out/crawl.log")).unwrap_or_default();
    assert!(
        !o.status.success() || log.contains("does not resolve"),
        "{}\n{log}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_crawl_killed_with_sigkill_and_resumed_fetches_every_page_once() {
    let web = small_web();
    let tmp = tempfile::tempdir().unwrap();
    // Requests past the first third are held unanswered, so the kill finds none answered
    // and unrecorded (those would rightly be asked again).
    let third = web.crawlable() / 3;
    web.close_gate_after(third);
    let mut child = crawl_command(&web, tmp.path(), true, 0).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while web.arrivals() <= third {
        assert!(
            Instant::now() < deadline,
            "the crawl never reached the gate"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Let the answered responses land in the archive, then kill.
    std::thread::sleep(Duration::from_millis(400));
    child.kill().unwrap();
    child.wait().unwrap();
    let before = web.figures().pages_served;
    assert!(before < web.crawlable(), "the crawl ended before the kill");
    web.open_gate();
    // The held requests are answered into closed connections, and the restart comes at
    // once: each host contacted before waits at least its delay (soon after a save, the
    // longest delay an answer sets; `engine::tests` holds that rule, and `crawl_bench
    // --kill-at` shows it at the web's shape, where slow hosts' requests were under way).
    std::thread::sleep(Duration::from_millis(50));
    testkit::run_ok(&mut crawl_command(&web, tmp.path(), true, 0));
    assert_polite_and_complete(&web, 2);
}

/// Connections the server accepted and hosts it was asked by, for a crawl of healthy hosts
/// with `at_once` hosts crawled at once.
fn connections_of_a_healthy_web(at_once: usize) -> (u64, u64) {
    let web = WebShape::start(ShapeSpec {
        hosts: 40,
        pages: 6,
        page_bytes: 600,
        slow_share: 0.0,
        failing_share: 0.0,
        seeds: 4,
        politeness: (Duration::from_secs_f64(DELAY), 5.0),
        ..ShapeSpec::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    testkit::run_ok(&mut crawl_command(&web, tmp.path(), true, at_once));
    assert_polite_and_complete(&web, 1);
    let f = web.figures();
    (f.connections, f.hosts_reached)
}

#[test]
fn with_room_on_the_workbench_a_hosts_robots_txt_and_pages_share_one_connection() {
    // Room for every host: robots.txt takes the host in and its connection carries the pages.
    let (connections, hosts) = connections_of_a_healthy_web(0);
    assert_eq!(hosts, 40);
    assert!(
        connections <= hosts + hosts / 10,
        "{connections} connections for {hosts} hosts"
    );
    // The twin: eight at once, so 32 hosts have their first look (robots.txt, the probes and
    // the first page) on a connection closed after the first page (nothing would use it before
    // they are let in), and open another for their pages.
    let (connections, hosts) = connections_of_a_healthy_web(8);
    assert!(
        connections >= hosts + 28,
        "{connections} connections for {hosts} hosts"
    );
}

//! A one-pass crawl ends when the web does: hosts that never answered (a refused connection,
//! a server that accepts and never answers) are given up after a few failures, said so in
//! `status`, and the crawl ends by itself; a host that answers with errors keeps the longer
//! patience (its twin), and the crawl does not wait for it past `end_wait`, saying what it
//! left. Asserted from the server's side and the crawler's own log.

use std::process::Command;
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{HostSpec, Robots, TestWeb};

#[test]
fn hosts_that_never_answered_are_let_go_and_the_crawl_ends_by_itself() {
    let mut healthy = HostSpec::new("healthy.test", 8);
    healthy.page_bytes = 300;
    let web = TestWeb::start(vec![
        healthy,
        HostSpec::new("silent.test", 3).robots(Robots::Timeout),
        HostSpec::new("erring.test", 3).robots(Robots::ServerError),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let seeds = [
        format!("{}/", web.origin("healthy.test")),
        format!("{}/", web.origin("silent.test")),
        format!("{}/", web.origin("erring.test")),
        // Nothing listens on port 1: every connection is refused.
        "http://refused.test:1/".to_string(),
    ];
    let started = Instant::now();
    let o = Command::new(testkit::workspace_bin("webcoop-crawl"))
        .args(["crawl", "--allow-net", "127.0.0.0/8", "--progress", "quiet"])
        .args([
            "--scope",
            "any",
            "--delay-min",
            "0.05",
            "--delay-factor",
            "0",
        ])
        .args(["--timeout", "1", "--park-base", "0.5", "--end-wait", "5"])
        .args(["--config", "/dev/null"])
        .args(web.resolve_args())
        .args(["--resolve", "refused.test=127.0.0.1"])
        .args(seeds.iter().flat_map(|s| ["--seeds", s.as_str()]))
        .arg("--out")
        .arg(&out)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let took = started.elapsed();
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{said}");
    // Ended by itself: the erring host would otherwise be retried for minutes (0.5 s doubling,
    // ten failures), the dead ones for as long.
    assert!(took < Duration::from_secs(40), "took {took:?}\n{said}");
    let asked = |host: &str| web.log().iter().filter(|r| r.host == host).count();
    assert_eq!(
        web.log()
            .iter()
            .filter(|r| r.host == "healthy.test" && r.status == 200)
            .count(),
        10,
        "robots.txt, / and the eight pages of the healthy host"
    );
    // Never answered: given up after three tries.
    assert!(
        asked("silent.test") <= 3,
        "silent.test asked {}",
        asked("silent.test")
    );
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
    let refused = log.lines().filter(|l| l.contains("refused.test")).count();
    assert!(
        (1..=3).contains(&refused),
        "refused.test tried {refused} times\n{log}"
    );
    // The twin: a host that answers (500s) is tried longer, past the dead hosts' three...
    assert!(
        asked("erring.test") > 3,
        "erring.test asked {}",
        asked("erring.test")
    );
    // ...and the crawl ends without waiting for its next try, saying what it left.
    assert!(
        said.contains("the crawl ends with") && said.contains("URLs of 1 hosts left"),
        "{said}"
    );
    let s = testkit::run_ok(
        Command::new(testkit::workspace_bin("webcoop-crawl"))
            .args(["status", "--json", "--out"])
            .arg(&out),
    );
    let text = String::from_utf8_lossy(&s.stdout);
    assert!(text.contains("it never answered"), "{text}");
}

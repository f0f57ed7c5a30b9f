//! Any WebSub hub: a site's feed names a hub that runs elsewhere, an implementation we did not
//! write (Flask-WebSub from PyPI, `tests/reference/websub_hub.py`, signing with sha512). The
//! crawler subscribes to it for the feed's `rel="self"` topic, the hub verifies the intent at the
//! crawler's callback, and once the site changes a page and pings its hub, the hub fetches the
//! feed and delivers it: the crawler reads the delivery as the feed, fetches the changed page at
//! once, and does not fetch the feed again. The twin: with `--hub-allow` naming another host, the
//! hub is never asked.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{Feed, HostSpec, Robots, TestWeb};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The hub on a free port: the process, its port and its log.
fn start_hub(python: &Path, dir: &Path) -> (Proc, u16, PathBuf) {
    let port_file = dir.join("hub.port");
    let log = dir.join("hub.log");
    let child = Command::new(python)
        .arg(testkit::workspace_root().join("tests/reference/websub_hub.py"))
        .arg(&port_file)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let hub = Proc(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|p| p.trim().parse().ok())
        {
            return (hub, port, log);
        }
        assert!(Instant::now() < deadline, "the hub did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn crawl(web: &TestWeb, out: &Path, log: &Path, extra: &[&str]) -> Proc {
    let child = Command::new(testkit::workspace_bin("webcoop-crawl"))
        .args(["crawl", "--allow-net", "127.0.0.0/8", "--progress", "quiet"])
        .args(["--seeds", &format!("{}/", web.origin("127.0.0.1"))])
        .args(["--delay-min", "0.05", "--delay-factor", "0"])
        .args(["--keep-fresh", "--refresh-cycle", "3600", "--run-for", "40"])
        .args(["--callback-listen", "127.0.0.1:0"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    Proc(child)
}

fn wait_for_line(log: &Path, what: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(what) {
            return text;
        }
        assert!(Instant::now() < deadline, "no {what:?} in:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A web whose one site (on 127.0.0.1, which the hub can fetch) has an Atom feed naming `hub`.
fn web(hub: &str) -> TestWeb {
    let mut site = HostSpec::new("127.0.0.1", 12)
        .robots(Robots::NotFound)
        .feed(Feed::Atom);
    site.page_bytes = 300;
    site.hub = Some(hub.to_string());
    TestWeb::start(vec![site])
}

#[test]
fn a_feeds_hub_run_by_another_is_subscribed_to_and_its_delivery_read_as_the_feed() {
    let Some(python) = testkit::reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_hub, port, hub_log) = start_hub(&python, dir.path());
    let hub_url = format!("http://127.0.0.1:{port}/hub");
    let web = web(&hub_url);
    let log = dir.path().join("crawl.log");
    let _crawl = crawl(&web, &dir.path().join("crawl"), &log, &[]);
    wait_for_line(&log, "subscribed to its hub", Duration::from_secs(30));
    // The site edits a page, and pings its hub, as a blog's publisher does.
    web.change("127.0.0.1", "/p/7.html");
    let pinged = Instant::now();
    let topic = format!("{}/feed.atom", web.origin("127.0.0.1"));
    let ping = Command::new(&python)
        .args([
            "-c",
            &format!(
                "import requests; print(requests.post({hub_url:?}, data={{'hub.mode': 'publish', 'hub.topic': {topic:?}}}).status_code)"
            ),
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ping.stdout)
            .trim()
            .starts_with('2'),
        "{ping:?}"
    );
    let by_crawler = |path: &str| {
        web.log()
            .into_iter()
            .filter(|r| r.target == path && r.arrived > pinged)
            .filter(|r| {
                r.user_agent
                    .as_deref()
                    .is_some_and(|a| a.starts_with("webcoop-crawl"))
            })
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while by_crawler("/p/7.html") == 0 {
        let hub_text = std::fs::read_to_string(&hub_log).unwrap_or_default();
        let crawl_text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            Instant::now() < deadline,
            "the changed page was not fetched\nhub:\n{hub_text}\ncrawler:\n{crawl_text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = wait_for_line(&log, "the hub pushed", Duration::from_secs(1));
    assert_eq!(
        by_crawler("/feed.atom"),
        0,
        "the feed fetched again:\n{text}"
    );
    // The hub fetched the topic itself, and signed what it delivered (sha512, the library's
    // default): an unsigned or wrongly signed delivery is ignored, and the page would not be due.
    let hub_fetched = web
        .log()
        .into_iter()
        .filter(|r| r.target == "/feed.atom" && r.arrived > pinged)
        .count();
    assert!(hub_fetched >= 1);
    assert!(!text.contains("delivery ignored"), "{text}");
}

#[test]
fn a_hub_the_operator_does_not_allow_is_never_asked() {
    let Some(python) = testkit::reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_hub, port, hub_log) = start_hub(&python, dir.path());
    let web = web(&format!("http://127.0.0.1:{port}/hub"));
    let log = dir.path().join("crawl.log");
    let _crawl = crawl(
        &web,
        &dir.path().join("crawl"),
        &log,
        &["--hub-allow", "hubs.example.org"],
    );
    wait_for_line(
        &log,
        "which --hub-allow does not allow",
        Duration::from_secs(30),
    );
    std::thread::sleep(Duration::from_secs(2));
    let hub_text = std::fs::read_to_string(&hub_log).unwrap_or_default();
    assert!(!hub_text.contains("POST /hub"), "{hub_text}");
}

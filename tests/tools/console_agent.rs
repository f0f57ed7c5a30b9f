//! The agent console as a webmaster sees it: Debian's nginx serving a docroot with the shipped
//! server block, the real `webcoop-agent` beside it with `--console`, a real `webcoop-crawl`
//! subscribed to its hub in push mode, and headless Chromium looking at the console.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop::servers::{Killed, Nginx, example_nginx_conf, http_get};
use webcoop_testkit::browser::{Browser, console_address, number};
use webcoop_testkit::{tool, workspace_bin};

use webcoop_testkit::free_port;

fn page(i: usize, words: &str) -> String {
    format!(
        "<html><body><h1>page {i} {words}</h1><a href=\"p{}.html\">next</a></body></html>\n",
        i + 1
    )
}

#[test]
fn a_webmaster_sees_what_is_published_excluded_subscribed_and_delivered() {
    let Some(nginx_bin) = tool("nginx") else {
        return;
    };
    let Some(b) = Browser::start(1280, 900) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir_all(www.join("private")).unwrap();
    std::fs::create_dir_all(www.join(".git")).unwrap();
    let www = www.canonicalize().unwrap();
    std::fs::write(www.join("index.html"), "<a href=\"p1.html\">start</a>").unwrap();
    for i in 1..=12 {
        std::fs::write(www.join(format!("p{i}.html")), page(i, "")).unwrap();
    }
    // What must stay out, each for its own reason.
    std::fs::write(www.join(".git/config"), "[remote]").unwrap();
    std::fs::write(www.join("p1.html.bak"), "old").unwrap();
    std::fs::write(www.join("private/report.html"), "not for crawlers").unwrap();
    std::fs::write(www.join("config.php"), "<?php $password = 1;").unwrap();
    // And one the web server itself refuses: the judge's word, with its reason.
    std::fs::write(www.join("refused.html"), "nginx never serves this").unwrap();
    let conf = example_nginx_conf().replacen(
        "    # The agent's service",
        "    location = /refused.html { return 403; }\n    # The agent's service",
        1,
    );
    let agent_port = free_port();
    let nginx = Nginx::start_proxying(
        &nginx_bin,
        &conf,
        &www,
        Some(([127, 0, 0, 1], agent_port).into()),
    );
    let lines = Command::new(workspace_bin("webcoop-agent"))
        .args(["--print-robots-lines", "--base-url", &nginx.url()])
        .output()
        .unwrap();
    let mut robots = String::from_utf8_lossy(&lines.stdout).into_owned();
    robots.push_str("User-agent: *\nDisallow: /private/\n");
    std::fs::write(www.join("robots.txt"), robots).unwrap();

    let mut agent = Command::new(workspace_bin("webcoop-agent"))
        .arg("--docroot")
        .arg(&www)
        .arg("--state")
        .arg(tmp.path().join("state"))
        .args([
            "--base-url",
            &nginx.url(),
            "--listen",
            &format!("127.0.0.1:{agent_port}"),
            "--console",
            "127.0.0.1:0",
            "--allow-callback-net",
            "127.0.0.0/8",
            "--hub-window-ms",
            "200",
            "--debounce-ms",
            "50",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let console = console_address(&mut agent, Default::default());
    let _agent = Killed(agent);
    // The console is its own listener: the public service knows nothing of it.
    assert_eq!(
        http_get(nginx.addr, "/.well-known/webcoop/api/overview", &[])
            .unwrap()
            .status,
        404
    );

    let base = format!("http://{console}/");
    b.goto(&base);
    b.wait_text(
        "the file count",
        "#card-files .value",
        Duration::from_secs(20),
        |t| number(t) == 14,
    );
    assert!(
        b.text("#publications-table").contains("all"),
        "{}",
        b.text("#publications-table")
    );
    b.shoot("agent-console.png");

    // What was kept out, and why.
    b.click("nav a[href='#excluded']");
    let reasons = b.wait_text(
        "the reasons",
        "#reasons-table",
        Duration::from_secs(10),
        |t| t.contains("robots.txt"),
    );
    for why in [
        "hidden",
        "editor or backup file",
        "run by the web server",
        "the server answers 403",
    ] {
        assert!(reasons.contains(why), "{why} missing: {reasons}");
    }
    let paths = b.text("#excluded-table");
    for p in [
        ".git/",
        "p1.html.bak",
        "private/",
        "config.php",
        "refused.html",
    ] {
        assert!(paths.contains(p), "{p} missing: {paths}");
    }

    // A crawler subscribes in push mode, signing its requests (its key directory on a web
    // server of its own); its subscription shows up on the hub's page, and the crawler on the
    // Crawlers page.
    let key_file = tmp.path().join("keys.json");
    let o = Command::new(workspace_bin("webcoop-crawl"))
        .args(["keys", "new", "--key-file", key_file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "keys new");
    let key_origin = super::web_bot_auth::key_server(&key_file);
    let out = tmp.path().join("crawl");
    let config = tmp.path().join("crawl.toml");
    std::fs::write(
        &config,
        "coop_poll_min = 0.2\ncoop_poll_max = 1.0\ncoop_backup_poll = 3.0\ncommit_interval = 0.2\n",
    )
    .unwrap();
    let mut crawler = Command::new(workspace_bin("webcoop-crawl"))
        .args([
            "crawl",
            "--allow-net",
            "127.0.0.0/8",
            "--seeds",
            &nginx.url(),
            "--out",
        ])
        .arg(&out)
        .arg("--config")
        .arg(&config)
        .args([
            "--keep-fresh",
            "--refresh-cycle",
            "30",
            "--delay-min",
            "0.02",
            "--delay-factor",
            "0",
            "--coop",
            "push",
            "--callback-listen",
            "127.0.0.1:0",
            "--run-for",
            "60",
            "--progress",
            "quiet",
            "--console",
            "127.0.0.1:0",
            "--signing-key",
            key_file.to_str().unwrap(),
            "--signature-agent",
            &key_origin.origin,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let crawler_console = console_address(&mut crawler, Default::default());
    let _crawler = Killed(crawler);
    b.click("nav a[href='#hub']");
    b.wait_text(
        "a subscriber",
        "#subscribers-table",
        Duration::from_secs(30),
        |t| t.contains("127.0.0.1"),
    );
    assert_eq!(number(&b.text("#card-subscribers .value")), 1);

    // An edit is pushed: the delivery counts on the page, and the subscriber has no lag.
    let start = Instant::now();
    std::fs::write(www.join("p5.html"), page(5, "edited for the console")).unwrap();
    b.wait_text(
        "a delivery",
        "#card-delivered .value",
        Duration::from_secs(20),
        |t| number(t) >= 1,
    );
    b.wait_text(
        "no lag",
        "#subscribers-table",
        Duration::from_secs(10),
        |t| t.lines().nth(1).is_some_and(|row| row.contains("\t0\t")),
    );
    assert!(start.elapsed() < Duration::from_secs(20));
    b.wait_text(
        "the chart",
        "#chart-deliveries .legend",
        Duration::from_secs(10),
        |t| t.contains("delivered/min"),
    );
    std::thread::sleep(Duration::from_secs(3));
    b.shoot("agent-console-hub.png");

    // The change itself, with its sequence number.
    // The crawler, known by its key directory.
    b.click("nav a[href='#crawlers']");
    b.wait_text(
        "the verified crawler",
        "#crawlers-table",
        Duration::from_secs(10),
        |t| {
            t.contains(&format!(
                "{}/.well-known/http-message-signatures-directory",
                key_origin.origin
            ))
        },
    );
    b.shoot("agent-console-crawlers.png");

    b.click("nav a[href='#changes']");
    b.wait_text(
        "the change",
        "#changes-table",
        Duration::from_secs(10),
        |t| t.contains("p5.html") && t.contains("modified"),
    );
    // The crawler's console tells the same story from its side: pushes received, and the
    // refresh policy's estimate of its copies' freshness.
    b.goto(&format!("http://{crawler_console}/#freshness"));
    b.wait_text(
        "a push received",
        "#fresh-pushes .value",
        Duration::from_secs(10),
        |t| number(t) >= 1,
    );
    b.wait_text(
        "estimated freshness",
        "#fresh-estimate .value",
        Duration::from_secs(10),
        |t| t.ends_with('%'),
    );
    std::thread::sleep(Duration::from_secs(2));
    b.shoot("crawl-console-freshness.png");

    // Off loopback the agent refuses to serve its console without a token.
    let o = Command::new(workspace_bin("webcoop-agent"))
        .arg("--docroot")
        .arg(&www)
        .arg("--state")
        .arg(tmp.path().join("state2"))
        .args(["--base-url", &nginx.url(), "--console", "0.0.0.0:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("console-token"),
        "{err}"
    );
}

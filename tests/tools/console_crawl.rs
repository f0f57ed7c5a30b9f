//! The crawl console as an operator sees it: Debian's Chromium, headless, opens the console of
//! a real `webcoop-crawl` crawling the test web, and what the page shows and does is checked
//! against the server's own log. Then the same console is attacked over plain HTTP.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop::servers::{Killed, http_request};
use webcoop_testkit::browser::{Browser, console_address, number};
use webcoop_testkit::testweb::{HostSpec, TestWeb};
use webcoop_testkit::workspace_bin;

const TOKEN: &str = "0f3a9c2e7b6d41a8b5c09e1d2f3a4b5c";

/// A crawl with its console; its stderr is kept for failure messages.
struct Crawl {
    _child: Killed,
    console: SocketAddr,
    stderr: Arc<Mutex<String>>,
}

fn crawl_bin() -> std::path::PathBuf {
    workspace_bin("webcoop-crawl")
}

/// Starts `webcoop-crawl crawl` with `args` and waits for it to say where its console is.
fn start_crawl(web: &TestWeb, out: &Path, args: &[&str]) -> Crawl {
    let mut child = Command::new(crawl_bin())
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(out)
        .args(["--coop", "off", "--progress", "quiet"])
        .args(web.resolve_args())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let kept = Arc::new(Mutex::new(String::new()));
    let console = console_address(&mut child, kept.clone());
    Crawl {
        _child: Killed(child),
        console,
        stderr: kept,
    }
}

/// Requests to `host` so far, as the test web saw them.
fn requests_to(web: &TestWeb, host: &str) -> usize {
    web.log().iter().filter(|l| l.host == host).count()
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_operator_watches_pauses_seeds_and_blocks_a_live_crawl() {
    let Some(b) = Browser::start(1280, 900) else {
        return;
    };
    let web = TestWeb::start(vec![
        HostSpec::new("a.test", 400),
        HostSpec::new("b.test", 15),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("crawl");
    let seed = format!("{}/", web.origin("a.test"));
    let crawl = start_crawl(
        &web,
        &out,
        &[
            "--seeds",
            &seed,
            "--console",
            "127.0.0.1:0",
            "--delay-min",
            "0.05",
            "--delay-factor",
            "0",
        ],
    );
    let page = format!("http://{}/", crawl.console);
    b.goto(&page);

    // Numbers that move while the crawl runs.
    let first = number(&b.wait_text(
        "pages fetched",
        "#card-fetched .value",
        Duration::from_secs(20),
        |t| number(t) > 0,
    ));
    b.wait_text(
        "pages fetched moving",
        "#card-fetched .value",
        Duration::from_secs(20),
        |t| number(t) > first,
    );
    assert_eq!(b.text("#state"), "running");
    // A few seconds of history, drawn as a line.
    wait_for("the pages/s chart", Duration::from_secs(15), || {
        b.eval(
            "const p = document.querySelector('#chart-pages path'); return p ? p.getAttribute('d').split('L').length : 0",
        )
        .as_u64()
        .unwrap_or(0)
            >= 5
    });
    assert!(
        !b.text("#card-queued .value").is_empty() && b.text("#card-disk .value").contains('B'),
        "queue and disk free shown: {}",
        b.text("#cards")
    );
    b.shoot("crawl-console.png");

    // The host appears in the table.
    b.click("nav a[href='#hosts']");
    b.wait_text(
        "the hosts table",
        "#hosts-table",
        Duration::from_secs(10),
        |t| t.contains("a.test"),
    );
    b.shoot("crawl-console-hosts.png");

    // A pause stops fetches, as the server sees them.
    b.click("nav a[href='#overview']");
    b.click("#pause");
    b.wait_text("paused", "#state", Duration::from_secs(10), |t| {
        t == "paused"
    });
    std::thread::sleep(Duration::from_millis(300));
    let before = requests_to(&web, "a.test");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        requests_to(&web, "a.test"),
        before,
        "a request reached the server while paused"
    );

    // A seed added from the page gets fetched once the crawl resumes.
    let b_seed = format!("{}/", web.origin("b.test"));
    assert_eq!(requests_to(&web, "b.test"), 0);
    b.type_into("#seed-url", &b_seed);
    b.click("#add-seed");
    b.wait_text("the seed added", "#msg", Duration::from_secs(10), |t| {
        t.contains("done")
    });
    b.click("#resume");
    b.wait_text("running again", "#state", Duration::from_secs(10), |t| {
        t == "running"
    });
    wait_for("the added seed fetched", Duration::from_secs(20), || {
        web.log()
            .iter()
            .any(|l| l.host == "b.test" && l.target == "/" && l.status == 200)
    });

    // One host's page: block it, and it is no longer fetched.
    b.click("nav a[href='#hosts']");
    b.wait_text(
        "the hosts table",
        "#hosts-table",
        Duration::from_secs(10),
        |t| t.contains("b.test"),
    );
    b.eval(
        "const a = [...document.querySelectorAll('#hosts-table a')].find(a => a.textContent.includes('a.test')); a.click(); return 1",
    );
    b.wait_text(
        "a.test's page",
        "#host-title",
        Duration::from_secs(10),
        |t| t.contains("a.test"),
    );
    b.wait_text(
        "its recent fetches",
        "#visits-table",
        Duration::from_secs(10),
        |t| t.contains("200"),
    );
    // The loop publishes the rows of the hosts shown only: the open page's host is one.
    b.wait_text(
        "its delay, which only the running crawl knows",
        "#host-delay .value",
        Duration::from_secs(10),
        |t| t.contains('('),
    );
    b.click("#block");
    b.wait_text(
        "blocked",
        "#host-state .value",
        Duration::from_secs(10),
        |t| t == "blocked",
    );
    std::thread::sleep(Duration::from_millis(300));
    let before = requests_to(&web, "a.test");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        requests_to(&web, "a.test"),
        before,
        "a blocked host was fetched"
    );
    b.shoot("crawl-console-host.png");

    // A delay set from the page is the host's delay, and says why.
    b.type_into("#delay-input", "2.5");
    b.click("#set-delay");
    b.wait_text("the delay set", "#host-msg", Duration::from_secs(10), |t| {
        t.contains("done")
    });

    // Every action is in the log the page shows.
    b.click("nav a[href='#actions']");
    let actions = b.wait_text(
        "the actions",
        "#actions-table",
        Duration::from_secs(10),
        |t| t.contains("set_delay"),
    );
    for a in ["pause", "add_seeds", "resume", "block"] {
        assert!(actions.contains(a), "{a} missing from {actions}");
    }

    // Readable on a phone: nothing wider than the screen but the tables' own scroll boxes.
    b.resize(390, 844);
    b.click("nav a[href='#overview']");
    b.wait_text(
        "the phone view",
        "#card-fetched .value",
        Duration::from_secs(10),
        |t| number(t) > 0,
    );
    let overflow = b.eval("return document.documentElement.scrollWidth - window.innerWidth");
    assert!(
        overflow.as_i64().unwrap_or(1) <= 0,
        "the page is wider than a phone by {overflow}px"
    );
    b.shoot("crawl-console-phone.png");
    let stderr = crawl.stderr.lock().unwrap().clone();
    drop(crawl);

    // The block and the delay outlive the process: a new run fetches nothing of a.test.
    let before = requests_to(&web, "a.test");
    let run = Command::new(crawl_bin())
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(&out)
        .args(["--coop", "off", "--progress", "quiet", "--run-for", "2"])
        .args(web.resolve_args())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("1 hosts blocked, 1 delays set"),
        "{err}\n{stderr}"
    );
    assert_eq!(requests_to(&web, "a.test"), before, "{err}");
}

#[test]
fn the_console_wants_its_token_and_refuses_what_a_hostile_page_would_send() {
    let Some(b) = Browser::start(1280, 900) else {
        return;
    };
    let web = TestWeb::start(vec![HostSpec::new("a.test", 200)]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("crawl");
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let seed = format!("{}/", web.origin("a.test"));
    let crawl = start_crawl(
        &web,
        &out,
        &[
            "--seeds",
            &seed,
            "--console",
            "127.0.0.1:0",
            "--console-token-file",
            token_file.to_str().unwrap(),
            "--delay-min",
            "0.1",
        ],
    );
    let base = format!("http://{}/", crawl.console);
    // Refused without the token, in the browser.
    b.goto(&base);
    let body = b.text("body");
    assert!(body.contains("needs its token"), "{body}");
    // Accepted with it; then the cookie carries it, without the token in the address.
    b.goto(&format!("{base}?token={TOKEN}"));
    b.wait_text(
        "the console",
        "#card-fetched .value",
        Duration::from_secs(20),
        |t| number(t) > 0,
    );
    b.goto(&format!("{base}#hosts"));
    b.wait_text(
        "the hosts table",
        "#hosts-table",
        Duration::from_secs(10),
        |t| t.contains("a.test"),
    );

    // Over plain HTTP, what a hostile page or a careless script would send.
    let addr = crawl.console;
    let bearer = format!("Bearer {TOKEN}");
    let host = format!("127.0.0.1:{}", addr.port());
    let get = |path: &str, headers: &[(&str, &str)]| {
        http_request(addr, "GET", path, headers, b"").unwrap()
    };
    let post = |headers: &[(&str, &str)], body: &[u8]| {
        http_request(addr, "POST", "/api/actions", headers, body).unwrap()
    };
    assert_eq!(get("/api/overview", &[("Host", &host)]).status, 401);
    let wrong = format!("Bearer {}", TOKEN.replace('0', "1"));
    assert_eq!(
        get(
            "/api/overview",
            &[("Host", &host), ("Authorization", &wrong)]
        )
        .status,
        401
    );
    assert_eq!(
        get(
            "/api/overview",
            &[("Host", &host), ("Authorization", &bearer)]
        )
        .status,
        200
    );
    // DNS rebinding: a public name pointing at 127.0.0.1.
    let rebound = get(
        "/api/overview",
        &[("Host", "evil.example"), ("Authorization", &bearer)],
    );
    assert_eq!(rebound.status, 403);
    // An action without the header a page of another site cannot send, or from its origin.
    let auth = [("Host", host.as_str()), ("Authorization", bearer.as_str())];
    assert_eq!(post(&auth, br#"{"action":"pause"}"#).status, 403);
    let mut cross = auth.to_vec();
    cross.extend([("X-Webcoop-Action", "1"), ("Origin", "http://evil.example")]);
    assert_eq!(post(&cross, br#"{"action":"pause"}"#).status, 403);
    let mut ok = auth.to_vec();
    ok.push(("X-Webcoop-Action", "1"));
    // Bad actions are refused by name, and nothing is logged of them.
    for (body, says) in [
        (&b"not json"[..], "not an action"),
        (br#"{"action":"format_disk"}"#, "not an action"),
        (
            br#"{"action":"set_delay","host":"http://a.test","seconds":1e300}"#,
            "delay must be",
        ),
        (
            br#"{"action":"block","host":"javascript:alert(1)"}"#,
            "not an http(s) origin",
        ),
        (
            br#"{"action":"add_seeds","urls":["file:///etc/passwd"]}"#,
            "not an http(s) URL",
        ),
    ] {
        let r = post(&ok, body);
        let text = String::from_utf8_lossy(&r.body);
        assert_eq!(r.status, 400, "{text}");
        assert!(text.contains(says), "{text}");
    }
    let huge = format!(
        r#"{{"action":"add_seeds","urls":["{}"]}}"#,
        "a".repeat(5 << 20)
    );
    assert_eq!(post(&ok, huge.as_bytes()).status, 413);
    // A file name or a host that is markup stays text on the page.
    let markup = br#"{"action":"block","host":"http://x<img src=x onerror=alert(1)>.test"}"#;
    let _ = post(&ok, markup);
    b.goto(&format!("{base}#actions"));
    b.wait_text(
        "the actions",
        "#actions-table",
        Duration::from_secs(10),
        |t| !t.is_empty(),
    );
    assert_eq!(
        b.eval("return document.querySelectorAll('#actions-table img').length"),
        0
    );
    // Still alive and still answering after all of it.
    assert_eq!(get("/api/overview", &auth).status, 200);
    // The host table's paging takes only what it understands: a huge page is cut to 500, an
    // unknown or hostile sort is the default one, a negative offset none.
    let r = get(
        "/api/hosts?limit=999999999999&offset=-5&sort=origin;DROP%20TABLE%20hosts&dir=sideways&q=%27%25",
        &auth,
    );
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        (
            &v["limit"],
            &v["offset"],
            &v["sort"],
            &v["dir"],
            &v["total"]
        ),
        (
            &serde_json::json!(500),
            &serde_json::json!(0),
            &serde_json::json!("fetched"),
            &serde_json::json!("desc"),
            &serde_json::json!(0)
        ),
        "{v}"
    );
    let log = std::fs::read_to_string(out.join("console-actions.jsonl")).unwrap_or_default();
    assert!(
        !log.contains("format_disk") && !log.contains("passwd"),
        "{log}"
    );

    // Off loopback without a token, or with a weak one, the crawl does not start.
    for args in [
        vec!["--console", "0.0.0.0:0"],
        vec!["--console", "127.0.0.1:0", "--console-token", "short"],
    ] {
        let o = Command::new(crawl_bin())
            .args([
                "crawl",
                "--allow-net",
                "127.0.0.0/8",
                "--seeds",
                "http://a.test/",
                "--out",
            ])
            .arg(tmp.path().join("refused"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("console"), "{err}");
    }
}

#[test]
fn a_stopped_crawl_has_a_console_whose_settings_apply_at_the_next_start() {
    let Some(b) = Browser::start(1280, 900) else {
        return;
    };
    let web = TestWeb::start(vec![
        HostSpec::new("a.test", 10),
        HostSpec::new("b.test", 10),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("crawl");
    let seeds = [format!("{}/", web.origin("a.test"))];
    let o = Command::new(crawl_bin())
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--seeds")
        .args(&seeds)
        .arg("--out")
        .arg(&out)
        .args(["--coop", "off", "--progress", "quiet", "--delay-min", "0"])
        .args(web.resolve_args())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let mut child = Command::new(crawl_bin())
        .args(["console", "--listen", "127.0.0.1:0", "--out"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = console_address(&mut child, Default::default());
    let _console = Killed(child);
    b.goto(&format!("http://{addr}/"));
    b.wait_text("the state", "#state", Duration::from_secs(10), |t| {
        t == "not running"
    });
    assert_eq!(
        number(&b.text("#card-fetched .value")),
        11,
        "{}",
        b.text("#cards")
    );
    assert_eq!(
        b.eval("return document.getElementById('pause').disabled"),
        true
    );
    // A seed added here is queued when the crawl next starts.
    b.type_into("#seed-url", &format!("{}/", web.origin("b.test")));
    b.click("#add-seed");
    b.wait_text("the seed logged", "#msg", Duration::from_secs(10), |t| {
        t.contains("at the next start")
    });
    let before = web.log().iter().filter(|l| l.host == "b.test").count();
    assert_eq!(before, 0);
    let o = Command::new(crawl_bin())
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(&out)
        .args(["--coop", "off", "--progress", "quiet", "--delay-min", "0"])
        .args(web.resolve_args())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fetched = web
        .log()
        .iter()
        .filter(|l| l.host == "b.test" && l.status == 200 && l.target != "/robots.txt")
        .count();
    assert_eq!(
        fetched, 11,
        "b.test's 10 pages and its home page, from the seed added"
    );
}

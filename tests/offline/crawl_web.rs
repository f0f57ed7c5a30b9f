//! The crawler against a web of our own on loopback (`webcoop_testkit::testweb`): several virtual
//! hosts with known links, robots.txt variants, traps, failures, redirects and rate limits.
//! Everything is asserted from the server's side: what was requested, how often, how far
//! apart. The crawler runs as its real binary, as an operator would run it.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{self, HostSpec, Robots, TestWeb};

fn crawl_bin() -> std::path::PathBuf {
    testkit::workspace_bin("webcoop-crawl")
}

fn crawl_command(web: &TestWeb, out: &Path, config: &str, extra: &[&str]) -> Command {
    let cfg = out.with_extension("toml");
    // These tests count the engine's own requests exactly; cooperation (its probes of
    // /robots.rdf and /sitemap.xml) is tested in crawl_coop.rs.
    let config = if config.contains("coop") {
        config.to_string()
    } else {
        format!("{config}coop = \"off\"\n")
    };
    std::fs::write(&cfg, config).unwrap();
    let mut c = Command::new(crawl_bin());
    c.arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(out)
        .arg("--config")
        .arg(&cfg)
        .args(["--progress", "quiet"])
        .args(web.resolve_args())
        .args(extra);
    c
}

fn crawl(web: &TestWeb, out: &Path, config: &str, extra: &[&str]) -> Output {
    let o = crawl_command(web, out, config, extra).output().unwrap();
    assert!(
        o.status.success(),
        "crawl failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn status_json(out: &Path) -> serde_json::Value {
    let o = testkit::run_ok(
        Command::new(crawl_bin())
            .args(["status", "--json", "--out"])
            .arg(out),
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Requests per host, in arrival order.
fn by_host(web: &TestWeb) -> HashMap<String, Vec<testweb::Logged>> {
    let mut out: HashMap<String, Vec<testweb::Logged>> = HashMap::new();
    for r in web.log() {
        out.entry(r.host.clone()).or_default().push(r);
    }
    out
}

fn answered_paths(log: &[testweb::Logged]) -> Vec<String> {
    log.iter()
        .filter(|r| r.status != 0)
        .map(|r| r.target.clone())
        .collect()
}

fn assert_spacing(host: &str, log: &[testweb::Logged], min: Duration) {
    for w in log.windows(2) {
        let gap = w[1].arrived.duration_since(w[0].arrived);
        assert!(
            gap >= min,
            "{host}: {} then {} only {gap:?} apart (delay {min:?})",
            w[0].target,
            w[1].target
        );
    }
}

const QUICK: &str = "park_base = 0.2\nhost_give_up = 2\nmax_attempts = 3\n";

#[test]
fn a_polite_crawl_of_a_small_web_fetches_every_allowed_page_once() {
    let others = [
        "beta.test",
        "gamma.test",
        "delta.test",
        "epsilon.test",
        "zeta.test",
        "eta.test",
    ];
    let mut alpha = HostSpec::new("alpha.test", 20).with_features();
    alpha.links_to = others.iter().map(|h| h.to_string()).collect();
    let web = TestWeb::start(vec![
        alpha,
        HostSpec::new("beta.test", 12).robots(Robots::NotFound),
        HostSpec::new("gamma.test", 5).robots(Robots::DisallowAll),
        HostSpec::new("delta.test", 5).robots(Robots::ServerError),
        HostSpec::new("epsilon.test", 5).robots(Robots::Timeout),
        HostSpec::new("zeta.test", 4).robots(Robots::CrawlDelay(0.5)),
        HostSpec::new("eta.test", 5).robots(Robots::CrawlDelay(60.0)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let seed = format!("{}/", web.origin("alpha.test"));
    let started = Instant::now();
    let o = crawl(
        &web,
        &out,
        QUICK,
        &[
            "--seeds",
            &seed,
            "--scope",
            "any",
            "--delay-min",
            "0.1",
            "--delay-factor",
            "1",
            "--timeout",
            "3",
        ],
    );
    let summary = String::from_utf8_lossy(&o.stdout);
    eprintln!("{summary}took {:?}", started.elapsed());
    let hosts = by_host(&web);
    for (host, log) in &hosts {
        assert!(
            log.iter().all(|r| r
                .user_agent
                .as_deref()
                .is_some_and(|u| u.starts_with("webcoop-crawl/"))),
            "{host}: a request without our User-Agent"
        );
        assert_spacing(host, log, Duration::from_millis(100));
        assert_eq!(
            log[0].target, "/robots.txt",
            "{host}: robots.txt comes first"
        );
    }

    // robots.txt 404: every generated page exactly once, /private/ included.
    let beta = HostSpec::new("beta.test", 12).robots(Robots::NotFound);
    let mut got: Vec<String> = answered_paths(&hosts[&beta.name]);
    let mut expected: Vec<String> = beta.generated_paths().into_iter().collect();
    expected.push("/robots.txt".into());
    got.sort();
    expected.sort();
    assert_eq!(
        got, expected,
        "beta.test (robots.txt 404: everything allowed)"
    );
    let alpha_log = &hosts["alpha.test"];
    let alpha_counts: HashMap<&str, usize> = alpha_log.iter().fold(HashMap::new(), |mut m, r| {
        *m.entry(r.target.as_str()).or_insert(0) += 1;
        m
    });
    for p in HostSpec::new("alpha.test", 20)
        .with_features()
        .generated_paths()
    {
        assert_eq!(alpha_counts.get(p.as_str()), Some(&1), "alpha.test {p}");
    }
    assert!(
        !alpha_counts.keys().any(|p| p.starts_with("/private/")),
        "robots.txt forbids /private/"
    );
    for once in [
        "/robots.txt",
        "/session",
        "/session?page=2",
        "/loop/a",
        "/loop/b",
        "/moved",
        "/landing.html",
        "/slow.html",
        "/fail.html",
        "/big.bin",
        "/gz.html",
        "/from-gz.html",
        "/dup/a/page.html",
        "/dup/b/page.html",
        "/image.png",
        "/plain.txt",
        "/nofollow.html",
        "/header-nofollow.html",
        "/other-bot.html",
        "/for-us.html",
        "/missing.html",
        "/deep/15.html",
    ] {
        assert_eq!(alpha_counts.get(once), Some(&1), "alpha.test {once} once");
    }
    for d in 0..5 {
        assert_eq!(
            alpha_counts.get(format!("/cal?d={d}").as_str()),
            Some(&1),
            "calendar day {d} (dynamic depth {})",
            d + 1
        );
    }
    assert!(
        !alpha_counts.contains_key("/deep/16.html"),
        "static pages stop at depth 15"
    );
    for never in testweb::NEVER {
        assert!(
            !alpha_counts.contains_key(never),
            "{never} must never be requested"
        );
    }
    let children = ["/dup/a/child.html", "/dup/b/child.html"]
        .iter()
        .filter(|c| alpha_counts.contains_key(**c))
        .count();
    assert_eq!(
        children, 1,
        "the links of a duplicate page are not followed"
    );
    let busy: Vec<&testweb::Logged> = alpha_log
        .iter()
        .filter(|r| r.target == "/busy.html")
        .collect();
    assert_eq!(
        busy.iter().map(|r| r.status).collect::<Vec<_>>(),
        [429, 200]
    );
    let wait = busy[1].arrived.duration_since(busy[0].arrived);
    assert!(
        wait >= Duration::from_secs(2),
        "Retry-After: 2 honoured, waited {wait:?}"
    );
    let after_busy = alpha_log
        .iter()
        .find(|r| r.arrived > busy[0].arrived)
        .unwrap();
    assert!(
        after_busy.arrived.duration_since(busy[0].arrived) >= Duration::from_secs(2),
        "the whole host backs off after a 429, not just the URL"
    );

    // robots.txt variants.
    let only_robots = |host: &str| {
        let log = &hosts[host];
        assert!(
            log.iter().all(|r| r.target == "/robots.txt"),
            "{host}: only robots.txt, got {:?}",
            answered_paths(log)
        );
        log.len()
    };
    assert_eq!(
        only_robots("gamma.test"),
        1,
        "Disallow: / -- nothing else fetched"
    );
    assert_eq!(
        only_robots("delta.test"),
        2,
        "500 -- tried again after parking, then given up"
    );
    assert_eq!(only_robots("epsilon.test"), 2, "timeout -- same");
    assert_eq!(
        only_robots("eta.test"),
        1,
        "Crawl-delay over the cap -- skipped"
    );
    let zeta = &hosts["zeta.test"];
    assert_eq!(zeta.len(), 1 + 5, "robots.txt, /, and 4 pages");
    assert_spacing("zeta.test", zeta, Duration::from_millis(500));

    let st = status_json(&out);
    assert_eq!(
        st["queued"], 1,
        "eta.test's home page waits for a higher Crawl-delay cap"
    );
    assert_eq!(st["failures"], 2, "the home pages of the hosts given up on");
    assert_eq!(st["running"], false);
    let skipped: Vec<String> = st["skipped_hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["origin"].as_str().unwrap().to_string())
        .collect();
    let origins: BTreeSet<String> = skipped
        .iter()
        .map(|o| {
            o.split("//")
                .nth(1)
                .unwrap()
                .split(':')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        origins,
        BTreeSet::from([
            "delta.test".to_string(),
            "epsilon.test".into(),
            "eta.test".into()
        ])
    );
    assert!(summary.contains("Crawl-delay of 60 s"), "{summary}");
    assert_eq!(
        st["disallowed"],
        20 + 4 + 1,
        "alpha's /private/ pages, zeta's, gamma's home"
    );
    assert_eq!(st["duplicates"], 1);

    // The archive: valid for warcio, one capture per answered page, the truncated body kept
    // to the limit.
    let records = testkit::warcio_records(&out);
    if !records.is_empty() {
        let count = |t: &str, uri: &str| {
            records
                .iter()
                .filter(|(rt, u)| rt == t && u.ends_with(uri))
                .count()
        };
        assert_eq!(records.iter().filter(|(t, _)| t == "warcinfo").count(), 1);
        assert_eq!(count("response", "/big.bin"), 1);
        assert_eq!(
            count("response", "/busy.html"),
            1,
            "the 429 was retried, not archived"
        );
        assert_eq!(
            count("revisit", "/page.html"),
            1,
            "the duplicate is a revisit record"
        );
        assert_eq!(count("response", "/gz.html"), 1);
    }
}

#[test]
fn resume_after_kill_9_fetches_nothing_twice() {
    for (name, config) in [
        ("state saved often", QUICK.to_string()),
        (
            "state never saved before the kill: everything replayed from the archive",
            format!("{QUICK}commit_interval = 3600\ncommit_results = 1000000\n"),
        ),
    ] {
        let specs = vec![
            HostSpec::new("one.test", 30),
            HostSpec::new("two.test", 30).robots(Robots::NotFound),
            HostSpec::new("three.test", 30),
        ];
        let web = TestWeb::start(specs.clone());
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("crawl");
        let seeds: Vec<String> = specs
            .iter()
            .map(|s| format!("{}/", web.origin(&s.name)))
            .collect();
        let mut args: Vec<&str> = vec![
            "--delay-min",
            "0.02",
            "--delay-factor",
            "0",
            "--metrics",
            "127.0.0.1:0",
            "--seeds",
        ];
        args.extend(seeds.iter().map(String::as_str));
        web.close_gate_after(50);
        let mut child = crawl_command(&web, &out, &config, &args)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while web.arrivals() <= 50 {
            assert!(
                Instant::now() < deadline,
                "{name}: the crawl never reached the gate"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Let the answered responses land in the archive, then look at it while it runs.
        std::thread::sleep(Duration::from_millis(400));
        let st = status_json(&out);
        assert_eq!(st["running"], true, "{name}");
        child.kill().unwrap();
        let _ = child.wait();
        let stderr = std::io::read_to_string(child.stderr.take().unwrap()).unwrap_or_default();
        assert!(stderr.contains("metrics at http://127.0.0.1:"), "{stderr}");
        assert!(
            !testkit_status_running(&out),
            "{name}: the lock went with the process"
        );

        web.open_gate();
        let o = crawl(&web, &out, &config, &args);
        let summary = String::from_utf8_lossy(&o.stdout);
        let counts = web.answered_counts();
        for spec in &specs {
            let mut expected: Vec<String> = spec.generated_paths().into_iter().collect();
            expected.push("/robots.txt".into());
            for p in expected {
                assert_eq!(
                    counts
                        .get(&(spec.name.clone(), p.clone()))
                        .copied()
                        .unwrap_or(0),
                    1,
                    "{name}: {} {p} answered once over both runs\n{summary}",
                    spec.name
                );
            }
        }
        assert!(
            counts.values().all(|c| *c == 1),
            "{name}: something answered twice: {counts:?}"
        );
        if name.contains("replayed") {
            assert!(summary.contains("replayed from the archive"), "{summary}");
        }
        let st = status_json(&out);
        assert_eq!(st["queued"], 0, "{name}");
        let expected_pages: usize = specs
            .iter()
            .map(|s| {
                s.generated_paths().len()
                    + if s.robots == Robots::Allow {
                        s.pages
                    } else {
                        0
                    }
            })
            .sum();
        assert_eq!(
            st["pages"], expected_pages,
            "{name}: every page recorded once"
        );
        let records = testkit::warcio_records(&out);
        if !records.is_empty() {
            let responses = records.iter().filter(|(t, _)| t == "response").count();
            assert_eq!(
                responses,
                counts.len(),
                "{name}: one capture per answered request"
            );
        }
    }
}

fn testkit_status_running(out: &Path) -> bool {
    status_json(out)["running"] == true
}

#[test]
fn a_refresh_pass_revisits_with_conditional_requests() {
    let spec = HostSpec::new("site.test", 8).robots(Robots::NotFound);
    let web = TestWeb::start(vec![spec.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let seed = format!("{}/", web.origin("site.test"));
    let args = ["--seeds", &seed, "--delay-min", "0", "--delay-factor", "0"];
    crawl(&web, &out, QUICK, &args);
    let first = web.log().len();
    web.change("site.test", "/p/3.html");
    crawl(&web, &out, QUICK, &[&args[..], &["--refresh"]].concat());
    let log = web.log();
    let revisits: Vec<&testweb::Logged> = log[first..]
        .iter()
        .filter(|r| r.target != "/robots.txt")
        .collect();
    assert_eq!(
        revisits.len(),
        log.len() - first,
        "robots.txt is kept 24 hours: not fetched again"
    );
    assert_eq!(
        revisits.len(),
        spec.generated_paths().len(),
        "each page once more"
    );
    for r in &revisits {
        assert!(
            r.if_none_match.is_some()
                && r.if_modified_since.as_deref() == Some(testweb::LAST_MODIFIED),
            "{r:?}"
        );
        let expected = if r.target == "/p/3.html" { 200 } else { 304 };
        assert_eq!(r.status, expected, "{}", r.target);
    }
    let st = status_json(&out);
    assert_eq!(st["not_modified"], spec.generated_paths().len() - 1);
    assert_eq!(st["changes"], 1);
    let records = testkit::warcio_records(&out);
    if !records.is_empty() {
        let revisit = records.iter().filter(|(t, _)| t == "revisit").count();
        assert_eq!(
            revisit,
            spec.generated_paths().len() - 1,
            "a revisit record per 304"
        );
    }
    // Running the same command again: the pass is over, a new one starts.
    let before = web.log().len();
    crawl(&web, &out, QUICK, &[&args[..], &["--refresh"]].concat());
    assert_eq!(
        web.log().len() - before,
        spec.generated_paths().len(),
        "a new pass: every page again"
    );
}

#[test]
fn a_page_budget_is_kept_over_runs() {
    let web = TestWeb::start(vec![
        HostSpec::new("budget.test", 30).robots(Robots::NotFound),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let seed = format!("{}/", web.origin("budget.test"));
    let base = ["--seeds", &seed, "--delay-min", "0", "--delay-factor", "0"];
    crawl(
        &web,
        &out,
        QUICK,
        &[&base[..], &["--max-pages", "5"]].concat(),
    );
    assert_eq!(status_json(&out)["fetched"], 5);
    crawl(
        &web,
        &out,
        QUICK,
        &[&base[..], &["--max-pages", "12"]].concat(),
    );
    assert_eq!(status_json(&out)["fetched"], 12);
    let counts = web.answered_counts();
    assert_eq!(counts.len(), 13, "12 pages and robots.txt");
    assert!(counts.values().all(|c| *c == 1));
}

#[test]
fn every_option_may_come_from_the_environment_and_the_command_line_wins() {
    let web = TestWeb::start(vec![HostSpec::new("env.test", 30).robots(Robots::NotFound)]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let seed = format!("{}/", web.origin("env.test"));
    let o = crawl_command(&web, &out, QUICK, &[])
        .env("WEBCOOP_CRAWL_SEEDS", &seed)
        .env("WEBCOOP_CRAWL_MAX_PAGES", "3")
        .env("WEBCOOP_CRAWL_DELAY_MIN", "0")
        .env("WEBCOOP_CRAWL_DELAY_FACTOR", "0")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(status_json(&out)["fetched"], 3);
    // The command line beats the environment.
    let o = crawl_command(&web, &out, QUICK, &["--max-pages", "5"])
        .env("WEBCOOP_CRAWL_MAX_PAGES", "4")
        .env("WEBCOOP_CRAWL_DELAY_MIN", "0")
        .env("WEBCOOP_CRAWL_DELAY_FACTOR", "0")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(status_json(&out)["fetched"], 5);
    // A bad value is named with its variable; `--help` names variables, never their values.
    let o = Command::new(crawl_bin())
        .args(["crawl", "--out"])
        .arg(&out)
        .env("WEBCOOP_CRAWL_MAX_PAGES", "many")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("many") && err.contains("--max-pages"), "{err}");
    let help = Command::new(crawl_bin())
        .args(["crawl", "--help"])
        .env(
            "WEBCOOP_CRAWL_CONSOLE_TOKEN",
            "s3cret-s3cret-s3cret-s3cret-s3cret",
        )
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("[env: WEBCOOP_CRAWL_MAX_DEPTH"), "{help}");
    assert!(help.contains("WEBCOOP_CRAWL_CONSOLE_TOKEN"), "{help}");
    assert!(!help.contains("s3cret"), "{help}");
}

#[test]
fn bad_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let o = Command::new(crawl_bin()).args(args).output().unwrap();
        assert!(!o.status.success(), "{args:?} should fail");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let out = dir.path().join("c");
    let out = out.to_str().unwrap();
    assert!(run(&["crawl", "--allow-net", "127.0.0.0/8", "--out", out]).contains("no seeds"));
    assert!(
        run(&[
            "crawl",
            "--allow-net",
            "127.0.0.0/8",
            "--out",
            out,
            "--seeds",
            "/no/such/list"
        ])
        .contains("seed file /no/such/list")
    );
    assert!(
        run(&[
            "crawl",
            "--allow-net",
            "127.0.0.0/8",
            "--out",
            out,
            "--seeds",
            "http://x.test/",
            "--scope",
            "(["
        ])
        .contains("regular expression")
    );
    assert!(run(&["status", "--out", "/no/such/dir"]).contains("holds no crawl"));
    // A second crawl on a directory in use is refused.
    let web = TestWeb::start(vec![HostSpec::new("slow.test", 3).robots(Robots::Timeout)]);
    let seed = format!("{}/", web.origin("slow.test"));
    let mut first = crawl_command(
        &web,
        Path::new(out),
        QUICK,
        &["--seeds", &seed, "--timeout", "30"],
    )
    .spawn()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while web.arrivals() == 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = crawl_command(&web, Path::new(out), QUICK, &["--seeds", &seed])
        .output()
        .unwrap();
    let _ = first.kill();
    let _ = first.wait();
    assert!(String::from_utf8_lossy(&second.stderr).contains("in use by another webcoop-crawl"));
}

#[test]
fn ctrl_c_stops_after_the_requests_under_way_and_the_crawl_resumes() {
    let specs = vec![HostSpec::new("one.test", 25), HostSpec::new("two.test", 25)];
    let web = TestWeb::start(specs.clone());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let seeds: Vec<String> = specs
        .iter()
        .map(|s| format!("{}/", web.origin(&s.name)))
        .collect();
    let mut args: Vec<&str> = vec!["--delay-min", "0.05", "--delay-factor", "0", "--seeds"];
    args.extend(seeds.iter().map(String::as_str));
    let child = crawl_command(&web, &out, QUICK, &args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while web.arrivals() < 20 {
        assert!(Instant::now() < deadline, "the crawl never got going");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: SIGINT (Ctrl-C) to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let summary = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{summary}");
    assert!(summary.contains("stopped before the end"), "{summary}");
    let stopped_at = web.arrivals();
    assert!(
        web.log().iter().all(|r| r.status != 0),
        "the requests under way were finished"
    );
    let st = status_json(&out);
    assert!(st["queued"].as_u64().unwrap() > 0, "{st}");

    crawl(&web, &out, QUICK, &args);
    assert!(web.arrivals() > stopped_at);
    let counts = web.answered_counts();
    assert!(
        counts.values().all(|c| *c == 1),
        "something fetched twice: {counts:?}"
    );
    let expected: usize = specs.iter().map(|s| s.generated_paths().len() + 1).sum();
    assert_eq!(
        counts.len(),
        expected,
        "every page and robots.txt of both hosts"
    );
}

#[test]
fn keep_fresh_revisits_on_schedule_and_a_changing_page_more_often() {
    let spec = HostSpec::new("fresh.test", 6).robots(Robots::NotFound);
    let web = TestWeb::start(vec![spec.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let seed = format!("{}/", web.origin("fresh.test"));
    let config = format!("{QUICK}refresh_min_interval = 0.3\n");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let changer = {
        let done = done.clone();
        let web_state = web.changer();
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                web_state("fresh.test", "/p/3.html");
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let started = Instant::now();
    let o = crawl(
        &web,
        &out,
        &config,
        &[
            "--seeds",
            &seed,
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
            "--keep-fresh",
            "--refresh-policy",
            "sqrt",
            "--refresh-cycle",
            "2",
            "--run-for",
            "12",
        ],
    );
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    changer.join().unwrap();
    if std::env::var_os("WEBCOOP_DEBUG").is_some() {
        eprintln!("{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(started.elapsed() >= Duration::from_secs(12), "{o:?}");
    let counts = web.answered_counts();
    let pages = spec.generated_paths();
    let visits = |p: &str| {
        counts
            .get(&("fresh.test".to_string(), p.to_string()))
            .copied()
    };
    let mut others = Vec::new();
    for p in &pages {
        let n = visits(p).unwrap_or(0);
        assert!(n >= 3, "{p} visited {n} times: {counts:?}");
        if p != "/p/3.html" {
            others.push(n);
        }
    }
    others.sort_unstable();
    let changing = visits("/p/3.html").unwrap_or(0);
    let median = others[others.len() / 2];
    assert!(
        changing > median,
        "/p/3.html {changing} visits, median of the rest {median}"
    );
    // Revisits are conditional, and the unchanged pages answer 304.
    let log = web.log();
    let conditional = log
        .iter()
        .filter(|r| r.if_none_match.is_some() && r.target != "/p/3.html")
        .filter(|r| r.status == 304)
        .count();
    assert!(conditional >= 2 * (pages.len() - 1), "{conditional}");
    // The budget is about one visit per page per 2 s, plus discovery.
    let total: usize = others.iter().sum::<usize>() + changing;
    assert!(
        total as f64 <= pages.len() as f64 * (12.0 / 2.0 * 1.5 + 1.0),
        "{total}"
    );
}

mod politeness;

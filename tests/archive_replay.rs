//! The crawl's archive in archivists' tools: `webcoop-crawl index` against pywb's
//! `cdxj-indexer` line for line, `webcoop-crawl export --wacz` through `wacz validate`, and the
//! WARC files added to a pywb collection and replayed by `wayback`, sampled pages compared byte
//! for byte with the site.

use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop::servers::{Killed, http_get};
use webcoop_testkit::testweb::{HostSpec, TestWeb};
use webcoop_testkit::{reference_python, run_ok, workspace_bin};

fn crawl_bin() -> PathBuf {
    workspace_bin("webcoop-crawler", "webcoop-crawl")
}

/// A crawl of the test web, then a refresh pass (304s become `revisit` records).
fn crawled(web: &TestWeb, out: &Path) {
    for extra in [&[][..], &["--refresh"][..]] {
        run_ok(
            Command::new(crawl_bin())
                .arg("crawl")
                .arg("--seeds")
                .arg(format!("{}/", web.origin("a.test")))
                .arg("--out")
                .arg(out)
                .args(["--coop", "off", "--progress", "quiet", "--delay-min", "0"])
                .args(web.resolve_args())
                .args(extra),
        );
    }
}

fn tool_of(python: &Path, name: &str) -> PathBuf {
    python.parent().unwrap().join(name)
}

#[test]
fn the_index_is_cdxj_indexers_and_the_wacz_validates() {
    let Some(python) = reference_python() else {
        return;
    };
    let web = TestWeb::start(vec![HostSpec::new("a.test", 30).with_features()]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("crawl");
    crawled(&web, &out);

    let ours = run_ok(Command::new(crawl_bin()).args(["index", "--out"]).arg(&out));
    let mut warcs: Vec<PathBuf> = std::fs::read_dir(out.join("warc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    warcs.sort();
    let theirs = run_ok(Command::new(tool_of(&python, "cdxj-indexer")).args(&warcs));
    let (ours, theirs) = (
        String::from_utf8(ours.stdout).unwrap(),
        String::from_utf8(theirs.stdout).unwrap(),
    );
    assert!(ours.lines().count() > 40, "{ours}");
    assert!(
        ours.contains("\"mime\": \"warc/revisit\""),
        "the refresh pass's 304s"
    );
    assert!(ours.contains("\"status\": \"301\"") || ours.contains("\"status\": \"302\""));
    assert_eq!(
        ours, theirs,
        "webcoop-crawl index differs from cdxj-indexer"
    );
    // Sorted, as pywb and a WACZ keep it, and the same lines.
    let sorted = run_ok(
        Command::new(crawl_bin())
            .args(["index", "--sort", "--out"])
            .arg(&out)
            .arg("--output")
            .arg(tmp.path().join("index.cdxj")),
    );
    assert!(sorted.status.success());
    let written = std::fs::read_to_string(tmp.path().join("index.cdxj")).unwrap();
    let mut lines: Vec<&str> = theirs.lines().collect();
    lines.sort();
    assert_eq!(written.lines().collect::<Vec<_>>(), lines);

    let wacz = tmp.path().join("crawl.wacz");
    let export = run_ok(
        Command::new(crawl_bin())
            .args(["export", "--out"])
            .arg(&out)
            .arg("--wacz")
            .arg(&wacz),
    );
    let said = String::from_utf8_lossy(&export.stderr);
    assert!(said.contains("pages"), "{said}");
    let check = run_ok(
        Command::new(tool_of(&python, "wacz"))
            .args(["validate", "-f"])
            .arg(&wacz),
    );
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(report.contains("Validation succeeded"), "{report}");
    // What a bad package looks like to the same validator: one byte of a WARC changed.
    let mut bytes = std::fs::read(&wacz).unwrap();
    let at = bytes
        .windows(8)
        .position(|w| w == b"WARC/1.1")
        .unwrap_or(200);
    bytes[at + 100] ^= 1;
    let broken = tmp.path().join("broken.wacz");
    std::fs::write(&broken, bytes).unwrap();
    let check = Command::new(tool_of(&python, "wacz"))
        .args(["validate", "-f"])
        .arg(&broken)
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&check.stdout).contains("Validation succeeded"),
        "a corrupted WACZ passed"
    );
}

#[test]
fn pywb_replays_the_crawl_byte_for_byte() {
    let Some(python) = reference_python() else {
        return;
    };
    let web = TestWeb::start(vec![HostSpec::new("a.test", 20)]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("crawl");
    crawled(&web, &out);
    let pywb = tmp.path().join("pywb");
    std::fs::create_dir(&pywb).unwrap();
    run_ok(
        Command::new(tool_of(&python, "wb-manager"))
            .args(["init", "crawl"])
            .current_dir(&pywb),
    );
    let mut add = Command::new(tool_of(&python, "wb-manager"));
    add.args(["add", "crawl"]).current_dir(&pywb);
    for e in std::fs::read_dir(out.join("warc")).unwrap() {
        add.arg(e.unwrap().path());
    }
    run_ok(&mut add);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let wayback = Command::new(tool_of(&python, "wayback"))
        .args(["-p", &port.to_string(), "-b", "127.0.0.1"])
        .current_dir(&pywb)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _wayback = Killed(wayback);
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http_get(addr, "/", &[]).is_err() {
        assert!(Instant::now() < deadline, "wayback did not start");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Every page captured with 200, replayed in its original form (`id_`).
    let index = run_ok(Command::new(crawl_bin()).args(["index", "--out"]).arg(&out));
    let mut compared = 0;
    for line in String::from_utf8(index.stdout).unwrap().lines() {
        let mut parts = line.splitn(3, ' ');
        let (_, ts, json) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        if v["status"] != "200" || v["mime"] != "text/html" {
            continue;
        }
        let url = v["url"].as_str().unwrap();
        let replayed = http_get(addr, &format!("/crawl/{ts}id_/{url}"), &[]).unwrap();
        assert_eq!(replayed.status, 200, "{url}");
        let mut body = replayed.body.clone();
        if replayed.header("content-encoding") == Some("gzip") {
            let mut d = Vec::new();
            GzDecoder::new(&body[..]).read_to_end(&mut d).unwrap();
            body = d;
        }
        let path = url.split_once("a.test").unwrap().1;
        let path = &path[path.find('/').unwrap()..];
        let live = http_get(web.addr, path, &[("Host", "a.test")]).unwrap();
        assert_eq!(body, live.body, "{url} replayed differs from the site");
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} pages replayed");
}

//! The crawl's archive in archivists' tools: `webcoop-crawl index` against pywb's
//! `cdxj-indexer` line for line, `webcoop-crawl export --wacz` through `wacz validate`, and the
//! WARC files added to a pywb collection and replayed by `wayback`, sampled pages compared byte
//! for byte with the site.

use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use webcoop::servers::http_get;
use webcoop_crawler::archives::warc;
use webcoop_testkit::pywb::{Wayback, venv_tool};
use webcoop_testkit::testweb::{HostSpec, TestWeb};
use webcoop_testkit::{reference_python, run_ok, warc_files, workspace_bin};

fn crawl_bin() -> PathBuf {
    workspace_bin("webcoop-crawl")
}

/// A crawl of the test web, then a refresh pass (304s become `revisit` records of the
/// server-not-modified profile), then one without validators (unchanged pages become
/// `revisit` records of the identical-payload-digest profile).
fn crawled(web: &TestWeb, out: &Path) {
    let unconditional = out.with_extension("toml");
    std::fs::write(&unconditional, "conditional = false\n").unwrap();
    let unconditional = [
        "--refresh".into(),
        "--config".into(),
        unconditional.into_os_string(),
    ];
    let passes: [&[std::ffi::OsString]; 3] = [&[], &["--refresh".into()], &unconditional];
    for extra in passes {
        run_ok(
            Command::new(crawl_bin())
                .arg("crawl")
                .args(["--allow-net", "127.0.0.0/8"])
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
    let warcs = warc_files(&out);
    let theirs = run_ok(Command::new(venv_tool(&python, "cdxj-indexer")).args(&warcs));
    let (ours, theirs) = (
        String::from_utf8(ours.stdout).unwrap(),
        String::from_utf8(theirs.stdout).unwrap(),
    );
    assert!(ours.lines().count() > 40, "{ours}");
    assert!(
        ours.contains("\"mime\": \"warc/revisit\""),
        "the refresh passes' revisits"
    );
    let profiles: Vec<String> = warcs
        .iter()
        .flat_map(|w| warc::read_records(w, 0).unwrap())
        .filter_map(|r| r.header("WARC-Profile").map(str::to_string))
        .collect();
    for profile in ["server-not-modified", "identical-payload-digest"] {
        assert!(
            profiles.iter().filter(|p| p.ends_with(profile)).count() >= 20,
            "{profile}: {profiles:?}"
        );
    }
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
        Command::new(venv_tool(&python, "wacz"))
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
    let check = Command::new(venv_tool(&python, "wacz"))
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
    let wayback = Wayback::start(&python, &warc_files(&out));
    let addr = wayback.addr;
    // Every page captured with 200, replayed in its original form (`id_`).
    let index = run_ok(Command::new(crawl_bin()).args(["index", "--out"]).arg(&out));
    let mut compared = 0;
    for line in String::from_utf8(index.stdout).unwrap().lines() {
        let mut parts = line.splitn(3, ' ');
        let (_, ts, json) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        // Pages captured whole, and the revisits of unchanged ones, which replay the same.
        let page = v["mime"] == "text/html" || v["mime"] == "warc/revisit";
        if v["status"] != "200" || !page {
            continue;
        }
        let url = v["url"].as_str().unwrap();
        let replayed = http_get(addr, &wayback.original(ts, url), &[]).unwrap();
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
    assert!(compared >= 40, "only {compared} captures replayed");
}

//! Usage preferences, crawled for each purpose: a robots.txt with aipref `Content-Usage`
//! rules and Cloudflare `Content-Signal` lines, paths that conflict, another crawler's group and
//! junk, plus a page whose `Content-Usage` header refuses training, all served by Debian's
//! nginx. What was fetched is read from nginx's own log; what was kept from the WARC files,
//! read by warcio.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use webcoop::servers::Nginx;
use webcoop_testkit::{reference_python, run_ok, tool, warc_files, warcio_records, workspace_bin};

const ROBOTS: &str = "\
User-agent: *
Disallow: /disallowed/
Content-Signal: search=yes, ai-input=yes
Content-Usage: /news/ search=n
Content-Usage: /books/ train-ai=n
Content-Usage: /open/ train-ai=y
Content-Signal: /open/ ai-train=no
Content-Usage: /answers/ ai-use=n
Content-Usage: /junk/ frobnicate
Content-Fancy: yes please

User-agent: otherbot
Content-Usage: train-ai=n, search=n, ai-use=n
";

const PAGES: &[&str] = &[
    "/index.html",
    "/plain.html",
    "/news/n.html",
    "/books/b.html",
    "/open/o.html",
    "/answers/a.html",
    "/junk/j.html",
    "/header.html",
    "/disallowed/d.html",
];

fn site(root: &Path) {
    let links: String = PAGES
        .iter()
        .map(|p| format!("<a href=\"{p}\">{p}</a> "))
        .collect();
    for p in PAGES {
        let path = root.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            path,
            format!("<html><body><h1>{p}</h1>{links}</body></html>"),
        )
        .unwrap();
    }
    std::fs::write(root.join("robots.txt"), ROBOTS).unwrap();
}

/// The paths nginx answered to the crawler.
fn fetched(log: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("webcoop-crawl/"))
        .filter_map(|l| l.split('"').nth(1))
        .filter_map(|request| request.split(' ').nth(1))
        .map(str::to_string)
        .collect()
}

/// The response records of a crawl as warcio reads them: target URI and the usage field.
fn captures(out: &Path) -> Vec<(String, String)> {
    warcio_records(out); // checks every digest
    let Some(python) = reference_python() else {
        return Vec::new();
    };
    let index = run_ok(
        Command::new(python)
            .args(["-m", "warcio.cli", "index", "-f"])
            .arg("warc-type,warc-target-uri,warc-webcoop-content-usage")
            .args(warc_files(out)),
    );
    String::from_utf8_lossy(&index.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["warc-type"] == "response")
        .map(|v| {
            let field = |k: &str| v[k].as_str().unwrap_or("").to_string();
            (
                field("warc-target-uri"),
                field("warc-webcoop-content-usage"),
            )
        })
        .collect()
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

#[test]
fn each_purpose_skips_what_the_site_refuses_for_it() {
    let Some(nginx) = tool("nginx") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("www");
    site(&root);
    let log = tmp.path().join("access.log");
    let conf = format!(
        "server {{\n    listen 80;\n    root /unused;\n    access_log {};\n    location = /header.html {{\n        add_header Content-Usage \"train-ai=n\";\n    }}\n}}\n",
        log.display()
    );
    let server = Nginx::start(&nginx, &conf, &root);
    let base = server.url();

    let mut crawled = Vec::new();
    for purpose in ["", "search", "ai-input", "ai-train"] {
        std::fs::write(&log, "").unwrap();
        let out = tmp.path().join(format!("crawl-{purpose}"));
        let mut cmd = crate::common::loopback_crawl();
        cmd.arg("--seeds")
            .arg(format!("{base}index.html"))
            .arg("--out")
            .arg(&out);
        if !purpose.is_empty() {
            cmd.args(["--purpose", purpose]);
        }
        let o = run_ok(&mut cmd);
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        // The junk is reported once per reading of robots.txt, never line by line.
        assert!(
            stderr.matches("usage preference line").count() == 1,
            "{stderr}"
        );
        let status = run_ok(
            Command::new(workspace_bin("webcoop-crawl"))
                .args(["status", "--json", "--out"])
                .arg(&out),
        );
        let figures: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        crawled.push((purpose, fetched(&log), out, figures));
    }

    let all = set(&[
        "/robots.txt",
        "/index.html",
        "/plain.html",
        "/news/n.html",
        "/books/b.html",
        "/open/o.html",
        "/answers/a.html",
        "/junk/j.html",
        "/header.html",
    ]);
    let without = |gone: &[&str]| -> BTreeSet<String> {
        all.iter()
            .filter(|p| !gone.contains(&p.as_str()))
            .cloned()
            .collect()
    };
    let expected = [
        ("", all.clone()),
        ("search", without(&["/news/n.html"])),
        ("ai-input", without(&["/answers/a.html"])),
        // /open/ says train-ai=y and ai-train=no at the same length: the refusal holds.
        ("ai-train", without(&["/books/b.html", "/open/o.html"])),
    ];
    for ((purpose, fetched, _, figures), (want_purpose, want)) in crawled.iter().zip(expected) {
        assert_eq!(*purpose, want_purpose);
        assert_eq!(fetched, &want, "purpose {purpose:?}: {figures}");
    }

    // Counted: skipped without a request, or fetched and not kept for the header.
    let figures = |i: usize| &crawled[i].3;
    assert_eq!(figures(0)["usage_skipped"], 0);
    assert_eq!(figures(1)["usage_skipped"], 1);
    assert_eq!(figures(3)["usage_skipped"], 2);
    assert_eq!(figures(3)["usage_not_kept"], 1, "/header.html");
    assert_eq!(figures(0)["usage_not_kept"], 0);

    // Every capture says which preferences applied; the refused page is not in the archive.
    let records = |i: usize| captures(&crawled[i].2);
    let kept = records(0);
    let usage_of = |path: &str| {
        kept.iter()
            .find(|(uri, _)| uri.ends_with(path))
            .map(|(_, usage)| usage.clone())
            .unwrap_or_default()
    };
    // The longest matching rule applies whole (draft-ietf-aipref-attach): /books/ says only
    // train-ai, the site-wide line does not reach under it.
    assert_eq!(usage_of("/books/b.html"), "train-ai=n");
    assert_eq!(usage_of("/plain.html"), "search=y, ai-use=y");
    assert_eq!(
        usage_of("/header.html"),
        "search=y, ai-use=y, train-ai=n",
        "robots.txt and the header together"
    );
    assert!(
        !records(3)
            .iter()
            .any(|(uri, _)| uri.ends_with("/header.html")),
        "a page refused by its header is not kept"
    );
}

/// The webmaster states the preferences once, to the agent: robots.rdf, the changes feed and
/// the snapshot carry them, a crawler for a refused purpose keeps nothing of the site (its
/// snapshot included) though robots.txt says nothing, and `check` says what robots.txt lacks.
#[test]
fn preferences_stated_to_the_agent_reach_the_crawler_without_robots_txt() {
    use super::crawl_coop::{Site, crawler, held, wait_for};
    let Some(site) = Site::start_conf(12, |c| c, &["--content-usage", "search=y, train-ai=n"])
    else {
        return;
    };
    let listing = webcoop::servers::http_get(site.nginx.addr, "/robots.rdf", &[]).unwrap();
    let rdf = webcoop_protocol::robots_rdf::parse(&listing.body, &Default::default()).unwrap();
    assert_eq!(
        rdf.channel.content_usage.as_deref(),
        Some("search=y, train-ai=n")
    );
    let feed =
        webcoop::servers::http_get(site.nginx.addr, "/.well-known/webcoop/changes?since=0", &[])
            .unwrap();
    let feed = webcoop_protocol::changes_feed::parse(&feed.body, &Default::default()).unwrap();
    assert_eq!(feed.content_usage.as_deref(), Some("search=y, train-ai=n"));

    // A crawl for search keeps the site; one for training keeps none of it, snapshot or not.
    let searching = site.tmp.path().join("crawl-search");
    let training = site.tmp.path().join("crawl-train");
    let s = crawler(&site, &searching, "meta", 20, &["--purpose", "search"]);
    let t = crawler(&site, &training, "meta", 20, &["--purpose", "ai-train"]);
    wait_for(
        "the search crawl",
        std::time::Duration::from_secs(20),
        || held(&searching) == site.truth(),
    );
    let skipped = |out: &Path| {
        let o = run_ok(
            Command::new(workspace_bin("webcoop-crawl"))
                .args(["status", "--json", "--out"])
                .arg(out),
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["usage_skipped"]
            .as_u64()
            .unwrap_or(0)
    };
    wait_for(
        "the training crawl's skips",
        std::time::Duration::from_secs(20),
        || skipped(&training) >= site.truth().len() as u64,
    );
    drop((s, t));
    assert!(held(&training).is_empty(), "{:?}", held(&training));
    assert_eq!(skipped(&searching), 0);

    // check: robots.txt (the agent's pointer lines only) says nothing of either purpose.
    let o = Command::new(workspace_bin("webcoop-agent"))
        .arg("--docroot")
        .arg(&site.www)
        .arg("--state")
        .arg(site.tmp.path().join("state"))
        .args([
            "--base-url",
            &site.nginx.url(),
            "--server-url",
            &site.nginx.url(),
        ])
        .args(["--content-usage", "search=y, train-ai=n", "check"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(
        report.contains("add \"Content-Usage: train-ai=n\" to the \"User-agent: *\" group"),
        "{report}"
    );
    assert!(report.contains("Content-Usage: search=y"), "{report}");
}

//! The crawler against a real documentation site: the Python 3.11 docs (Debian's
//! `python3.11-doc`) served by Debian's nginx on loopback with the shipped example
//! configuration, compared page for page with `wget --recursive` on the same site.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Instant;
use webcoop::servers::Nginx;
use webcoop_testkit as testkit;

const DOCS: &str = "/usr/share/doc/python3.11/html";

/// HTML pages (200, text/html) in a crawl.log, as paths with `/` read as `/index.html`.
fn crawled_html(log: &str, origin: &str) -> BTreeSet<String> {
    log.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.len() >= 7 && f[1] == "200" && f[6] == "text/html").then(|| f[3])
        })
        .filter_map(|url| url.strip_prefix(origin))
        .map(|p| {
            if p.ends_with('/') {
                format!("{p}index.html")
            } else {
                p.to_string()
            }
        })
        .collect()
}

fn html_files(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html") {
                out.insert(format!("/{}", p.strip_prefix(root).unwrap().display()));
            }
        }
    }
    out
}

#[test]
fn crawls_the_python_docs_like_wget_does() {
    let (Some(nginx), Some(wget), Some(docs)) = (
        testkit::tool("nginx"),
        testkit::tool("wget"),
        testkit::installed_path(DOCS, "python3.11-doc"),
    ) else {
        return;
    };
    let conf = std::fs::read_to_string(testkit::workspace_root().join("examples/nginx/site.conf"))
        .unwrap();
    let server = Nginx::start(&nginx, &conf, &docs);
    let origin = format!("http://{}", server.addr);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");

    let t = Instant::now();
    let o = testkit::run_ok(
        Command::new(testkit::workspace_bin("webcoop-crawl"))
            .args([
                "crawl",
                "--allow-net",
                "127.0.0.0/8",
                "--progress",
                "quiet",
                "--delay-min",
                "0",
                "--delay-factor",
                "0",
            ])
            .args([
                "--per-host-connections",
                "4",
                "--seeds",
                &format!("{origin}/"),
                "--out",
            ])
            .arg(&out),
    );
    let ours_time = t.elapsed();
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap();
    let ours = crawled_html(&log, &origin);

    let t = Instant::now();
    let mirror = dir.path().join("wget");
    let w = Command::new(wget)
        .args([
            "--recursive",
            "--level=inf",
            "--no-verbose",
            "--directory-prefix",
        ])
        .arg(&mirror)
        .arg(format!("{origin}/"))
        .output()
        .unwrap();
    // wget exits 8 when some link answered 404; the mirror is still complete.
    assert!(
        w.status.code().is_some_and(|c| c == 0 || c == 8),
        "wget: {}",
        String::from_utf8_lossy(&w.stderr)
    );
    let wget_time = t.elapsed();
    let theirs = html_files(&mirror.join(server.addr.to_string()));

    eprintln!(
        "python docs: webcoop-crawl {} HTML pages in {ours_time:?}, wget {} in {wget_time:?}\n{}",
        ours.len(),
        theirs.len(),
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        ours.len() > 500,
        "the docs have over 500 pages, got {}",
        ours.len()
    );
    let only_ours: Vec<_> = ours.difference(&theirs).collect();
    let only_theirs: Vec<_> = theirs.difference(&ours).collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "only webcoop-crawl: {only_ours:?}\nonly wget: {only_theirs:?}"
    );
    // Each page once: no URL twice in the log.
    let urls: Vec<&str> = log.lines().filter_map(|l| l.split(' ').nth(3)).collect();
    let unique: BTreeSet<&str> = urls.iter().copied().collect();
    assert_eq!(urls.len(), unique.len(), "a URL fetched twice");

    if let Some(python) = testkit::reference_python() {
        let files: Vec<_> = std::fs::read_dir(out.join("warc"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let check = testkit::run_ok(
            Command::new(python)
                .args(["-m", "warcio.cli", "check", "-v"])
                .args(&files),
        );
        let text = String::from_utf8_lossy(&check.stdout);
        assert!(
            text.matches("digest pass").count() >= ours.len(),
            "warcio check:\n{text}"
        );
    }
}

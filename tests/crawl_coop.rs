//! The crawler using a site's cooperation, end to end: Debian's nginx serving a temporary
//! docroot with the shipped server block, the real `webcoop-agent` beside it (its service
//! proxied under /.well-known/webcoop/), and `webcoop-crawl` in each cooperation mode. The
//! site is edited, renamed and pruned while the crawler runs; at the end the crawler's copies
//! must be exactly the site.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use webcoop::servers::{Nginx, example_nginx_conf};
use webcoop::testkit::{tool, workspace_bin};
use webcoop_crawler::copies::{self, Held};
use webcoop_protocol::validator::Sha256Digest;

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Site {
    tmp: tempfile::TempDir,
    www: PathBuf,
    nginx: Nginx,
    agent: Option<Killed>,
    agent_port: u16,
}

fn page(i: usize, words: &str) -> String {
    // Pages of a few kilobytes with links, so deltas are worth sending and inline.
    let filler: String = (0..120).map(|k| format!("word{k} ")).collect();
    format!(
        "<html><body><h1>page {i} {words}</h1><a href=\"p{}.html\">next</a><p>{filler}</p></body></html>\n",
        i + 1
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Site {
    fn start(pages: usize) -> Option<Site> {
        let nginx_bin = tool("nginx")?;
        let tmp = tempfile::tempdir().unwrap();
        let www = tmp.path().join("www");
        std::fs::create_dir(&www).unwrap();
        let www = www.canonicalize().unwrap();
        std::fs::write(www.join("index.html"), "<a href=\"p1.html\">start</a>").unwrap();
        for i in 1..=pages {
            std::fs::write(www.join(format!("p{i}.html")), page(i, "")).unwrap();
        }
        let agent_port = free_port();
        let nginx = Nginx::start_proxying(
            &nginx_bin,
            &example_nginx_conf(),
            &www,
            Some(([127, 0, 0, 1], agent_port).into()),
        );
        let mut site = Site {
            tmp,
            www,
            nginx,
            agent: None,
            agent_port,
        };
        let lines = Command::new(workspace_bin("webcoop-agent", "webcoop-agent"))
            .args(["--print-robots-lines", "--base-url", &site.nginx.url()])
            .output()
            .unwrap();
        std::fs::write(site.www.join("robots.txt"), &lines.stdout).unwrap();
        site.start_agent();
        Some(site)
    }

    fn start_agent(&mut self) {
        let child = Command::new(workspace_bin("webcoop-agent", "webcoop-agent"))
            .arg("--docroot")
            .arg(&self.www)
            .arg("--state")
            .arg(self.tmp.path().join("state"))
            .args([
                "--base-url",
                &self.nginx.url(),
                "--listen",
                &format!("127.0.0.1:{}", self.agent_port),
                "--allow-callback-net",
                "127.0.0.0/8",
                "--hub-window-ms",
                "200",
                "--debounce-ms",
                "50",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.agent = Some(Killed(child));
        let deadline = Instant::now() + Duration::from_secs(20);
        while webcoop::servers::http_get(self.nginx.addr, "/.well-known/webcoop/healthz", &[])
            .map_or(true, |r| r.status != 200)
        {
            assert!(Instant::now() < deadline, "the agent did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn write(&self, rel: &str, content: &str) {
        std::fs::write(self.www.join(rel), content).unwrap();
    }

    /// Every public page of the docroot with the validator of its content.
    fn truth(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for e in std::fs::read_dir(&self.www).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".html") {
                let body = std::fs::read(e.path()).unwrap();
                out.insert(
                    format!("{}{name}", self.nginx.url()),
                    Sha256Digest::of(&body).etag().to_string(),
                );
            }
        }
        out
    }
}

/// The crawler's copies of the `.html` pages: URL to validator; gone pages left out.
fn held(out: &Path) -> BTreeMap<String, String> {
    copies::list(out)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.url.ends_with(".html"))
        .filter_map(|c| match c.held {
            Held::Copy { validator, .. } => Some((c.url, validator)),
            _ => None,
        })
        .collect()
}

fn crawler(site: &Site, out: &Path, mode: &str, run_for: u32, extra: &[&str]) -> Killed {
    let config = out.with_extension("toml");
    std::fs::write(
        &config,
        "coop_poll_min = 0.2\ncoop_poll_max = 1.0\ncoop_backup_poll = 3.0\ncommit_interval = 0.2\n",
    )
    .unwrap();
    let child = Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
        .arg("crawl")
        .args(["--seeds", &site.nginx.url()])
        .arg("--out")
        .arg(out)
        .arg("--config")
        .arg(&config)
        .args([
            "--keep-fresh",
            "--refresh-cycle",
            "2",
            "--delay-min",
            "0.02",
            "--delay-factor",
            "0",
            "--coop",
            mode,
            "--run-for",
            &run_for.to_string(),
            "--progress",
            "quiet",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(out.with_extension("err")).map_or(Stdio::null(), Stdio::from))
        .spawn()
        .unwrap();
    Killed(child)
}

fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(25));
    }
    start.elapsed()
}

fn log_of(out: &Path) -> String {
    std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default()
}

/// Edits, a rename and a deletion while the crawler runs; it must end with the site's exact
/// content.
fn converges(mode: &str, extra: &[&str]) -> Option<(Site, PathBuf)> {
    let site = Site::start(30)?;
    let out = site.tmp.path().join(format!("crawl-{mode}"));
    let mut c = crawler(&site, &out, mode, 30, extra);
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&out) == site.truth()
    });
    site.write("p3.html", &page(3, "edited once"));
    site.write("p4.html", &page(4, "edited"));
    std::fs::rename(site.www.join("p10.html"), site.www.join("p10-renamed.html")).unwrap();
    site.write(
        "p11.html",
        &page(11, "links <a href=\"p10-renamed.html\">renamed</a>"),
    );
    std::fs::remove_file(site.www.join("p12.html")).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    site.write("p3.html", &page(3, "edited twice"));
    let truth = site.truth();
    let took = wait_for(
        &format!("{mode}: convergence"),
        Duration::from_secs(25),
        || held(&out) == truth,
    );
    eprintln!("{mode}: converged {took:?} after the last edit");
    let _ = c.0.kill();
    let _ = c.0.wait();
    Some((site, out))
}

#[test]
fn meta_mode_converges_to_an_exact_copy() {
    let Some((_site, out)) = converges("meta", &[]) else {
        return;
    };
    let log = log_of(&out);
    assert!(log.contains("changes"), "the changes feed was polled");
    assert!(!log.contains("delta"), "meta mode fetches no delta:\n{log}");
}

#[test]
fn delta_mode_applies_and_verifies_deltas() {
    let Some((_site, out)) = converges("delta", &[]) else {
        return;
    };
    let log = log_of(&out);
    assert!(
        log.contains("delta applied and verified"),
        "no delta applied:\n{log}"
    );
}

#[test]
fn push_mode_has_a_change_in_the_store_within_two_seconds_without_polling_the_page() {
    let Some(site) = Site::start(30) else {
        return;
    };
    let out = site.tmp.path().join("crawl-push");
    let mut c = crawler(
        &site,
        &out,
        "push",
        40,
        &["--callback-listen", "127.0.0.1:0"],
    );
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&out) == site.truth()
    });
    wait_for("the subscription", Duration::from_secs(10), || {
        log_of(&out).contains("202 ")
    });
    std::thread::sleep(Duration::from_millis(300));
    let url = format!("{}p5.html", site.nginx.url());
    let before = log_of(&out).matches(&url).count();
    site.write("p5.html", &page(5, "pushed"));
    let want = site.truth()[&url].clone();
    let took = wait_for("the pushed change", Duration::from_secs(2), || {
        held(&out).get(&url) == Some(&want)
    });
    eprintln!("push: in the store {took:?} after the edit");
    let log = log_of(&out);
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(&url)).collect();
    assert_eq!(lines.len(), before + 1, "{lines:?}");
    assert!(
        lines
            .last()
            .is_some_and(|l| l.contains("delta pushed inline")),
        "the page was not requested: {lines:?}"
    );
    // The same convergence as the other modes, and the hub is told goodbye.
    site.write("p6.html", &page(6, "edited"));
    std::fs::remove_file(site.www.join("p7.html")).unwrap();
    let truth = site.truth();
    wait_for("push: convergence", Duration::from_secs(10), || {
        held(&out) == truth
    });
    let _ = nix_term(&c.0);
    let status = c.0.wait().unwrap();
    assert!(status.code().is_some(), "{status:?}");
    let _ = &mut c;
    let status = Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
        .args(["status", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let site_state = &v["cooperation"][0];
    assert!(site_state["stats"]["pushes"].as_u64().unwrap() >= 1, "{v}");
    assert!(
        site_state["subscription"].is_null(),
        "unsubscribed at shutdown: {v}"
    );
}

fn nix_term(child: &Child) -> std::io::Result<()> {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("kill failed"))
    }
}

#[test]
fn killing_the_agent_degrades_to_polling_without_losing_changes() {
    let Some(mut site) = Site::start(20) else {
        return;
    };
    let out = site.tmp.path().join("crawl-kill");
    let mut c = crawler(&site, &out, "delta", 40, &[]);
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&out) == site.truth()
    });
    // The agent dies: nginx answers 502 for its endpoints.
    drop(site.agent.take());
    site.write("p2.html", &page(2, "changed while the agent was down"));
    let truth = site.truth();
    let took = wait_for(
        "polling after the agent died",
        Duration::from_secs(25),
        || held(&out) == truth,
    );
    eprintln!("agent down: change found by polling {took:?} after the edit");
    let _ = c.0.kill();
    let _ = c.0.wait();
    let log = log_of(&out);
    assert!(
        log.contains(" 502 "),
        "the endpoint failures are logged:\n{log}"
    );
}

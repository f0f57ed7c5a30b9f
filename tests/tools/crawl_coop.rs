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
use webcoop::servers::Killed;
use webcoop::servers::{Nginx, example_nginx_conf};
use webcoop_crawler::archives::copies::{self, CopyState};
use webcoop_crawler::archives::warc;
use webcoop_protocol::validator::Sha256Digest;
use webcoop_testkit::pywb::{Wayback, venv_tool};
use webcoop_testkit::testweb::{HostSpec, Sitemap, TestWeb};
use webcoop_testkit::{reference_python, run_ok, tool, warc_files, warcio_records, workspace_bin};

pub(super) struct Site {
    pub(super) tmp: tempfile::TempDir,
    pub(super) www: PathBuf,
    pub(super) nginx: Nginx,
    agent: Option<Killed>,
    agent_port: u16,
}

pub(super) fn page(i: usize, words: &str) -> String {
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
    pub(super) fn start(pages: usize) -> Option<Site> {
        Site::start_with(pages, |_| {})
    }

    /// A site whose nginx configuration is the shipped one edited by `conf`, whose agent runs
    /// with `agent_args`.
    pub(super) fn start_conf(
        pages: usize,
        conf: impl FnOnce(String) -> String,
        agent_args: &[&str],
    ) -> Option<Site> {
        Site::start_inner(pages, |_| {}, conf, agent_args)
    }

    /// A site whose docroot `prepare` may change (file dates, say) before the agent first
    /// scans it.
    fn start_with(pages: usize, prepare: impl FnOnce(&Path)) -> Option<Site> {
        Site::start_inner(pages, prepare, |c| c, &[])
    }

    fn start_inner(
        pages: usize,
        prepare: impl FnOnce(&Path),
        conf: impl FnOnce(String) -> String,
        agent_args: &[&str],
    ) -> Option<Site> {
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
            &conf(example_nginx_conf()),
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
        prepare(&site.www);
        site.start_agent_with(agent_args);
        Some(site)
    }

    /// Stops the agent (killed outright, as `kill -9`).
    pub(super) fn stop_agent(&mut self) {
        self.agent = None;
    }

    fn start_agent(&mut self) {
        self.start_agent_with(&[]);
    }

    /// Starts the agent (again) on the same state, with `extra` arguments.
    pub(super) fn start_agent_with(&mut self, extra: &[&str]) {
        self.agent = None;
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
            .args(extra)
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(self.tmp.path().join("agent.err"))
                    .map_or(Stdio::null(), Stdio::from),
            )
            .spawn()
            .unwrap();
        self.agent = Some(Killed(child));
        let deadline = Instant::now() + Duration::from_secs(20);
        while webcoop::servers::http_get(self.nginx.addr, "/.well-known/webcoop/healthz", &[])
            .map_or(true, |r| r.status != 200)
        {
            assert!(
                Instant::now() < deadline,
                "the agent did not come up: {}",
                std::fs::read_to_string(self.tmp.path().join("agent.err")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(super) fn write(&self, rel: &str, content: &str) {
        std::fs::write(self.www.join(rel), content).unwrap();
    }

    /// Every public page of the docroot with the validator of its content.
    pub(super) fn truth(&self) -> BTreeMap<String, String> {
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
pub(super) fn held(out: &Path) -> BTreeMap<String, String> {
    held_urls(out)
        .into_iter()
        .filter(|(u, _)| u.ends_with(".html"))
        .collect()
}

/// The crawler's copies: URL to validator; gone pages left out.
pub(super) fn held_urls(out: &Path) -> BTreeMap<String, String> {
    copies::list(out)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| match c.held {
            CopyState::Copy { validator, .. } => Some((c.url, validator)),
            _ => None,
        })
        .collect()
}

pub(super) fn crawler(site: &Site, out: &Path, mode: &str, run_for: u32, extra: &[&str]) -> Killed {
    let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    crawl_seeds(&[site.nginx.url()], out, mode, run_for, 2, &extra)
}

/// The crawler binary in `mode`, keeping its copies fresh (every page once per `cycle`
/// seconds on its own schedule), with test-sized intervals.
pub(super) fn crawl_seeds(
    seeds: &[String],
    out: &Path,
    mode: &str,
    run_for: u32,
    cycle: u32,
    extra: &[String],
) -> Killed {
    let config = out.with_extension("toml");
    std::fs::write(
        &config,
        "coop_poll_min = 0.2\ncoop_poll_max = 1.0\ncoop_backup_poll = 3.0\ncommit_interval = 0.2\n",
    )
    .unwrap();
    let child = Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--seeds")
        .args(seeds)
        .arg("--out")
        .arg(out)
        .arg("--config")
        .arg(&config)
        .args([
            "--keep-fresh",
            "--refresh-cycle",
            &cycle.to_string(),
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

pub(super) fn status_json(out: &Path) -> serde_json::Value {
    let status = Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
        .args(["status", "--json", "--out"])
        .arg(out)
        .output()
        .unwrap();
    serde_json::from_slice(&status.stdout).unwrap_or_default()
}

/// The cooperation state `status` shows for `origin`.
fn coop_of(out: &Path, origin: &str) -> serde_json::Value {
    let origin = origin.trim_end_matches('/');
    status_json(out)["cooperation"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["origin"] == origin).cloned())
        .unwrap_or_default()
}

pub(super) fn wait_for(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(25));
    }
    start.elapsed()
}

pub(super) fn log_of(out: &Path) -> String {
    std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default()
}

/// What the crawler said on stderr.
pub(super) fn messages_of(out: &Path) -> String {
    std::fs::read_to_string(out.with_extension("err")).unwrap_or_default()
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
    next_second();
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
    // Stopped as an operator stops it, so its archive ends with whole records.
    let _ = nix_term(&c.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "{mode}: the crawler did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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
    archived_as_rebuilt(&out, "dcz from ");
}

/// Waits for the wall clock's next second, so captures made after it never share their
/// 14-digit timestamp (a replay tool's key) with those made before.
fn next_second() {
    let into = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_millis();
    std::thread::sleep(Duration::from_millis(u64::from(1000 - into) + 20));
}

/// The pages rebuilt from deltas are in the archive as made: the delta as received, then a
/// `resource` of the page referring to it and saying how it was made (`how` starts its
/// `WARC-Webcoop-Delta`). warcio checks every digest; `webcoop-crawl index` is cdxj-indexer's
/// index; pywb replays each rebuilt page with the content archived.
fn archived_as_rebuilt(out: &Path, how: &str) {
    let records: Vec<warc::StoredRecord> = warc_files(out)
        .iter()
        .flat_map(|f| warc::read_records(f, 0).unwrap())
        .collect();
    let rebuilt: Vec<&warc::StoredRecord> = records
        .iter()
        .filter(|r| {
            r.header("WARC-Type") == Some("resource")
                && r.header("WARC-Refers-To").is_some()
                // Pages read from the site's snapshot refer to the snapshot, not to a delta.
                && !r
                    .header("WARC-Webcoop-Delta")
                    .is_some_and(|h| h.starts_with("snapshot"))
        })
        .collect();
    assert!(!rebuilt.is_empty(), "no page archived as rebuilt");
    for page in &rebuilt {
        let made_from = page.header("WARC-Refers-To");
        let at = records
            .iter()
            .position(|r| r.header("WARC-Record-ID") == made_from)
            .expect("the delta it refers to is archived");
        let next = &records[at + 1];
        assert_eq!(
            next.header("WARC-Record-ID"),
            page.header("WARC-Record-ID"),
            "right after it"
        );
        assert!(page.header("WARC-Webcoop-Delta").unwrap().starts_with(how));
        assert!(
            page.header("Content-Type")
                .unwrap()
                .starts_with("text/html")
        );
    }
    replays_resources(out);
}

/// The crawl's archive checked by warcio, indexed as cdxj-indexer indexes it, and each HTML
/// page archived as a `resource` replayed by pywb with exactly its content.
fn replays_resources(out: &Path) {
    let types = warcio_records(out);
    let Some(python) = reference_python() else {
        return;
    };
    assert!(
        types
            .iter()
            .any(|(t, u)| t == "resource" && u.ends_with(".html"))
    );
    let ours = String::from_utf8(
        run_ok(
            Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
                .args(["index", "--out"])
                .arg(out),
        )
        .stdout,
    )
    .unwrap();
    let theirs = String::from_utf8(
        run_ok(Command::new(venv_tool(&python, "cdxj-indexer")).args(warc_files(out))).stdout,
    )
    .unwrap();
    assert_eq!(
        ours, theirs,
        "webcoop-crawl index differs from cdxj-indexer"
    );
    let wayback = Wayback::start(&python, &warc_files(out));
    let mut replayed = 0;
    for line in ours.lines() {
        let mut parts = line.splitn(3, ' ');
        let (_, ts, json) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let url = v["url"].as_str().unwrap();
        let same_second = ours
            .lines()
            .filter(|l| l.contains(&format!(" {ts} {{\"url\": \"{url}\"")))
            .count();
        if v.get("status").is_some() || v["mime"] != "text/html" || same_second > 1 {
            continue;
        }
        let page =
            webcoop::servers::http_get(wayback.addr, &wayback.original(ts, url), &[]).unwrap();
        assert_eq!(page.status, 200, "{url} at {ts}");
        // A page read from a snapshot or batch keeps the site's `sha256:` digest.
        let replayed_digest = match v["digest"].as_str() {
            Some(d) if d.starts_with("sha256:") => {
                webcoop_protocol::snapshot::digest_field(&Sha256Digest::of(&page.body))
            }
            _ => warc::digest(&page.body),
        };
        assert_eq!(
            Some(replayed_digest.as_str()),
            v["digest"].as_str(),
            "{url} at {ts}: pywb replayed other content than the page rebuilt"
        );
        replayed += 1;
    }
    assert!(
        replayed >= 1,
        "no page archived as a resource replayed:\n{ours}"
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
    next_second();
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
    let v = status_json(&out);
    let site_state = &v["cooperation"][0];
    assert!(site_state["stats"]["pushes"].as_u64().unwrap() >= 1, "{v}");
    assert!(
        site_state["subscription"].is_null(),
        "unsubscribed at shutdown: {v}"
    );
    archived_as_rebuilt(&out, "dcz pushed inline");
}

/// Writes `content` to `rel` with the modification time `at` (nanoseconds count, seconds do not).
fn write_dated(site: &Site, rel: &str, content: &str, at: std::time::SystemTime) {
    site.write(rel, content);
    let f = std::fs::File::options()
        .write(true)
        .open(site.www.join(rel))
        .unwrap();
    f.set_modified(at).unwrap();
}

#[test]
fn a_second_edit_within_the_same_second_is_fetched_despite_nginx_validators() {
    let Some(site) = Site::start(10) else {
        return;
    };
    let out = site.tmp.path().join("crawl-meta");
    let _c = crawler(&site, &out, "meta", 40, &[]);
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&out) == site.truth()
    });
    // Two edits of the same size within one second: nginx's Last-Modified (seconds) and ETag
    // (seconds and size) stay the same, so only the announcement tells them apart.
    let second = std::time::SystemTime::now() - Duration::from_secs(100);
    let url = format!("{}p5.html", site.nginx.url());
    write_dated(
        &site,
        "p5.html",
        &page(5, "AAAA"),
        second + Duration::from_millis(100),
    );
    let first = site.truth()[&url].clone();
    wait_for("the first edit", Duration::from_secs(5), || {
        held(&out).get(&url) == Some(&first)
    });
    write_dated(
        &site,
        "p5.html",
        &page(5, "BBBB"),
        second + Duration::from_millis(600),
    );
    let last = site.truth()[&url].clone();
    let took = wait_for("the second edit", Duration::from_secs(5), || {
        held(&out).get(&url) == Some(&last)
    });
    eprintln!("the second edit in the store {took:?} after it");
    // The site told the truth both times: nothing held against it.
    let log = log_of(&out);
    assert!(
        !log.lines().any(|l| l.contains(&url) && l.contains(" 304 ")),
        "an announced change was asked conditionally: {log}"
    );
}

#[test]
fn polling_never_trusts_validators_dated_within_their_response_s_second() {
    let Some(site) = Site::start(10) else {
        return;
    };
    let out = site.tmp.path().join("crawl-off");
    let _c = crawler(&site, &out, "off", 40, &[]);
    let url = format!("{}p5.html", site.nginx.url());
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&out).contains_key(&url)
    });
    // Two edits of the same size with the same modification time, which nginx sends as
    // Last-Modified no earlier than the response's Date: a weak validator (RFC 9110, 8.8.2.2),
    // and nginx's ETag (time and size) is the same for both. A conditional request on them
    // would be answered 304 and the second edit never seen.
    let stamp = std::time::SystemTime::now() + Duration::from_secs(120);
    write_dated(&site, "p5.html", &page(5, "AAAA"), stamp);
    let first = site.truth()[&url].clone();
    wait_for("the first edit", Duration::from_secs(10), || {
        held(&out).get(&url) == Some(&first)
    });
    write_dated(&site, "p5.html", &page(5, "BBBB"), stamp);
    let last = site.truth()[&url].clone();
    wait_for("the second edit", Duration::from_secs(10), || {
        held(&out).get(&url) == Some(&last)
    });
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
    // A page the crawler fetched again to check the snapshot (the checks are picked at random)
    // is polled like the others once the site stops answering for its pages.
    let checked_page = || {
        log_of(&out)
            .lines()
            .filter(|l| l.contains(" 200 ") && l.ends_with(" "))
            .filter_map(|l| l.split(' ').nth(3))
            .filter_map(|u| u.rsplit('/').next())
            .find(|name| name.starts_with('p') && name.ends_with(".html") && *name != "p2.html")
            .map(str::to_string)
    };
    wait_for("a page checked", Duration::from_secs(10), || {
        checked_page().is_some()
    });
    let checked = checked_page().unwrap_or_default();
    // The agent dies: nginx answers 502 for its endpoints.
    drop(site.agent.take());
    site.write("p2.html", &page(2, "changed while the agent was down"));
    let n: usize = checked
        .trim_start_matches('p')
        .trim_end_matches(".html")
        .parse()
        .unwrap();
    site.write(
        &checked,
        &page(n, "checked, then changed while the agent was down"),
    );
    let truth = site.truth();
    let start = Instant::now();
    while held(&out) != truth {
        let differs: Vec<String> = truth
            .iter()
            .filter(|(u, v)| held(&out).get(*u) != Some(*v))
            .map(|(u, _)| u.clone())
            .collect();
        assert!(
            start.elapsed() < Duration::from_secs(25),
            "polling after the agent died: {differs:?} not current within 25 s\n{}",
            log_of(&out)
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    eprintln!(
        "agent down: changes found by polling {:?} after the edits",
        start.elapsed()
    );
    // The agent comes back: cooperation resumes and the next change arrives through it.
    site.start_agent();
    wait_for("cooperation back", Duration::from_secs(20), || {
        messages_of(&out).contains("cooperation is back")
    });
    site.write("p3.html", &page(3, "changed after the agent came back"));
    let truth = site.truth();
    let took = wait_for("after recovery", Duration::from_secs(20), || {
        held(&out) == truth
    });
    eprintln!("agent back: change found {took:?} after the edit");
    let _ = c.0.kill();
    let _ = c.0.wait();
    let log = log_of(&out);
    assert!(
        log.contains(" 502 "),
        "the endpoint failures are logged:\n{log}"
    );
}

/// A page of the test web with the validator of what it serves now.
fn testweb_truth(web: &TestWeb, host: &str, pages: usize) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for i in 0..pages {
        let path = format!("/p/{i}.html");
        let r = webcoop::servers::http_get(web.addr, &path, &[("Host", host)]).unwrap();
        assert_eq!(r.status, 200, "{host}{path}");
        out.insert(
            format!("{}{path}", web.origin(host)),
            Sha256Digest::of(&r.body).etag().to_string(),
        );
    }
    out
}

#[test]
fn a_lying_site_loses_trust_and_its_claims_are_ignored() {
    // One sitemap claims three unchanged pages changed on every poll; the other stamps every
    // URL with the time of the request.
    let web = TestWeb::start(vec![
        HostSpec::new("liar.test", 20).sitemap(Sitemap::Lying),
        HostSpec::new("stamp.test", 20).sitemap(Sitemap::Stamped),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("crawl-liars");
    let seeds = vec![web.origin("liar.test"), web.origin("stamp.test")];
    // The crawler's own schedule visits each page once per 10 minutes: over seconds, every
    // page fetch comes from a claim.
    let mut c = crawl_seeds(&seeds, &out, "meta", 60, 600, &web.resolve_args());
    let liar = web.origin("liar.test");
    let stamp = web.origin("stamp.test");
    wait_for("the liars found out", Duration::from_secs(40), || {
        let (l, s) = (coop_of(&out, &liar), coop_of(&out, &stamp));
        l["trust_score"].as_f64().is_some_and(|t| t < 0.5)
            && s["trust_score"].as_f64().is_some_and(|t| t < 0.5)
    });
    let said = messages_of(&out);
    assert!(
        said.contains(&format!("{liar}: claims proved wrong")),
        "{said}"
    );
    assert!(
        said.contains(&format!("{stamp}: sitemap lastmod stamped on every URL")),
        "{said}"
    );
    // From now on the liar's claims send the crawler nowhere: over the next seconds its
    // sitemap keeps claiming three changes per poll, and its pages are not fetched for them.
    let answered = |web: &TestWeb| {
        web.log()
            .iter()
            .filter(|r| r.host == "liar.test" && r.target.starts_with("/p/"))
            .count()
    };
    let polls = |web: &TestWeb| {
        web.log()
            .iter()
            .filter(|r| r.host == "liar.test" && r.target == "/sitemap.xml")
            .count()
    };
    // Claims made while the site was still believed may be queued as the trust drops (under
    // load, past the moment the saved state shows it): let them be fetched first.
    for _ in 0..10 {
        let before = answered(&web);
        std::thread::sleep(Duration::from_secs(1));
        if answered(&web) == before {
            break;
        }
    }
    let (pages0, polls0) = (answered(&web), polls(&web));
    std::thread::sleep(Duration::from_secs(4));
    let (pages, polls) = (answered(&web) - pages0, polls(&web) - polls0);
    assert!(polls >= 3, "the sitemap is still polled: {polls}");
    // The own schedule: 42 pages per 600 s, so 0.3 visits expected in these 4 s.
    assert!(
        pages <= 2,
        "{pages} page fetches in 4 s for {polls} polls of 3 claims"
    );
    let _ = c.0.kill();
    let _ = c.0.wait();
    let text = Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
        .args(["status", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains(&liar) && l.contains("claims ignored")),
        "{text}"
    );
}

/// Requests the crawler made to `origin`, from its log.
fn requests_to(out: &Path, origin: &str) -> usize {
    log_of(out)
        .lines()
        .filter(|l| l.split(' ').nth(3).is_some_and(|u| u.starts_with(origin)))
        .count()
}

#[test]
fn a_mixed_crawl_keeps_every_host_fresh_and_the_cooperating_one_costs_least() {
    let Some(site) = Site::start(20) else {
        return;
    };
    let web = TestWeb::start(vec![
        HostSpec::new("maps.test", 20).sitemap(Sitemap::Honest),
        HostSpec::new("plain.test", 20),
    ]);
    let coop = site.nginx.url();
    let maps = web.origin("maps.test");
    let plain = web.origin("plain.test");
    let out = site.tmp.path().join("crawl-mixed");
    let mut extra = web.resolve_args();
    // The plain host is kept fresh by the crawler's own schedule. Over seconds the change
    // estimates are extreme, and the optimal policy abandons the deep pages (as designed:
    // they cost more than their weight buys); every page once per cycle is what this test
    // needs from the fall back.
    extra.extend(
        [
            "--callback-listen",
            "127.0.0.1:0",
            "--refresh-policy",
            "uniform",
        ]
        .map(String::from),
    );
    let mut c = crawl_seeds(
        &[coop.clone(), maps.clone(), plain.clone()],
        &out,
        "push",
        60,
        2,
        &extra,
    );
    // Pages whose copy is not the page served now.
    let stale = |site: &Site, web: &TestWeb| -> Vec<String> {
        let held = held_urls(&out);
        let mut truth = site.truth();
        truth.extend(testweb_truth(web, "maps.test", 20));
        truth.extend(testweb_truth(web, "plain.test", 20));
        truth
            .into_iter()
            .filter(|(u, v)| held.get(u) != Some(v))
            .map(|(u, _)| u)
            .collect()
    };
    let fresh_within = |what: &str, limit: Duration| {
        let start = Instant::now();
        loop {
            let left = stale(&site, &web);
            if left.is_empty() {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < limit,
                "{what}: stale after {limit:?}: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    fresh_within("the first crawl", Duration::from_secs(30));
    wait_for("the subscription", Duration::from_secs(10), || {
        log_of(&out).contains("202 ")
    });
    let before: Vec<usize> = [&coop, &maps, &plain]
        .iter()
        .map(|o| requests_to(&out, o))
        .collect();
    // Six seconds of edits, one page of each host per second.
    for round in 1..=6 {
        site.write(
            &format!("p{round}.html"),
            &page(round, &format!("round {round}")),
        );
        web.change("maps.test", &format!("/p/{}.html", round * 3));
        web.change("plain.test", &format!("/p/{}.html", round * 3));
        std::thread::sleep(Duration::from_secs(1));
    }
    let took = fresh_within("after the edits", Duration::from_secs(15));
    let spent: Vec<usize> = [&coop, &maps, &plain]
        .iter()
        .zip(&before)
        .map(|(o, b)| requests_to(&out, o) - b)
        .collect();
    eprintln!(
        "mixed: fresh {took:?} after the last edit; requests during the edits: cooperating {}, sitemap {}, plain {}",
        spent[0], spent[1], spent[2]
    );
    let _ = c.0.kill();
    let _ = c.0.wait();
    // The plain host is revisited by the crawler's own schedule; the cooperating one only
    // for what it announced, and the sitemap host for its sitemap and what it dated.
    assert!(
        spent[0] * 4 <= spent[2],
        "cooperating {} vs plain {}",
        spent[0],
        spent[2]
    );
    assert!(
        spent[1] < spent[2],
        "sitemap {} vs plain {}",
        spent[1],
        spent[2]
    );
}

#[test]
fn a_site_met_for_the_first_time_is_polled_at_the_pace_its_listing_s_dates_show() {
    // Pages untouched for days, four of them modified in the last few hours, and the same
    // site deployed just now: only the first has a pace to tell.
    let hours_ago = |h: u64| std::time::SystemTime::now() - Duration::from_secs(h * 3600);
    let Some(site) = Site::start_with(30, |www| {
        for e in std::fs::read_dir(www).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let age = match name.as_str() {
                "p1.html" => 1,
                "p2.html" => 2,
                "p3.html" => 3,
                "p4.html" => 5,
                _ => 72,
            };
            let f = std::fs::File::options().write(true).open(e.path()).unwrap();
            f.set_modified(hours_ago(age)).unwrap();
        }
    }) else {
        return;
    };
    let Some(fresh) = Site::start(30) else {
        return;
    };
    for (site, expect) in [(&site, Some(4.0)), (&fresh, None)] {
        let out = site.tmp.path().join("crawl-pace");
        let mut c = crawler(site, &out, "meta", 30, &[]);
        wait_for("the first crawl", Duration::from_secs(20), || {
            held(&out) == site.truth()
        });
        let coop = coop_of(&out, &site.nginx.url());
        let said = messages_of(&out);
        match expect {
            Some(n) => {
                assert_eq!(coop["count"]["changes"].as_f64(), Some(n), "{coop}");
                assert!(
                    said.contains("4 pages modified in the 6 h before first contact"),
                    "{said}"
                );
            }
            None => {
                assert_eq!(coop["count"]["changes"].as_f64(), Some(0.0), "{coop}");
                assert!(!said.contains("before first contact"), "{said}");
            }
        }
        let _ = c.0.kill();
        let _ = c.0.wait();
    }
}

/// One process of a fleet keeping the site fresh in push mode, its frontier in `redis`.
fn fleet_process(site: &Site, fleet: &Path, redis: &str, name: &str) -> Killed {
    std::fs::create_dir_all(fleet).unwrap();
    let config = fleet.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        "coop_poll_min = 0.2\ncoop_poll_max = 1.0\ncoop_backup_poll = 3.0\ncommit_interval = 0.2\nfleet_lease = 5\n",
    )
    .unwrap();
    let child = Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
        .args([
            "crawl",
            "--allow-net",
            "127.0.0.0/8",
            "--frontier",
            redis,
            "--crawl",
            "fresh",
            "--process",
            name,
        ])
        .args(["--seeds", &site.nginx.url(), "--out"])
        .arg(fleet)
        .arg("--config")
        .arg(&config)
        .args([
            "--keep-fresh",
            "--refresh-cycle",
            "2",
            "--delay-min",
            "0.02",
        ])
        .args(["--delay-factor", "0", "--coop", "push", "--run-for", "60"])
        .args(["--callback-listen", "127.0.0.1:0", "--progress", "quiet"])
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::create(fleet.join(format!("{name}.err")))
                .map_or(Stdio::null(), Stdio::from),
        )
        .spawn()
        .unwrap();
    Killed(child)
}

#[test]
fn a_fleet_keeps_a_pushing_site_exact_with_one_subscription() {
    let Some(site) = Site::start(20) else {
        return;
    };
    let Some(redis) = webcoop_testkit::redis::RedisServer::start(false) else {
        return;
    };
    let fleet = site.tmp.path().join("fleet");
    let mut a = fleet_process(&site, &fleet, &redis.url(), "a");
    let mut b = fleet_process(&site, &fleet, &redis.url(), "b");
    // The site is one host: one process holds it, its pages, its subscription.
    let holder = || {
        ["a", "b"]
            .into_iter()
            .map(|n| fleet.join(n))
            .max_by_key(|d| held(d).len())
            .unwrap()
    };
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&holder()) == site.truth()
    });
    wait_for("the subscription", Duration::from_secs(10), || {
        log_of(&holder()).contains("202 ")
    });
    std::thread::sleep(Duration::from_millis(300));
    let url = format!("{}p5.html", site.nginx.url());
    site.write("p5.html", &page(5, "pushed to the fleet"));
    let want = site.truth()[&url].clone();
    wait_for("the pushed change", Duration::from_secs(3), || {
        held(&holder()).get(&url) == Some(&want)
    });
    for round in 0..3 {
        site.write("p6.html", &page(6, &format!("edit {round}")));
        site.write(&format!("new{round}.html"), &page(100 + round, "added"));
        let truth = site.truth();
        wait_for("the fleet's convergence", Duration::from_secs(10), || {
            held(&holder()) == truth
        });
    }
    std::fs::remove_file(site.www.join("p7.html")).unwrap();
    let truth = site.truth();
    wait_for("a deletion", Duration::from_secs(10), || {
        held(&holder()) == truth
    });
    let dirs = [fleet.join("a"), fleet.join("b")];
    let other = dirs.iter().find(|d| **d != holder()).unwrap();
    assert!(
        held(other).is_empty(),
        "the other process fetched no page of the site"
    );
    // Every subscription request of the fleet, from either process's log.
    let subscribes: Vec<String> = dirs
        .iter()
        .flat_map(|d| {
            log_of(d)
                .lines()
                .filter(|l| l.contains("/.well-known/webcoop/hub") && l.ends_with(" subscribe"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        subscribes.len(),
        1,
        "one subscription for the fleet: {subscribes:#?}"
    );
    assert!(subscribes[0].contains(" 202 "), "{subscribes:?}");
    // The fleet's status says the same: one process, one subscription.
    let o = Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
        .args([
            "status",
            "--frontier",
            &redis.url(),
            "--crawl",
            "fresh",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let processes = v["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 2, "{v}");
    let subscribed: u64 = processes
        .iter()
        .map(|p| p["cooperation"][1].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(subscribed, 1, "{v}");
    // The holder dies: the other takes the site over when its lease ends (its robots.txt, the
    // pages kept fresh, a subscription of its own) and keeps the site exact.
    let held_by_a = holder() == fleet.join("a");
    let (dead, survivor) = if held_by_a {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let survivor_dir = fleet.join(if held_by_a { "b" } else { "a" });
    dead.0.kill().unwrap();
    let _ = dead.0.wait();
    site.write("p8.html", &page(8, "after the holder died"));
    site.write("p2.html", &page(2, "after the holder died"));
    let truth = site.truth();
    let started = Instant::now();
    while held(&survivor_dir) != truth {
        if started.elapsed() > Duration::from_secs(30) {
            let mine = held(&survivor_dir);
            let wrong: Vec<_> = truth
                .iter()
                .filter(|(u, v)| mine.get(*u) != Some(*v))
                .collect();
            let extra: Vec<_> = mine.keys().filter(|u| !truth.contains_key(*u)).collect();
            panic!(
                "the take-over: not within 30 s; wrong or missing {wrong:?}, extra {extra:?}\n{}\n{}",
                log_of(&survivor_dir),
                std::fs::read_to_string(survivor_dir.with_extension("err")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        log_of(&survivor_dir)
            .lines()
            .any(|l| l.contains("/.well-known/webcoop/hub") && l.ends_with(" subscribe")),
        "the new holder subscribed"
    );
    let _ = nix_term(&survivor.0);
    let _ = survivor.0.wait();
}

/// The crawl.log lines of requests the crawler made (pages read from a snapshot or a batch
/// are logged too, saying so).
fn requests_in(log: &str) -> usize {
    log.lines()
        .filter(|l| webcoop_crawler::crawl_log::is_request(l))
        .count()
}

#[test]
fn a_first_visit_takes_the_whole_site_from_its_snapshot_in_a_few_requests() {
    let Some(site) = Site::start(80) else {
        return;
    };
    wait_for(
        "robots.rdf naming a snapshot",
        Duration::from_secs(30),
        || {
            webcoop::servers::http_get(site.nginx.addr, "/robots.rdf", &[])
                .is_ok_and(|r| String::from_utf8_lossy(&r.body).contains("wc:snapshot"))
        },
    );
    let out = site.tmp.path().join("crawl-snapshot");
    let o = run_ok(
        Command::new(workspace_bin("webcoop-crawler", "webcoop-crawl"))
            .arg("crawl")
            .args(["--allow-net", "127.0.0.0/8", "--progress", "quiet"])
            .args(["--delay-min", "0", "--delay-factor", "0"])
            .arg("--seeds")
            .arg(site.nginx.url())
            .arg("--out")
            .arg(&out),
    );
    let log = log_of(&out);
    assert_eq!(
        held(&out),
        site.truth(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let taken = log
        .lines()
        .filter(|l| l.contains(webcoop_crawler::crawl_log::FROM_SNAPSHOT))
        .count();
    let requests = requests_in(&log);
    eprintln!("first visit: {requests} requests, {taken} pages from the snapshot");
    // robots.txt, robots.rdf, the snapshot, the seed page (queued before the listing came),
    // six pages fetched again to check the snapshot (a site met now is checked most), and
    // the one link to a page that does not exist: no request per page.
    assert!(taken >= 78, "{taken} pages from the snapshot:\n{log}");
    assert!(requests <= 11, "{requests} requests:\n{log}");
    let coop = coop_of(&out, &site.nginx.url());
    assert!(coop.to_string().contains("from_snapshot"), "{coop}");
    // The archive says where each page came from, and warcio checks every record.
    let records = warcio_records(&out);
    let from_snapshot = records
        .iter()
        .filter(|(kind, uri)| kind == "resource" && uri.ends_with(".html"))
        .count();
    if reference_python().is_some() {
        assert!(from_snapshot >= 78, "{records:?}");
    }
    // pywb replays the pages taken from the snapshot, byte for byte.
    replays_resources(&out);
    // The snapshot file was removed once read: its pages are in the crawl's own archive.
    let left: Vec<_> = std::fs::read_dir(out.join("snapshots"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// Stops a crawler as an operator would, and waits for it.
fn stop(c: &mut Killed, what: &str) {
    let _ = nix_term(&c.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "{what}: the crawler did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_crawler_that_was_away_catches_up_on_100_changes_in_one_batch() {
    let Some(site) = Site::start(150) else {
        return;
    };
    let out = site.tmp.path().join("crawl-away");
    // Checks of the site's claims are a share of what it says: none here, so the requests
    // counted are the catching up alone. Delta mode: once caught up, a changed page would come
    // as a delta; catching up, the pages come in the batch.
    let quiet = ["--coop-check-share", "0"];
    let mut c = crawler(&site, &out, "delta", 60, &quiet);
    wait_for("the first crawl", Duration::from_secs(30), || {
        held(&out) == site.truth()
    });
    stop(&mut c, "the first run");
    let before = log_of(&out).lines().count();
    // Away: 100 pages change.
    for i in 1..=100 {
        site.write(
            &format!("p{i}.html"),
            &page(i, "changed while the crawler was away"),
        );
    }
    let truth = site.truth();
    wait_for("the agent's 100 changes", Duration::from_secs(20), || {
        webcoop::servers::http_get(site.nginx.addr, "/robots.rdf", &[]).is_ok_and(|r| {
            let listing = String::from_utf8_lossy(&r.body).into_owned();
            truth
                .values()
                .all(|tag| listing.contains(tag.trim_matches('"')))
        })
    });
    let mut c = crawler(&site, &out, "delta", 60, &quiet);
    wait_for("catching up", Duration::from_secs(30), || {
        held(&out) == truth
    });
    let log = log_of(&out);
    stop(&mut c, "the second run");
    let run: Vec<&str> = log.lines().skip(before).collect();
    let taken = run
        .iter()
        .filter(|l| l.contains(webcoop_crawler::crawl_log::FROM_BATCH))
        .count();
    let requests: Vec<&&str> = run
        .iter()
        .filter(|l| webcoop_crawler::crawl_log::is_request(l))
        .collect();
    eprintln!(
        "catching up on 100 changes: {} requests, {taken} pages from batches",
        requests.len()
    );
    assert_eq!(
        taken,
        100,
        "{}\n{}",
        requests
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
        messages_of(&out)
    );
    assert!(
        requests.len() <= 3,
        "{} requests to catch up:\n{}",
        requests.len(),
        requests
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
    assert!(
        coop_of(&out, &site.nginx.url())
            .to_string()
            .contains("\"from_batch\":100")
    );
    // The archive says where each page came from, and pywb replays them byte for byte.
    replays_resources(&out);
}

#[test]
fn a_crawler_away_longer_than_the_site_s_history_takes_its_snapshot_again() {
    let Some(mut site) = Site::start(150) else {
        return;
    };
    let out = site.tmp.path().join("crawl-long-away");
    let quiet = ["--coop-check-share", "0"];
    let mut c = crawler(&site, &out, "meta", 60, &quiet);
    wait_for("the first crawl", Duration::from_secs(30), || {
        held(&out) == site.truth()
    });
    stop(&mut c, "the first run");
    let before = log_of(&out).lines().count();
    // The site keeps 20 changes of history; 100 pages change while the crawler is away, and
    // the agent makes a new snapshot (they are two thirds of the site's bytes).
    site.start_agent_with(&["--retain-changes", "20", "--feed-entries", "20"]);
    for i in 1..=100 {
        site.write(
            &format!("p{i}.html"),
            &page(i, "changed while the crawler was far away"),
        );
    }
    let truth = site.truth();
    wait_for(
        "the agent's changes and new snapshot",
        Duration::from_secs(30),
        || {
            webcoop::servers::http_get(site.nginx.addr, "/robots.rdf", &[]).is_ok_and(|r| {
                let listing = String::from_utf8_lossy(&r.body).into_owned();
                truth
                    .values()
                    .all(|tag| listing.contains(tag.trim_matches('"')))
                    && listing.contains("wc:snapshot")
                    && !listing.contains("snapshot-000000000000")
            })
        },
    );
    let mut c = crawler(&site, &out, "meta", 60, &quiet);
    wait_for("catching up", Duration::from_secs(30), || {
        held(&out) == truth
    });
    let log = log_of(&out);
    stop(&mut c, "the second run");
    let run: Vec<&str> = log.lines().skip(before).collect();
    let taken = run
        .iter()
        .filter(|l| l.contains(webcoop_crawler::crawl_log::FROM_SNAPSHOT))
        .count();
    let requests: Vec<&&str> = run
        .iter()
        .filter(|l| webcoop_crawler::crawl_log::is_request(l))
        .collect();
    let listing = |r: &[&&str]| r.iter().map(|l| format!("{l}\n")).collect::<String>();
    eprintln!(
        "away past the history: {} requests, {taken} pages from the snapshot",
        requests.len()
    );
    // The changes feed answers 410, robots.rdf is read again and the snapshot fetched: the
    // changed pages come from it, the others are held already.
    assert!(
        requests
            .iter()
            .any(|l| l.contains("/.well-known/webcoop/changes") && l.contains(" 410 ")),
        "{}",
        listing(&requests)
    );
    assert_eq!(taken, 100, "{}\n{}", listing(&requests), messages_of(&out));
    assert!(requests.len() <= 4, "{}", listing(&requests));
}

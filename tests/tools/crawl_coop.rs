//! The crawler using a site's cooperation, end to end: Debian's nginx serving a temporary
//! docroot with the shipped server block, the real `webcoop-agent` beside it (its service
//! proxied under /.well-known/webcoop/), and `webcoop-crawl` in each cooperation mode. The
//! site is edited, renamed and pruned while the crawler runs; at the end the crawler's copies
//! must be exactly the site.

use std::collections::BTreeMap;
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

use webcoop_testkit::free_port;

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
        let lines = Command::new(workspace_bin("webcoop-agent"))
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
        let child = Command::new(workspace_bin("webcoop-agent"))
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
    let child = Command::new(workspace_bin("webcoop-crawl"))
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
    let status = Command::new(workspace_bin("webcoop-crawl"))
        .args(["status", "--json", "--out"])
        .arg(out)
        .output()
        .unwrap();
    serde_json::from_slice(&status.stdout).unwrap_or_default()
}

/// The cooperation state `status` shows for `origin`.
pub(super) fn coop_of(out: &Path, origin: &str) -> serde_json::Value {
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
pub(super) fn next_second() {
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
            Command::new(workspace_bin("webcoop-crawl"))
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
    // The crawler runs past the sum of the deadlines below (it is killed when the test
    // ends): with 40 s, a first crawl and edit slow under the whole suite left it stopped
    // before the second edit, which then failed as "not within 15s".
    let _c = crawler(&site, &out, "meta", 120, &[]);
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
    // Deadlines, not speeds: under the whole suite's load an announcement's round took 5 s.
    wait_for("the first edit", Duration::from_secs(15), || {
        held(&out).get(&url) == Some(&first)
    });
    write_dated(
        &site,
        "p5.html",
        &page(5, "BBBB"),
        second + Duration::from_millis(600),
    );
    let last = site.truth()[&url].clone();
    let start = Instant::now();
    while held(&out).get(&url) != Some(&last) {
        if start.elapsed() > Duration::from_secs(15) {
            let log = log_of(&out);
            let lines: Vec<&str> = log.lines().filter(|l| l.contains("p5.html")).collect();
            panic!(
                "the second edit: not within 15s (first {first}, last {last}, held {:?})\nthe crawl log of the page:\n{}\nthe site's cooperation: {}\nthe crawler said: {}\nthe agent said: {}",
                held(&out).get(&url),
                lines.join("\n"),
                coop_of(&out, &site.nginx.url()),
                std::fs::read_to_string(out.with_extension("err")).unwrap_or_default(),
                std::fs::read_to_string(site.tmp.path().join("agent.err")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let took = start.elapsed();
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
    let _c = crawler(&site, &out, "off", 120, &[]);
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
    let mut c = crawler(&site, &out, "delta", 120, &[]);
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&out) == site.truth()
    });
    // A page the crawler fetched again to check the snapshot (the checks are picked at random)
    // is polled like the others once the site stops answering for its pages. Its content is
    // the snapshot's, so it is logged "unchanged" (a revisit record) once the snapshot's pages
    // count as held, which they do from the moment they are taken, saved or not.
    let checked_page = || {
        log_of(&out)
            .lines()
            .filter(|l| l.contains(" 200 ") && (l.ends_with(" ") || l.ends_with(" unchanged")))
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

mod fleet_and_catch_up;
mod trust;

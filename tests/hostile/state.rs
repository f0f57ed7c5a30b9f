//! What both binaries leave on disk is their user's alone: the agent's state holds every
//! subscriber's secret (with it, a local user could forge signed deliveries) and kept copies of
//! files only root could read; the crawler's holds its subscription secrets. Started with a
//! permissive umask, as a shell often leaves it.

use super::nginx_site::AgentSite;
use super::support::crawl_bin;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every file and directory under `dir` (itself included), with its mode.
fn modes(dir: &Path) -> Vec<(String, u32)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .map(|e| (e.path().display().to_string(), mode(e.path())))
        .collect()
}

#[test]
fn the_agent_s_state_is_private_whatever_the_umask() {
    // SAFETY: umask only sets this process's creation mask, inherited by the agent.
    let old = unsafe { libc::umask(0o022) };
    let site = AgentSite::start(&[("index.html", b"home")], "", &[], |_| {});
    unsafe { libc::umask(old) };
    let Some(site) = site else {
        return;
    };
    site.write_and_wait("page.html", b"a page");
    let state = site.state();
    for (path, m) in modes(&state) {
        let want = if Path::new(&path).is_dir() {
            0o700
        } else {
            0o600
        };
        assert_eq!(m, want, "{path} is {m:o}");
    }
    for db in ["agent.sqlite", "hub.sqlite"] {
        assert!(state.join(db).exists(), "{db}");
    }
    // What it publishes stays readable by the web server.
    assert_eq!(mode(&site.www.join("robots.rdf")), 0o644);
    assert_eq!(mode(&site.www.join(".well-known/webcoop")), 0o755);
}

#[test]
fn a_state_left_open_by_an_older_agent_is_named_and_its_databases_tightened() {
    let Some(mut site) = AgentSite::start(&[("index.html", b"home")], "", &[], |_| {}) else {
        return;
    };
    site.kill_agent();
    let state = site.state();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    for db in ["agent.sqlite", "hub.sqlite"] {
        std::fs::set_permissions(state.join(db), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    site.start_agent();
    let log = site.log_text();
    assert!(
        log.contains(&format!(
            "state directory {} can be read by other users (mode 755)",
            state.display()
        )),
        "{log}"
    );
    for db in ["agent.sqlite", "hub.sqlite"] {
        assert_eq!(mode(&state.join(db)), 0o600, "{db}");
    }
}

#[test]
fn the_crawler_s_directory_is_private_whatever_the_umask() {
    let web = super::support::HostileWeb::start();
    web.set(
        "site.test",
        "/",
        super::support::Canned::ok("text/html", "<a href=\"/a\">a</a>"),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let old = unsafe { libc::umask(0o022) };
    let o = Command::new(crawl_bin())
        .arg("crawl")
        .args([
            "--allow-net",
            "127.0.0.0/8",
            "--coop",
            "off",
            "--progress",
            "quiet",
        ])
        .args(["--seeds", &format!("{}/", web.origin("site.test"))])
        .args(web.resolve_args(&["site.test"]))
        .args(["--delay-min", "0", "--delay-factor", "0", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    unsafe { libc::umask(old) };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = modes(&out);
    assert!(all.iter().any(|(p, _)| p.ends_with("crawl.sqlite")));
    assert!(all.iter().any(|(p, _)| p.ends_with(".warc.gz")));
    for (path, m) in all {
        let want = if Path::new(&path).is_dir() {
            0o700
        } else {
            0o600
        };
        assert_eq!(m, want, "{path} is {m:o}");
    }
}

//! The agent beside a real nginx never shows more than nginx itself would: planted server-side
//! files, protected directories and locations, symlinks and FIFOs, an unreadable robots.txt,
//! and the delta endpoint under a flood.

use super::nginx_site::AgentSite;
use super::support::wait_for;
use std::time::Duration;
use webcoop_testkit::run_ok;

const PHP: &[u8] = b"<?php $db_password=\"hunter2\"; ?>\n";

/// The paths robots.rdf, the sitemap, the changes feed and the ResourceSync lists must never
/// name, the delta endpoint never answer for, and a batch never carry.
pub(crate) fn assert_never_published(site: &AgentSite, paths: &[&str]) {
    let listed = site.listed();
    let text = |path: &str| String::from_utf8_lossy(&site.get(path, &[]).body).into_owned();
    let sitemap = text("/sitemap.xml");
    let feed = site.feed_text();
    let resources = text("/.well-known/webcoop/resourcesync/resourcelist.xml");
    let changes = text("/.well-known/webcoop/resourcesync/changelist.xml");
    let batch = text("/.well-known/webcoop/changes?since=0&bodies=1&limit=10000");
    assert!(!batch.contains("hunter2"), "a batch carries a secret");
    for p in paths {
        assert!(!listed.iter().any(|l| l == p), "{p} is listed: {listed:?}");
        let url = format!("{}{p}", site.nginx.url());
        assert!(!sitemap.contains(&url), "{p} is in the sitemap");
        assert!(!feed.contains(&url), "{p} is in the changes feed");
        assert!(!resources.contains(&url), "{p} is in the resource list");
        assert!(!changes.contains(&url), "{p} is in the change list");
        assert!(
            !batch.contains(&format!("WARC-Target-URI: {url}\r\n")),
            "{p} is in a batch"
        );
        let r = site.get(&format!("/.well-known/webcoop/delta/{p}"), &[]);
        assert_eq!(r.status, 404, "delta/{p} answered {}", r.status);
        assert!(
            !String::from_utf8_lossy(&r.body).contains("hunter2"),
            "delta/{p} shows the secret"
        );
    }
}

#[test]
fn server_side_and_private_files_are_never_listed_versioned_or_served() {
    let planted: &[(&str, &[u8])] = &[
        ("index.html", b"<h1>home</h1>"),
        ("wp-config.php", PHP),
        ("shell.php.html", PHP),
        ("cgi-bin/run.cgi", b"#!/bin/sh\necho hunter2\n"),
        ("app.py", b"PASSWORD = 'hunter2'\n"),
        ("site.env", b"DB_PASSWORD=hunter2\n"),
        ("tls/server.key", b"-----BEGIN PRIVATE KEY----- hunter2"),
        ("tls/server.pem", b"-----BEGIN CERTIFICATE----- hunter2"),
        (
            "backup/db.sql",
            b"INSERT INTO users VALUES ('admin', 'hunter2');",
        ),
        ("backup/db.sql.gz", b"\x1f\x8b hunter2"),
        ("backup/site.tar.gz", b"\x1f\x8b hunter2"),
        ("backup/site.zip", b"PK hunter2"),
        ("logs/error.log", b"login failed for hunter2"),
        ("logs/access.log.1", b"GET /?token=hunter2"),
    ];
    // nginx as a PHP site runs it: .php goes to PHP-FPM (absent here, so 502), never shown.
    let php =
        "    location ~ \\.php$ { fastcgi_pass 127.0.0.1:9; include /etc/nginx/fastcgi_params; }\n";
    let Some(site) = AgentSite::start(planted, php, &[], |_| {}) else {
        return;
    };
    assert_ne!(site.get("/wp-config.php", &[]).status, 200);
    assert_eq!(site.listed(), ["index.html"]);
    let secrets: Vec<&str> = planted[1..].iter().map(|(p, _)| *p).collect();
    assert_never_published(&site, &secrets);
    // Planted while the agent watches: the same.
    std::fs::write(site.www.join("late.php"), PHP).unwrap();
    std::fs::write(site.www.join("dump.sql"), b"hunter2").unwrap();
    site.write_and_wait("page.html", b"<p>a page</p>");
    assert_eq!(site.listed(), ["index.html", "page.html"]);
    assert_never_published(&site, &["late.php", "dump.sql"]);
    // The webmaster may publish an extension on purpose.
    let out = run_ok(
        site.agent_command()
            .args(["--once", "--publish-ext", "py", "--out"])
            .arg(site.tmp.path().join("widened")),
    );
    assert!(out.status.success());
    let widened =
        std::fs::read_to_string(site.tmp.path().join("widened/robots.rdf")).unwrap_or_default();
    assert!(widened.contains("app.py") && !widened.contains("wp-config.php"));
}

#[test]
fn directories_an_htaccess_protects_are_never_published_and_new_ones_are_noticed() {
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"home"),
        (
            "private/.htaccess",
            b"AuthType Basic\nAuthName staff\nAuthUserFile /etc/htpasswd\nRequire valid-user\n",
        ),
        ("private/notes.html", b"hunter2"),
        // Open to an office only. nginx ignores .htaccess files and serves it to everyone:
        // what the file means to protect is kept out, and `check` tells the webmaster so.
        (
            "blog/.htaccess",
            b"RewriteEngine On\n<Files wp-login.html>\n  Require ip 10.0.0.0/8\n</Files>\n",
        ),
        ("blog/wp-login.html", b"hunter2"),
        ("blog/post.html", b"a post"),
        ("members/a.html", b"members only, soon"),
    ];
    let Some(site) = AgentSite::start(files, "", &[], |_| {}) else {
        return;
    };
    assert_eq!(
        site.listed(),
        ["blog/post.html", "index.html", "members/a.html"]
    );
    assert_never_published(&site, &["private/notes.html", "blog/wp-login.html"]);
    assert!(
        site.log_text().contains("private/"),
        "the start-up log names the protected prefix:\n{}",
        site.log_text()
    );
    // A directory protected while the agent runs leaves the listing.
    site.write_and_wait("members/.htaccess", b"Require valid-user\n");
    wait_for(10, "members/ to leave the listing", || {
        !site.listed().iter().any(|p| p.starts_with("members/"))
    });
    let r = site.get("/.well-known/webcoop/delta/members/a.html", &[]);
    assert_eq!(r.status, 404);
}

#[test]
fn locations_the_nginx_configuration_protects_are_never_published() {
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"home"),
        ("private/notes.html", b"hunter2"),
        ("internal/report.html", b"hunter2"),
        ("staff.html", b"hunter2"),
    ];
    let extra = "    location /private/ { auth_basic \"staff\"; auth_basic_user_file /dev/null; }\n    \
                 location ^~ /internal/ { internal; }\n    location = /staff.html { deny all; }\n";
    let Some(mut site) = AgentSite::start(files, extra, &[], |_| {}) else {
        return;
    };
    // nginx itself refuses them, and the judge hears it without being told the rules.
    assert_eq!(site.get("/private/notes.html", &[]).status, 401);
    assert_eq!(site.get("/internal/report.html", &[]).status, 404);
    assert_eq!(site.get("/staff.html", &[]).status, 403);
    assert_eq!(site.listed(), ["index.html"]);
    let log = site.log_text();
    for (why, path) in [
        ("the server answers 401", "private/notes.html"),
        ("the server answers 404", "internal/report.html"),
        ("the server answers 403", "staff.html"),
    ] {
        assert!(
            log.lines().any(|l| l.contains(why) && l.ends_with(path)),
            "{why} {path}:\n{log}"
        );
    }
    // The configuration was read from nginx itself: a password asks for what the judge, a
    // stranger, has not, and is left to it; nothing is hidden.
    assert!(
        log.contains("configuration was read from the server itself"),
        "{log}"
    );
    assert!(
        !log.contains("the judge cannot see what others get"),
        "{log}"
    );
    site.kill_agent();
    // A file given too changes nothing of that.
    let conf = site.server_conf.display().to_string();
    let mut with_config =
        AgentSite::start(files, extra, &["--server-config", &conf], |_| {}).unwrap();
    assert_eq!(with_config.listed(), ["index.html"]);
    assert_never_published(
        &with_config,
        &["private/notes.html", "internal/report.html", "staff.html"],
    );
    let log = with_config.log_text();
    assert!(
        log.lines()
            .any(|l| l.contains("the server answers 401") && l.ends_with("private/notes.html")),
        "{log}"
    );
    // A configuration it cannot read at all stops it with the line named.
    std::fs::write(&conf, "server { location /a { deny all; }\n").unwrap();
    with_config.kill_agent();
    let out = with_config
        .agent_command()
        .args(["--once", "--server-config", &conf])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("site.conf") && err.contains("not closed"),
        "{err}"
    );
}

#[test]
fn a_symlinked_directory_leading_out_is_refused_when_watching_too() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("old.html"), "hunter2").unwrap();
    let target = outside.path().to_path_buf();
    let Some(site) = AgentSite::start(&[("index.html", b"home")], "", &[], |www| {
        std::os::unix::fs::symlink(&target, www.join("shared")).unwrap();
    }) else {
        return;
    };
    assert_eq!(site.listed(), ["index.html"]);
    // Written after start, through the link: the watcher must judge where it resolves.
    std::fs::write(outside.path().join("new.html"), "hunter2").unwrap();
    std::fs::create_dir(outside.path().join("sub")).unwrap();
    std::fs::write(outside.path().join("sub/deep.html"), "hunter2").unwrap();
    site.write_and_wait("later.html", b"later");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(site.listed(), ["index.html", "later.html"]);
    assert_never_published(
        &site,
        &["shared/old.html", "shared/new.html", "shared/sub/deep.html"],
    );
}

#[test]
fn files_swapped_for_links_out_and_fifos_are_never_read() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.html"), "hunter2").unwrap();
    let Some(site) = AgentSite::start(
        &[("index.html", b"home"), ("a.html", b"public a")],
        "",
        &[],
        |www| {
            // A FIFO under a public name: opening it for reading would block the scan.
            let fifo = std::ffi::CString::new(www.join("pipe.html").to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        },
    ) else {
        return;
    };
    assert_eq!(site.listed(), ["a.html", "index.html"]);
    // a.html becomes a link to a file outside: it leaves the listing, its content never shows.
    let before = site.head();
    std::fs::remove_file(site.www.join("a.html")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.html"), site.www.join("a.html"))
        .unwrap();
    wait_for(10, "a.html to leave the listing", || {
        site.head() > before && site.listed() == ["index.html"]
    });
    let r = site.get("/.well-known/webcoop/delta/a.html", &[]);
    assert_eq!(r.status, 404);
    assert!(!String::from_utf8_lossy(&r.body).contains("hunter2"));
    // The FIFO never blocked anything: the agent still publishes.
    site.write_and_wait("b.html", b"b");
    assert_eq!(site.listed(), ["b.html", "index.html"]);
}

#[test]
fn an_unreadable_robots_txt_publishes_nothing_until_it_parses() {
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"home"),
        ("private/salaries.html", b"hunter2"),
        // An HTML error page saved as robots.txt: crawlers would read "no rules".
        (
            "robots.txt",
            b"<html><body><h1>502 Bad Gateway</h1></body></html>\n",
        ),
    ];
    let Some(site) = AgentSite::start(files, "", &[], |_| {}) else {
        return;
    };
    assert!(site.listed().is_empty(), "{:?}", site.listed());
    assert!(
        site.log_text()
            .contains("robots.txt cannot be read or parsed")
    );
    assert_never_published(&site, &["private/salaries.html", "index.html"]);
    // Fixed: published again, with its rules.
    site.write_and_wait("robots.txt", b"User-agent: *\nDisallow: /private/\n");
    wait_for(10, "the listing to come back", || {
        site.listed() == ["index.html", "robots.txt"]
    });
    assert_never_published(&site, &["private/salaries.html"]);
}

#[test]
fn the_delta_endpoint_answers_only_listed_files_and_a_flood_stays_bounded() {
    // 12 MB of text that compresses poorly: every encoding of it costs real work and memory.
    let mut big = String::with_capacity(12 << 20);
    let mut x: u64 = 1;
    while big.len() < 12 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        big.push_str(&format!("{x:016x} "));
    }
    let huge = vec![b'a'; 17 << 20];
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"home"),
        ("big.html", big.as_bytes()),
        ("huge.bin", &huge),
        ("page.html~", b"editor backup"),
    ];
    let Some(site) = AgentSite::start(files, "", &[], |_| {}) else {
        return;
    };
    // Not listed (an editor's backup, a traversal): 404.
    for p in [
        "page.html~",
        "../state/agent.sqlite",
        "%2e%2e/etc/passwd",
        "nope.html",
    ] {
        let r = site.get(&format!("/.well-known/webcoop/delta/{p}"), &[]);
        assert_eq!(r.status, 404, "{p}");
    }
    let r = site.get("/.well-known/webcoop/delta/huge.bin", &[]);
    assert_eq!(r.status, 404);
    assert!(String::from_utf8_lossy(&r.body).contains("fetch it from the site"));
    // Fifty clients at once, each asking for the whole 12 MB file in a different coding mix.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], site.agent_port));
    let workers: Vec<_> = (0..50)
        .map(|i| {
            std::thread::spawn(move || {
                // Mostly uncompressed: each such answer used to be its own copy of the file.
                let coding = if i % 10 == 0 { "gzip" } else { "identity" };
                webcoop::servers::http_get(
                    addr,
                    "/.well-known/webcoop/delta/big.html",
                    &[("Accept-Encoding", coding)],
                )
                .map(|r| r.status)
                .unwrap_or(0)
            })
        })
        .collect();
    let statuses: Vec<u16> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 503),
        "{statuses:?}"
    );
    assert!(statuses.contains(&200));
    let pid = site.agent.as_ref().unwrap().0.id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    // One copy per coding in the shared cache, a few in flight: far from fifty copies (600 MB).
    assert!(
        peak_kb < 300 << 10,
        "the agent's peak memory was {} MiB",
        peak_kb >> 10
    );
}

#[test]
fn forgetting_a_file_s_versions_takes_a_published_secret_back() {
    // Long enough that a diff is smaller than the page.
    let filler: String = (0..200)
        .map(|i| format!("<p>line {i} of the page</p>\n"))
        .collect();
    let with_secret = format!("<p>config</p>\npassword=hunter2\n{filler}");
    let without = format!("<p>config</p>\n{filler}");
    let Some(site) = AgentSite::start(&[("config.html", with_secret.as_bytes())], "", &[], |_| {})
    else {
        return;
    };
    let old = webcoop_protocol::validator::Sha256Digest::of(with_secret.as_bytes())
        .etag()
        .to_string();
    site.write_and_wait("config.html", without.as_bytes());
    // The feed publishes the old version's validator, so anyone can ask for the diff from it.
    assert!(site.feed_text().contains(old.trim_matches('"')));
    let ask = [("If-None-Match", old.as_str()), ("A-IM", "unified")];
    let r = site.get("/.well-known/webcoop/delta/config.html", &ask);
    assert_eq!(r.status, 226);
    assert!(String::from_utf8_lossy(&r.body).contains("-password=hunter2"));
    let out = run_ok(site.agent_command().args(["forget", "config.html"]));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.starts_with("config.html: ") && said.contains("kept versions dropped"),
        "{said}"
    );
    // The running service never uses the forgotten version again, cached or not.
    let r = site.get("/.well-known/webcoop/delta/config.html", &ask);
    assert_eq!(r.status, 200);
    assert!(!String::from_utf8_lossy(&r.body).contains("hunter2"));
}

#[test]
fn a_symlink_swapped_in_during_a_scan_never_leaks_what_it_points_to() {
    let outside = tempfile::tempdir().unwrap();
    let secret = b"hunter2 hunter2 hunter2";
    std::fs::write(outside.path().join("secret"), secret).unwrap();
    let secret_etag = webcoop_protocol::validator::Sha256Digest::of(secret)
        .etag()
        .to_string();
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    // Enough files that a scan takes a while, and the swapped one among them.
    for i in 0..2000 {
        std::fs::write(www.join(format!("p{i}.html")), format!("page {i}")).unwrap();
    }
    std::fs::write(www.join("a.html"), "public a").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (www, target, stop) = (www.clone(), outside.path().join("secret"), stop.clone());
        std::thread::spawn(move || {
            let (file, tmp_link, tmp_file) = (
                www.join("a.html"),
                www.join(".swap-link"),
                www.join(".swap-file"),
            );
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Atomic renames: the name always exists, as a file or as a link out.
                let _ = std::os::unix::fs::symlink(&target, &tmp_link);
                let _ = std::fs::rename(&tmp_link, &file);
                let _ = std::fs::write(&tmp_file, "public a");
                let _ = std::fs::rename(&tmp_file, &file);
                swaps += 1;
            }
            swaps
        })
    };
    // A server that follows links out, as a careless one would: only the agent's own
    // confinement keeps the secret out.
    let server = webcoop_testkit::static_site::StaticServer::serve(&www);
    for run in 0..6 {
        let out = tmp.path().join(format!("out{run}"));
        let o = std::process::Command::new(super::support::agent_bin())
            .args(["--server-url", &server.url()])
            .arg("--docroot")
            .arg(&www)
            .arg("--state")
            .arg(tmp.path().join(format!("state{run}")))
            .args([
                "--base-url",
                "http://site.test/",
                "--once",
                "--debounce-ms",
                "0",
            ])
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rdf = std::fs::read_to_string(out.join("robots.rdf")).unwrap();
        assert!(
            !rdf.contains(secret_etag.trim_matches('"')),
            "run {run}: the file outside was read and listed"
        );
        assert!(
            rdf.contains("p1999.html"),
            "run {run}: the pages were judged"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(swapper.join().unwrap() > 100, "the swaps raced the scans");
}

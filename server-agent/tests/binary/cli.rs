//! The `webcoop-agent` binary as a webmaster runs it: `--once`, configuration from flags and
//! environment, clear start-up errors, privacy rules, and respect for documents it did not write.

use crate::common::{read_sitemap_urls, url};
use std::path::Path;
use std::process::{Command, Output};
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_testkit::static_site::StaticServer;

fn agent() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_webcoop-agent"));
    c.env_remove("WEBCOOP_DOCROOT")
        .env_remove("WEBCOOP_BASE_URL")
        .env("WEBCOOP_LOG", "warn");
    c
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn listed_urls(out: &Path) -> Vec<String> {
    let doc = robots_rdf::parse(
        &std::fs::read(out.join("robots.rdf")).unwrap(),
        &RdfLimits::default(),
    )
    .unwrap();
    doc.items.into_iter().map(|i| i.url.to_string()).collect()
}

#[test]
fn help_and_version() {
    let o = run(agent().arg("--version"));
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("webcoop-agent "));
    let o = run(agent().arg("--help"));
    let help = String::from_utf8_lossy(&o.stdout);
    for flag in [
        "--docroot",
        "--base-url",
        "--state",
        "--include",
        "--exclude",
        "--config",
        "--once",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn planted_secrets_and_symlinks_out_are_never_published() {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir_all(www.join(".git/objects")).unwrap();
    std::fs::write(www.join("index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(www.join(".htpasswd"), "admin:$apr1$secret").unwrap();
    std::fs::write(www.join(".git/config"), "[core]").unwrap();
    std::fs::write(www.join(".git/objects/ab"), "blob").unwrap();
    std::fs::write(www.join("index.html~"), "old home").unwrap();
    std::os::unix::fs::symlink("/etc", www.join("etc")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", www.join("passwd.html")).unwrap();
    // A server that serves every file, dotfiles and links out included: the names alone
    // keep these out.
    let server = StaticServer::serve(&www);
    let o = run(agent()
        .env("WEBCOOP_SERVER_URL", server.url())
        .arg("--docroot")
        .arg(&www)
        .args(["--base-url", "https://site.example/", "--once"]));
    assert!(o.status.success(), "{}", stderr(&o));

    let everything = [
        std::fs::read_to_string(www.join("robots.rdf")).unwrap(),
        std::fs::read_to_string(www.join("sitemap.xml")).unwrap(),
        std::fs::read_to_string(www.join(".well-known/webcoop/changes.atom")).unwrap(),
    ]
    .concat();
    for secret in [
        ".htpasswd",
        ".git",
        "index.html~",
        "etc/",
        "passwd",
        "root:",
    ] {
        assert!(!everything.contains(secret), "{secret} was published");
    }
    assert_eq!(listed_urls(&www), [url("index.html")]);
    let sitemap: Vec<String> = read_sitemap_urls(&www)
        .iter()
        .map(|u| u.loc.to_string())
        .collect();
    assert_eq!(sitemap, [url("index.html")]);
    // The default state directory is beside the docroot, not inside it.
    assert!(tmp.path().join("www.webcoop/agent.sqlite").exists());
}

#[test]
fn start_up_errors_are_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    let o =
        run(agent()
            .arg("--docroot")
            .arg(&missing)
            .args(["--base-url", "https://e/", "--once"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("does not exist") && stderr(&o).contains("nope"),
        "{}",
        stderr(&o)
    );

    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let o =
        run(agent()
            .arg("--docroot")
            .arg(&www)
            .args(["--base-url", "www.example.org", "--once"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not absolute"), "{}", stderr(&o));

    let o = run(agent().arg("--docroot").arg(&www).args([
        "--base-url",
        "https://e/",
        "--once",
        "--state",
        "/proc/webcoop-state",
    ]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("state directory"), "{}", stderr(&o));

    let o = run(agent().args(["--base-url", "https://e/", "--once"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--docroot"), "{}", stderr(&o));

    // An unreadable docroot (not testable as root, who reads everything).
    if unsafe { libc_geteuid() } != 0 {
        let locked = tmp.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000))
            .unwrap();
        let o =
            run(agent()
                .arg("--docroot")
                .arg(&locked)
                .args(["--base-url", "https://e/", "--once"]));
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains("cannot be read"), "{}", stderr(&o));
    }
}

unsafe fn libc_geteuid() -> u32 {
    unsafe { libc::geteuid() }
}

#[test]
fn every_option_can_come_from_the_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir_all(www.join("drafts")).unwrap();
    std::fs::write(www.join("a.html"), "a").unwrap();
    std::fs::write(www.join("b.txt"), "b").unwrap();
    std::fs::write(www.join("drafts/c.html"), "c").unwrap();
    let out = tmp.path().join("out");
    let server = StaticServer::serve(&www);
    let o = run(agent()
        .env("WEBCOOP_SERVER_URL", server.url())
        .env("WEBCOOP_DOCROOT", &www)
        .env("WEBCOOP_BASE_URL", "https://env.example/")
        .env("WEBCOOP_STATE", tmp.path().join("state"))
        .env("WEBCOOP_OUT", &out)
        .env("WEBCOOP_INCLUDE", "*.html")
        .env("WEBCOOP_EXCLUDE", "drafts")
        .env("WEBCOOP_ONCE", "true"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(listed_urls(&out), ["https://env.example/a.html"]);
    assert!(
        !www.join("robots.rdf").exists(),
        "output goes to --out, not the docroot"
    );
}

#[test]
fn a_webmasters_own_sitemap_is_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::write(www.join("index.html"), "home").unwrap();
    let theirs = "<?xml version=\"1.0\"?><urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>https://e/x</loc></url></urlset>";
    std::fs::write(www.join("sitemap.xml"), theirs).unwrap();
    let server = StaticServer::serve(&www);
    let server_url = server.url();
    let args = [
        "--base-url",
        "https://e/",
        "--once",
        "--server-url",
        &server_url,
    ];
    let o = run(agent().arg("--docroot").arg(&www).args(args));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("sitemap.xml already exists and was not written by webcoop-agent"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(www.join("sitemap.xml")).unwrap(),
        theirs
    );
    assert!(!www.join("robots.rdf").exists());

    // Our own documents are recognised on the next run; --replace-existing takes theirs over.
    let o = run(agent()
        .arg("--docroot")
        .arg(&www)
        .args(args)
        .arg("--replace-existing"));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(agent().arg("--docroot").arg(&www).args(args));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_state_directory_is_for_one_site() {
    let tmp = tempfile::tempdir().unwrap();
    for site in ["one", "two"] {
        std::fs::create_dir(tmp.path().join(site)).unwrap();
    }
    let state = tmp.path().join("state");
    let o = run(agent()
        .arg("--docroot")
        .arg(tmp.path().join("one"))
        .arg("--state")
        .arg(&state)
        .args(["--base-url", "https://one/", "--once"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(agent()
        .arg("--docroot")
        .arg(tmp.path().join("two"))
        .arg("--state")
        .arg(&state)
        .args(["--base-url", "https://two/", "--once"]));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("belongs to"), "{}", stderr(&o));
}

#[test]
fn robots_lines_point_at_the_documents_and_robots_parsers_tolerate_them() {
    let o = run(agent().args([
        "--print-robots-lines",
        "--base-url",
        "https://www.example.org/blog",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        lines,
        "Sitemap: https://www.example.org/blog/sitemap.xml\nRobots-RDF: https://www.example.org/blog/robots.rdf\n"
    );
    // Added to a robots.txt, the rules around them still apply.
    let robots =
        format!("User-agent: *\nDisallow: /private/\n{lines}User-agent: BadBot\nDisallow: /\n");
    let r = texting_robots::Robot::new("webcoop", robots.as_bytes()).unwrap();
    assert!(!r.allowed("/private/x"));
    assert!(r.allowed("/public"));
    assert_eq!(r.sitemaps, ["https://www.example.org/blog/sitemap.xml"]);
    let bad = texting_robots::Robot::new("BadBot", robots.as_bytes()).unwrap();
    assert!(!bad.allowed("/public"));
}

#[test]
fn the_web_server_judges_each_file_and_an_unreachable_one_publishes_nothing_new() {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::write(www.join("index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(www.join("page.html"), "the page as on disk").unwrap();
    std::fs::write(www.join("only-here.html"), "the server has no such file").unwrap();
    // The server serves another directory: page.html there is other bytes, only-here.html
    // is missing.
    let served = tmp.path().join("served");
    std::fs::create_dir(&served).unwrap();
    std::fs::write(served.join("index.html"), "<h1>home</h1>").unwrap();
    std::fs::write(served.join("page.html"), "<?php echo 'run'; ?> output").unwrap();
    let server = StaticServer::serve(&served);
    let out = tmp.path().join("out");
    let o = run(agent()
        .env("WEBCOOP_LOG", "info")
        .arg("--docroot")
        .arg(&www)
        .arg("--out")
        .arg(&out)
        .args(["--base-url", "https://site.example/", "--once"])
        .args(["--server-url", &server.url()]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(listed_urls(&out), [url("index.html")]);
    let log = stderr(&o);
    assert!(
        log.contains("the server runs this file: its answer is not the file: page.html"),
        "{log}"
    );
    assert!(
        log.contains("the server answers 404: only-here.html"),
        "{log}"
    );
    drop(server);

    // Nobody answers: nothing is published, and the run says so and fails.
    std::fs::write(www.join("new.html"), "new").unwrap();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let fresh = tmp.path().join("fresh");
    let o = run(agent()
        .arg("--docroot")
        .arg(&www)
        .arg("--out")
        .arg(&fresh)
        .arg("--state")
        .arg(tmp.path().join("fresh-state"))
        .args(["--base-url", "https://site.example/", "--once"])
        .args(["--server-url", &dead_url]));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not published: the web server could not judge them")
            && stderr(&o).contains(&dead_url),
        "{}",
        stderr(&o)
    );
    assert!(listed_urls(&fresh).is_empty());
}

#[test]
fn a_server_url_that_is_not_an_origin_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for bad in [
        "ftp://127.0.0.1/",
        "http://127.0.0.1/site/",
        "http://user:pw@127.0.0.1/",
        "127.0.0.1:80",
    ] {
        let o = run(agent().arg("--docroot").arg(tmp.path()).args([
            "--base-url",
            "https://e/",
            "--once",
            "--server-url",
            bad,
        ]));
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("--server-url"), "{bad}: {}", stderr(&o));
    }
}

#[test]
fn relative_paths_are_the_working_directory_s_and_a_snapshot_is_built_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    for i in 0..30 {
        std::fs::write(
            www.join(format!("p{i}.html")),
            format!(
                "<!doctype html><title>{i}</title><nav><a href=/>home</a></nav><p>page {i}</p>"
            ),
        )
        .unwrap();
    }
    let server = StaticServer::serve(&www);
    // `out` and `state` do not exist yet and are named relative to the working directory.
    let o = run(agent()
        .current_dir(tmp.path())
        .args(["--docroot", "www", "--out", "out", "--state", "state"])
        .args([
            "--base-url",
            "http://www.example.test/",
            "--server-url",
            &server.url(),
        ])
        .arg("snapshot"));
    assert!(o.status.success(), "{}", stderr(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("30 files"), "{said}");
    let dir = tmp.path().join("out/.well-known/webcoop/snapshot");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "snapshot-000000000000.cdxj",
            "snapshot-000000000000.warc.zst"
        ]
    );
    let rdf = std::fs::read_to_string(tmp.path().join("out/robots.rdf")).unwrap();
    assert!(
        rdf.contains(
            "http://www.example.test/.well-known/webcoop/snapshot/snapshot-000000000000.warc.zst"
        ),
        "{rdf}"
    );
}

#[test]
fn a_complete_listing_is_stated_only_when_asked_and_never_in_origin_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "<h1>home</h1>").unwrap();
    let server = StaticServer::serve(&www);
    let listing = |complete: bool| {
        let mut cmd = agent();
        cmd.env("WEBCOOP_SERVER_URL", server.url())
            .arg("--docroot")
            .arg(&www)
            .args(["--base-url", "https://site.example/", "--once"]);
        if complete {
            cmd.arg("--complete-listing");
        }
        let o = run(&mut cmd);
        assert!(o.status.success(), "{}", stderr(&o));
        let doc = std::fs::read(www.join("robots.rdf")).unwrap();
        webcoop_protocol::robots_rdf::parse(&doc, &Default::default()).unwrap()
    };
    assert!(!listing(false).channel.complete);
    assert!(listing(true).channel.complete);
    // A generated site's agent lists the pages it finds: it cannot say they are all.
    let o = run(agent()
        .args([
            "--origin",
            "http://127.0.0.1:9/",
            "--base-url",
            "https://e/",
            "--complete-listing",
            "--once",
        ])
        .arg("--state")
        .arg(tmp.path().join("state"))
        .arg("--out")
        .arg(tmp.path().join("out")));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--complete-listing"), "{}", stderr(&o));
}

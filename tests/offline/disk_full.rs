//! The crawler and the agent on a disk that fills up, for real (a small tmpfs): each stops
//! with a message that says the disk is full, leaves what it saved consistent, and carries on
//! from there once there is space, with nothing lost.

use rand::{RngExt, SeedableRng};
use std::path::Path;
use std::process::{Command, Output};
use webcoop::servers::Killed;
use webcoop_protocol::validator::Sha256Digest;
use webcoop_testkit::{self as testkit, Tmpfs};

/// A docroot of `pages` pages of `bytes` hexadecimal filler each (it compresses only by half,
/// so the crawler's archive grows as the crawl goes), all linked from `/index.html`.
fn write_site(root: &Path, pages: usize, bytes: usize) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut links = String::new();
    for i in 0..pages {
        let mut filler = String::with_capacity(bytes + 16);
        while filler.len() < bytes {
            filler.push_str(&format!("{:016x}", rng.random::<u64>()));
        }
        let page = format!("<html><body><p>{filler}</p><a href=\"/\">home</a></body></html>\n");
        std::fs::write(root.join(format!("p{i}.html")), page).unwrap();
        links.push_str(&format!("<a href=\"/p{i}.html\">page {i}</a>\n"));
    }
    std::fs::write(
        root.join("index.html"),
        format!("<html><body>{links}</body></html>\n"),
    )
    .unwrap();
}

fn said(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn a_crawl_that_fills_its_disk_stops_saying_so_and_resumes_without_losing_a_page() {
    let Some(disk) = Tmpfs::mount("300k") else {
        return;
    };
    let site = tempfile::tempdir().unwrap();
    write_site(site.path(), 40, 16_000);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt
        .block_on(webcoop::bench::site_server::start(site.path(), None))
        .unwrap();
    let crawl_bin = testkit::workspace_bin("webcoop-crawl");
    let out = disk.path().join("crawl");
    let crawl = || {
        Command::new(&crawl_bin)
            .args([
                "crawl",
                "--allow-net",
                "127.0.0.0/8",
                "--seeds",
                &format!("http://{addr}/"),
                "--out",
            ])
            .arg(&out)
            .args(["--delay-min", "0", "--delay-factor", "0", "--coop", "off"])
            .args(["--progress", "quiet"])
            .output()
            .unwrap()
    };

    let first = crawl();
    assert!(!first.status.success(), "{}", said(&first));
    assert!(said(&first).contains("disk full"), "{}", said(&first));
    // What was saved can be read while the disk is still full.
    let status = Command::new(&crawl_bin)
        .args(["status", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", said(&status));
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let before = v["fetched"].as_u64().unwrap();
    assert!(before < 41, "the disk was meant to fill up mid-crawl: {v}");

    disk.resize("64m");
    let second = crawl();
    assert!(second.status.success(), "{}", said(&second));
    // Every page is held, with exactly the site's content.
    let copies = Command::new(&crawl_bin)
        .args(["copies", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&copies.stdout);
    for i in 0..40 {
        let body = std::fs::read(site.path().join(format!("p{i}.html"))).unwrap();
        let line = format!("{} http://{addr}/p{i}.html", Sha256Digest::of(&body).etag());
        assert!(listed.lines().any(|l| l == line), "{line} in\n{listed}");
    }
    // The archive is whole: no record cut short where the disk ran out.
    let records = testkit::warcio_records(&out);
    if !records.is_empty() {
        let responses: std::collections::BTreeSet<&str> = records
            .iter()
            .filter(|(kind, _)| kind == "response")
            .map(|(_, uri)| uri.as_str())
            .collect();
        assert!(responses.len() >= 41, "{responses:?}");
    }
}

#[test]
fn an_agent_whose_disk_fills_keeps_the_published_documents_and_catches_up() {
    let Some(state_disk) = Tmpfs::mount("176k") else {
        return;
    };
    let Some(out_disk) = Tmpfs::mount("12k") else {
        return;
    };
    let agent_bin = testkit::workspace_bin("webcoop-agent");
    let site = tempfile::tempdir().unwrap();
    write_site(site.path(), 2, 4_000);
    let state = state_disk.path().join("state");
    let server = webcoop_testkit::static_site::StaticServer::serve(site.path());
    let publish = || {
        Command::new(&agent_bin)
            .arg("--docroot")
            .arg(site.path())
            .args(["--server-url", &server.url()])
            .args(["--base-url", "http://www.example.test/", "--state"])
            .arg(&state)
            .arg("--out")
            .arg(out_disk.path())
            // The disk is sized for robots.rdf, the sitemap and the feed alone.
            .arg("--resourcesync=false")
            .arg("--once")
            .output()
            .unwrap()
    };
    let first = publish();
    assert!(first.status.success(), "{}", said(&first));
    let robots = out_disk.path().join("robots.rdf");
    let published = std::fs::read(&robots).unwrap();

    // The published documents outgrow their disk: the old ones stay, whole, and no
    // temporary file is left behind.
    for i in 0..80 {
        std::fs::write(site.path().join(format!("n{i}.html")), format!("new {i}\n")).unwrap();
    }
    let full = publish();
    assert!(!full.status.success(), "{}", said(&full));
    assert!(said(&full).contains("disk full"), "{}", said(&full));
    assert_eq!(std::fs::read(&robots).unwrap(), published);
    let strays: Vec<_> = std::fs::read_dir(out_disk.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".webcoop-tmp"))
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
    out_disk.resize("4m");

    // Then the state's disk fills: nothing is saved, and the files are found again later.
    for i in 0..400 {
        std::fs::write(
            site.path().join(format!("m{i}.html")),
            format!("{i} {}\n", "more ".repeat(200)),
        )
        .unwrap();
    }
    let full = publish();
    assert!(!full.status.success(), "{}", said(&full));
    assert!(said(&full).contains("disk full"), "{}", said(&full));

    state_disk.resize("64m");
    let last = publish();
    assert!(last.status.success(), "{}", said(&last));
    let listing = std::fs::read_to_string(&robots).unwrap();
    for name in ["p0.html", "n79.html", "m399.html"] {
        assert!(
            listing.contains(&format!("http://www.example.test/{name}")),
            "{name} listed"
        );
    }
    let items = listing.matches("<item ").count();
    assert_eq!(items, 1 + 2 + 80 + 400, "index, p*, n*, m*");
}

#[test]
fn a_watching_agent_publishes_what_it_could_not_write_once_there_is_space_without_a_new_change() {
    let Some(out_disk) = Tmpfs::mount("12k") else {
        return;
    };
    let agent_bin = testkit::workspace_bin("webcoop-agent");
    let site = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    write_site(site.path(), 2, 4_000);
    let log_path = state.path().join("agent.log");
    let server = webcoop_testkit::static_site::StaticServer::serve(site.path());
    let _agent = Killed(
        Command::new(&agent_bin)
            .arg("--docroot")
            .arg(site.path())
            .args(["--server-url", &server.url()])
            .args(["--base-url", "http://www.example.test/", "--state"])
            .arg(state.path().join("state"))
            .arg("--out")
            .arg(out_disk.path())
            .arg("--resourcesync=false")
            .args(["--debounce-ms", "20"])
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let robots = out_disk.path().join("robots.rdf");
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !done() {
            assert!(
                std::time::Instant::now() < deadline,
                "{what}; the agent said:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    wait_for("the first publication", &|| {
        std::fs::read_to_string(&robots).is_ok_and(|l| l.contains("/p1.html"))
    });
    for i in 0..80 {
        std::fs::write(site.path().join(format!("n{i}.html")), format!("new {i}\n")).unwrap();
    }
    wait_for("the disk filling up", &|| {
        std::fs::read_to_string(&log_path).is_ok_and(|l| l.contains("disk full"))
    });
    assert!(
        !std::fs::read_to_string(&robots)
            .unwrap()
            .contains("/n0.html")
    );
    out_disk.resize("4m");
    // No change is made from here on: the agent tries again by itself.
    wait_for("the documents written once there was space", &|| {
        std::fs::read_to_string(&robots).is_ok_and(|l| l.matches("<item ").count() == 83)
    });
}

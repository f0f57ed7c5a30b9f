//! The agent in watch mode, as a process: changes are published within about a second, a burst
//! of 10,000 loses none, a file still being written is published once complete, and `kill -9`
//! at any moment leaves complete documents and a state that the next start continues from.

use crate::common::{BASE, url};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_protocol::changes_feed::{self, ChangeKind, FeedLimits};
use webcoop_protocol::robots_rdf::RobotsRdf;
use webcoop_testkit::static_site::StaticServer;

struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(www: &Path, state: &Path, server: &StaticServer) -> Running {
    start_logging(www, state, server, Stdio::inherit())
}

fn start_logging(www: &Path, state: &Path, server: &StaticServer, stderr: Stdio) -> Running {
    let child = Command::new(env!("CARGO_BIN_EXE_webcoop-agent"))
        .arg("--docroot")
        .arg(www)
        .arg("--state")
        .arg(state)
        .args(["--base-url", BASE, "--debounce-ms", "50"])
        .args(["--server-url", &server.url()])
        .env(
            "WEBCOOP_LOG",
            std::env::var("AGENT_LOG_TMP").unwrap_or("warn".into()),
        )
        .stdin(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    Running { child }
}

fn listing(www: &Path) -> Option<RobotsRdf> {
    crate::common::read_listing(www)
}

/// Polls until `done` holds on the published listing; fails after `limit`.
fn wait_for(
    www: &Path,
    limit: Duration,
    what: &str,
    done: impl Fn(&RobotsRdf) -> bool,
) -> RobotsRdf {
    wait_explaining(www, limit, what, done, |_| String::new())
}

/// [`wait_for`], whose failure also says what `explain` finds in the last listing published.
fn wait_explaining(
    www: &Path,
    limit: Duration,
    what: &str,
    done: impl Fn(&RobotsRdf) -> bool,
    explain: impl Fn(&RobotsRdf) -> String,
) -> RobotsRdf {
    let start = Instant::now();
    // Parsed again only once replaced: parsing 10,000 items unoptimised every few milliseconds
    // took a core from the agent under test.
    let mut seen = None;
    loop {
        let stamp = std::fs::metadata(www.join("robots.rdf"))
            .and_then(|m| Ok((m.modified()?, m.len())))
            .ok();
        if stamp.is_some() && stamp != seen {
            seen = stamp;
            if let Some(l) = listing(www)
                && done(&l)
            {
                return l;
            }
        }
        if start.elapsed() >= limit {
            let last = listing(www);
            panic!(
                "not published within {limit:?}: {what}; the last listing ({:?} announcements): {}",
                last.as_ref().and_then(|l| l.channel.seq),
                last.as_ref().map_or_else(|| "none".into(), &explain)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A docroot, a state directory and the web server over the docroot that judges its files.
fn site() -> (tempfile::TempDir, PathBuf, PathBuf, StaticServer) {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let www = www.canonicalize().unwrap();
    let state = tmp.path().join("state");
    let server = StaticServer::serve(&www);
    (tmp, www, state, server)
}

fn has(l: &RobotsRdf, rel: &str) -> bool {
    l.items.iter().any(|i| i.url.as_str() == url(rel))
}

#[test]
fn changes_are_published_while_watching() {
    let (_tmp, www, state, server) = site();
    std::fs::write(www.join("index.html"), "home").unwrap();
    let _agent = start(&www, &state, &server);
    wait_for(&www, Duration::from_secs(20), "the first listing", |l| {
        has(l, "index.html")
    });

    std::fs::write(www.join("new.html"), "fresh").unwrap();
    wait_for(&www, Duration::from_secs(10), "a created file", |l| {
        has(l, "new.html")
    });
    // An editor's dance: write a temporary file, keep a backup, rename over the original.
    std::fs::write(www.join(".new.html.swp"), "swap").unwrap();
    std::fs::write(www.join("new.html.tmp"), "fresh, edited").unwrap();
    std::fs::rename(www.join("new.html"), www.join("new.html~")).unwrap();
    std::fs::rename(www.join("new.html.tmp"), www.join("new.html")).unwrap();
    std::fs::remove_file(www.join(".new.html.swp")).unwrap();
    std::fs::remove_file(www.join("new.html~")).unwrap();
    let l = wait_for(&www, Duration::from_secs(10), "the edited file", |l| {
        l.items
            .iter()
            .any(|i| i.url.as_str() == url("new.html") && i.size == Some(13))
    });
    assert_eq!(
        l.items.len(),
        2,
        "no temporary or backup file was ever listed"
    );
    std::fs::remove_file(www.join("index.html")).unwrap();
    wait_for(&www, Duration::from_secs(10), "a deletion", |l| {
        !has(l, "index.html")
    });

    // The feed is written just after robots.rdf, so it may still be one publication behind.
    let feed_kinds = || {
        let feed = changes_feed::parse(
            &std::fs::read(www.join(".well-known/webcoop/changes.atom")).unwrap(),
            &FeedLimits::default(),
        )
        .unwrap();
        feed.entries
            .iter()
            .map(|e| (e.kind, e.url.path().to_string()))
            .collect::<Vec<(ChangeKind, String)>>()
    };
    let start = Instant::now();
    let mut kinds = feed_kinds();
    while kinds.last().map(|(k, _)| *k) != Some(ChangeKind::Deleted)
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(20));
        kinds = feed_kinds();
    }
    // The editor's dance is one modification, however the events were batched.
    assert_eq!(
        kinds,
        [
            (ChangeKind::Created, "/new.html".to_string()),
            (ChangeKind::Modified, "/new.html".to_string()),
            (ChangeKind::Deleted, "/index.html".to_string()),
        ]
    );
}

#[test]
fn a_burst_of_ten_thousand_changes_loses_none() {
    let (_tmp, www, state, server) = site();
    std::fs::write(www.join("index.html"), "home").unwrap();
    let _agent = start(&www, &state, &server);
    wait_for(&www, Duration::from_secs(20), "the first listing", |l| {
        has(l, "index.html")
    });
    for dir in 0..10 {
        std::fs::create_dir(www.join(format!("d{dir}"))).unwrap();
        for i in 0..1000 {
            std::fs::write(
                www.join(format!("d{dir}/p{i}.html")),
                format!("page {dir}/{i}"),
            )
            .unwrap();
        }
    }
    // Deadlines, not speeds: every change is asked of the server as a stranger would ask it,
    // and under the whole suite on a slow day 10,000 of them took over 120 s.
    let l = wait_for(&www, Duration::from_secs(300), "10,000 new files", |l| {
        l.items.len() == 10_001
    });
    // Each creation announced: sequence numbers 1..=10,000. A file the agent read between
    // its creation and its write (`fs::write` is both, and a loaded machine may pause the
    // test between them for longer than the debounce) is also a modification, rightly.
    let first = l.channel.seq.unwrap_or(0);
    assert!((10_000..10_100).contains(&first), "{first} announcements");
    // Now change them all again, as fast as possible.
    for dir in 0..10 {
        for i in 0..1000 {
            std::fs::write(
                www.join(format!("d{dir}/p{i}.html")),
                format!("page {dir}/{i}, v2"),
            )
            .unwrap();
        }
    }
    // Every file's second version published, each a modification at least (see above).
    let want: std::collections::HashMap<String, u64> = (0..10)
        .flat_map(|dir| (0..1000).map(move |i| (dir, i)))
        .map(|(dir, i)| {
            let size = format!("page {dir}/{i}, v2").len() as u64;
            (url(&format!("d{dir}/p{i}.html")), size)
        })
        .collect();
    let behind = |l: &RobotsRdf| {
        let sizes: std::collections::HashMap<String, Option<u64>> = l
            .items
            .iter()
            .map(|i| (i.url.to_string(), i.size))
            .collect();
        let mut late: Vec<&String> = want
            .iter()
            .filter(|(u, w)| sizes.get(*u) != Some(&Some(**w)))
            .map(|(u, _)| u)
            .collect();
        late.sort();
        late
    };
    let l = wait_explaining(
        &www,
        Duration::from_secs(300),
        "10,000 modifications",
        |l| l.channel.seq.is_some_and(|s| s >= first + 10_000) && behind(l).is_empty(),
        |l| {
            let late = behind(l);
            format!(
                "{} files not at their second version, first {:?}",
                late.len(),
                &late[..late.len().min(5)]
            )
        },
    );
    assert_eq!(l.items.len(), 10_001);
}

#[test]
fn a_watcher_overflow_is_logged_and_followed_by_a_rescan_that_loses_nothing() {
    let (_tmp, www, state, server) = site();
    std::fs::write(www.join("index.html"), "home").unwrap();
    let mut agent = start_logging(&www, &state, &server, Stdio::piped());
    wait_for(&www, Duration::from_secs(20), "the first listing", |l| {
        has(l, "index.html")
    });
    // Freeze the agent so the kernel's event queue (fs.inotify.max_queued_events, 16384 by
    // default) overflows while it cannot read.
    let pid = agent.child.id() as i32;
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    let files = queue / 2 + 1000; // each file costs at least a create, a write and a close event
    for i in 0..files {
        std::fs::write(www.join(format!("f{i}.html")), format!("{i}")).unwrap();
    }
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let l = wait_for(
        &www,
        Duration::from_secs(120),
        "every file after the overflow",
        |l| l.items.len() == files + 1,
    );
    assert_eq!(
        l.channel.seq,
        Some(files as u64),
        "each creation announced exactly once"
    );
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut log = String::new();
    std::io::Read::read_to_string(agent.child.stderr.as_mut().unwrap(), &mut log).unwrap();
    assert!(
        log.contains("rescanning the whole docroot") && log.contains("lost events"),
        "log: {log}"
    );
}

#[test]
fn a_file_still_being_written_is_published_once_complete() {
    let (_tmp, www, state, server) = site();
    std::fs::write(www.join("index.html"), "home").unwrap();
    let _agent = start(&www, &state, &server);
    wait_for(&www, Duration::from_secs(20), "the first listing", |l| {
        has(l, "index.html")
    });
    {
        use std::io::Write;
        let mut f = std::fs::File::create(www.join("big.html")).unwrap();
        // Slower than the debounce window and longer than the one-second batching limit.
        for chunk in 0..12 {
            f.write_all(format!("<p>chunk {chunk:02}</p>\n").as_bytes())
                .unwrap();
            f.flush().unwrap();
            std::thread::sleep(Duration::from_millis(150));
        }
    }
    let l = wait_for(&www, Duration::from_secs(20), "the complete file", |l| {
        has(l, "big.html")
    });
    let item = l
        .items
        .iter()
        .find(|i| i.url.as_str() == url("big.html"))
        .unwrap();
    assert_eq!(item.size, Some(12 * 16));
    // Give a stray partial publication the time to show up, then check there was none.
    std::thread::sleep(Duration::from_millis(500));
    let feed = changes_feed::parse(
        &std::fs::read(www.join(".well-known/webcoop/changes.atom")).unwrap(),
        &FeedLimits::default(),
    )
    .unwrap();
    let big: Vec<_> = feed
        .entries
        .iter()
        .filter(|e| e.url.as_str() == url("big.html"))
        .collect();
    assert_eq!(big.len(), 1, "published once, complete: {big:?}");
    assert_eq!(big[0].size, Some(12 * 16));
}

#[test]
fn kill_dash_nine_at_any_moment_leaves_complete_documents_and_a_consistent_state() {
    let (_tmp, www, state, server) = site();
    for i in 0..3000 {
        std::fs::write(
            www.join(format!("p{i}.html")),
            format!("page {i} {}", "text ".repeat(50)),
        )
        .unwrap();
    }
    let mut round = 0u64;
    let mut expected_files = 3000;
    for kill_after_ms in [5u64, 30, 80, 150, 250, 400, 40, 120, 10, 600] {
        round += 1;
        let mut agent = start(&www, &state, &server);
        // Change things while it starts, scans and publishes, then kill it without warning.
        for i in 0..200 {
            std::fs::write(
                www.join(format!("p{}.html", (i * 7 + round) % 3000)),
                format!("round {round} edit {i}"),
            )
            .unwrap();
        }
        std::fs::write(www.join(format!("round{round}.html")), "new").unwrap();
        expected_files += 1;
        std::thread::sleep(Duration::from_millis(kill_after_ms));
        unsafe {
            libc::kill(agent.child.id() as i32, libc::SIGKILL);
        }
        let _ = agent.child.wait();
        // Whatever was published is complete (the parse inside `listing` panics otherwise).
        if let Some(l) = listing(&www) {
            assert!(
                l.items.len() >= 3000,
                "round {round}: {} items",
                l.items.len()
            );
        }
        let stray: Vec<String> = std::fs::read_dir(&www)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".webcoop-tmp"))
            .collect();
        drop(stray); // allowed to exist now; the next start removes them
    }
    // A final run continues from the state and publishes exactly the docroot.
    let o = Command::new(env!("CARGO_BIN_EXE_webcoop-agent"))
        .arg("--docroot")
        .arg(&www)
        .arg("--state")
        .arg(&state)
        .args(["--base-url", BASE, "--once"])
        .args(["--server-url", &server.url()])
        .env("WEBCOOP_LOG", "warn")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let l = listing(&www).unwrap();
    assert_eq!(l.items.len(), expected_files);
    for item in &l.items {
        let rel = item.url.path().trim_start_matches('/');
        let content = std::fs::read(www.join(rel)).unwrap();
        let etag = webcoop_protocol::validator::Sha256Digest::of(&content).etag();
        assert_eq!(
            item.etag.as_ref(),
            Some(&etag),
            "{rel} is listed with a stale validator"
        );
    }
    assert!(
        std::fs::read_dir(&www)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with(".webcoop-tmp"))
    );
    // Sequence numbers never repeat: every change of the log is distinct.
    let feed = changes_feed::parse(
        &std::fs::read(www.join(".well-known/webcoop/changes.atom")).unwrap(),
        &FeedLimits::default(),
    )
    .unwrap();
    let seqs: Vec<u64> = feed.entries.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

use super::{Signal, Watcher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The paths of every signal received until `done` says so (or 5 s pass), by kind.
fn until(w: &Watcher, done: impl Fn(&[Signal]) -> bool) -> Vec<Signal> {
    let start = Instant::now();
    let mut got = Vec::new();
    while !done(&got) && start.elapsed() < Duration::from_secs(5) {
        if let Ok((_, s)) = w.signals().recv_timeout(Duration::from_millis(50)) {
            got.push(s);
        }
    }
    got
}

fn closed(signals: &[Signal], path: &Path) -> bool {
    signals
        .iter()
        .any(|s| matches!(s, Signal::Closed(v) if v.iter().any(|p| p == path)))
}

fn named(signals: &[Signal], path: &Path) -> bool {
    signals.iter().any(|s| match s {
        Signal::Paths(v) | Signal::Written(v) | Signal::Closed(v) => v.iter().any(|p| p == path),
        Signal::Rescan(_) => false,
    })
}

fn site() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("www");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/a.html"), "a").unwrap();
    (tmp, root)
}

#[test]
fn files_read_are_no_events_and_files_written_are() {
    let (_tmp, root) = site();
    let w = Watcher::start(&root).unwrap();
    // As the web server serves a page and the agent hashes it: opened, read, closed.
    for _ in 0..200 {
        assert_eq!(std::fs::read(root.join("docs/a.html")).unwrap(), b"a");
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(w.events_read(), 0, "reading made events");
    assert!(w.signals().try_recv().is_err());
    // The twin: written, it is an event and a signal naming it.
    std::fs::write(root.join("docs/a.html"), "b").unwrap();
    let got = until(&w, |s| closed(s, &root.join("docs/a.html")));
    assert!(closed(&got, &root.join("docs/a.html")), "{got:?}");
    assert!(w.events_read() > 0);
}

#[test]
fn a_directory_made_after_the_start_is_watched_before_it_is_named() {
    let (_tmp, root) = site();
    let w = Watcher::start(&root).unwrap();
    std::fs::create_dir_all(root.join("new/deeper")).unwrap();
    let got = until(&w, |s| named(s, &root.join("new")));
    assert!(named(&got, &root.join("new")), "{got:?}");
    let file = root.join("new/deeper/b.html");
    // The inner directory may have been made before the watch of `new` was added: found by
    // the walk that added it, so its files are events too.
    std::fs::write(&file, "b").unwrap();
    let got = until(&w, |s| closed(s, &file));
    assert!(closed(&got, &file), "{got:?}");
}

#[test]
fn a_directory_renamed_is_named_by_its_new_name_and_one_moved_out_is_forgotten() {
    let (tmp, root) = site();
    let w = Watcher::start(&root).unwrap();
    std::fs::rename(root.join("docs"), root.join("papers")).unwrap();
    let got = until(&w, |s| named(s, &root.join("papers")));
    assert!(named(&got, &root.join("docs")) && named(&got, &root.join("papers")));
    std::fs::write(root.join("papers/a.html"), "again").unwrap();
    let got = until(&w, |s| closed(s, &root.join("papers/a.html")));
    assert!(closed(&got, &root.join("papers/a.html")), "{got:?}");
    assert!(!named(&got, &root.join("docs/a.html")), "{got:?}");
    // Moved out of the docroot: what is written there is no business of the agent's.
    std::fs::rename(root.join("papers"), tmp.path().join("away")).unwrap();
    until(&w, |s| named(s, &root.join("papers")));
    std::fs::write(tmp.path().join("away/a.html"), "elsewhere").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let got: Vec<Signal> = w.signals().try_iter().map(|(_, s)| s).collect();
    assert!(got.is_empty(), "{got:?}");
    let tree = w.tree.lock().unwrap();
    assert!(!tree.watches(&root.join("papers")) && !tree.watches(&root.join("docs")));
    assert_eq!(tree.len(), 1, "only the docroot is watched");
}

#[test]
fn a_directory_moved_in_is_watched_and_its_files_are_events() {
    let (tmp, root) = site();
    let outside = tmp.path().join("made-elsewhere");
    std::fs::create_dir_all(outside.join("inner")).unwrap();
    std::fs::write(outside.join("inner/c.html"), "c").unwrap();
    let w = Watcher::start(&root).unwrap();
    std::fs::rename(&outside, root.join("arrived")).unwrap();
    let got = until(&w, |s| named(s, &root.join("arrived")));
    assert!(named(&got, &root.join("arrived")), "{got:?}");
    let file = root.join("arrived/inner/c.html");
    std::fs::write(&file, "changed").unwrap();
    let got = until(&w, |s| closed(s, &file));
    assert!(closed(&got, &file), "{got:?}");
}

#[test]
fn a_file_watched_itself_is_named_when_written_through_another_link() {
    let (tmp, root) = site();
    let elsewhere = tmp.path().join("link.html");
    std::fs::hard_link(root.join("docs/a.html"), &elsewhere).unwrap();
    let mut w = Watcher::start(&root).unwrap();
    w.watch_file(&root.join("docs/a.html")).unwrap();
    std::fs::write(&elsewhere, "through the other link").unwrap();
    let got = until(&w, |s| closed(s, &root.join("docs/a.html")));
    assert!(closed(&got, &root.join("docs/a.html")), "{got:?}");
    assert!(w.watch_file(&root.join("nothing-here")).is_err());
}

use super::*;
use chrono::TimeZone;

#[test]
fn every_commit_is_durable_so_no_sequence_number_is_issued_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let (mode, sync): (String, i64) = store
        .conn
        .query_row(
            "SELECT * FROM pragma_journal_mode, pragma_synchronous",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // WAL with synchronous = FULL (2): the log is synced at each commit.
    assert_eq!((mode.as_str(), sync), ("wal", 2));
}

fn t(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
}

fn entry(content: &[u8], at: DateTime<Utc>) -> FileEntry {
    FileEntry {
        size: content.len() as u64,
        mtime_ns: 1,
        ctime_ns: 2,
        sha256: Sha256Digest::of(content),
        fast: xxhash_rust::xxh3::xxh3_64(content),
        modified: at,
        seen: false,
    }
}

fn version(path: &str, content: &[u8]) -> NewVersion {
    NewVersion::of(path, Sha256Digest::of(content), content)
}

fn change(kind: ChangeKind, path: &str, at: DateTime<Utc>) -> LoggedChange {
    LoggedChange {
        seq: 0,
        kind,
        path: path.into(),
        time: at,
        sha256: None,
        prev_sha256: None,
        size: None,
        content_type: None,
        changed: None,
    }
}

const KEEP: Retention = Retention {
    versions_per_file: 2,
    versions_budget: 1 << 30,
    changes: 1000,
};

#[test]
fn inventory_changes_and_history_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let batch = Batch {
        upserts: vec![
            ("a.html".into(), entry(b"v1", t(0)), Some(t(0))),
            ("b.css".into(), entry(b"x", t(0)), None),
        ],
        changes: vec![change(ChangeKind::Created, "a.html", t(0))],
        ..Batch::default()
    };
    let saved = store.commit(batch, t(0), &KEEP).unwrap();
    assert_eq!(saved.changes[0].seq, 1);
    let batch = Batch {
        upserts: vec![("a.html".into(), entry(b"v2", t(5)), Some(t(5)))],
        deletions: vec!["b.css".into()],
        changes: vec![
            change(ChangeKind::Modified, "a.html", t(5)),
            change(ChangeKind::Deleted, "b.css", t(5)),
        ],
        ..Batch::default()
    };
    store.commit(batch, t(5), &KEEP).unwrap();
    drop(store);

    let store = Store::open(dir.path()).unwrap();
    let inv = store.load_inventory().unwrap();
    assert_eq!(inv.len(), 1);
    assert_eq!(inv.get("a.html").unwrap(), &entry(b"v2", t(5)));
    assert_eq!(store.file_facts("a.html").unwrap(), Some((t(0), 1)));
    assert_eq!(store.head_seq().unwrap(), 3);
    assert_eq!(store.history("a.html").unwrap(), [t(0), t(5)]);
    let since = store.changes_since(1, 10).unwrap();
    assert_eq!(
        since.iter().map(|c| (c.seq, c.kind)).collect::<Vec<_>>(),
        [(2, ChangeKind::Modified), (3, ChangeKind::Deleted)]
    );
    assert_eq!(store.recent_changes(1).unwrap()[0].seq, 3);
}

#[test]
fn versions_are_kept_per_file_and_within_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    for i in 0..4i64 {
        let content = format!("version {i} {}", "lorem ipsum ".repeat(50)).into_bytes();
        let batch = Batch {
            versions: vec![version("p.html", &content)],
            ..Batch::default()
        };
        store.commit(batch, t(i), &KEEP).unwrap();
    }
    let kept = store.versions_of("p.html").unwrap();
    assert_eq!(kept.len(), 2, "two versions per file");
    let newest = format!("version 3 {}", "lorem ipsum ".repeat(50)).into_bytes();
    assert_eq!(kept[0], Sha256Digest::of(&newest));
    assert_eq!(store.version("p.html", &kept[0]).unwrap().unwrap(), newest);
    assert!(store.versions_bytes() > 0);

    // A budget smaller than what is kept evicts the oldest first.
    let other = b"another file's only version, stored last".to_vec();
    // Room for the new version only if one old version goes.
    let added = zstd::bulk::compress(&other, 3).unwrap().len() as u64;
    let tight = Retention {
        versions_budget: store.versions_bytes() + added - 1,
        ..KEEP
    };
    store
        .commit(
            Batch {
                versions: vec![version("q.html", &other)],
                ..Batch::default()
            },
            t(10),
            &tight,
        )
        .unwrap();
    assert!(store.versions_bytes() <= tight.versions_budget);
    assert_eq!(
        store.versions_of("q.html").unwrap().len(),
        1,
        "the newest survives"
    );
    assert_eq!(
        store.versions_of("p.html").unwrap().len(),
        1,
        "the oldest went"
    );
    drop(store);
    let reopened = Store::open(dir.path()).unwrap();
    assert!(reopened.versions_bytes() <= tight.versions_budget);
}

#[test]
fn the_change_log_is_pruned_but_sequence_numbers_never_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let keep3 = Retention { changes: 3, ..KEEP };
    for i in 0..10 {
        let batch = Batch {
            changes: vec![change(ChangeKind::Modified, "x", t(i))],
            ..Batch::default()
        };
        store.commit(batch, t(i), &keep3).unwrap();
    }
    assert_eq!(store.head_seq().unwrap(), 10);
    assert_eq!(store.oldest_seq().unwrap(), Some(8));
    assert_eq!(store.changes_since(0, 100).unwrap().len(), 3);
}

#[test]
fn reads_saved_are_read_back_and_only_what_changed_is_written() {
    use super::{PageReads, Unsaved};
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let reads = |v: f64| PageReads {
        visitors: v,
        at: 1000,
        readers: v as u64 + 1,
    };
    let first = Unsaved {
        pages: vec![("a.html".into(), reads(3.0)), ("b.html".into(), reads(1.0))],
        forgotten: vec![],
        pairs: vec![1, 2, 3, u64::MAX],
        fresh_day: true,
    };
    let positions = [("access_log:/var/log/a".to_string(), "7:120".to_string())];
    store
        .save_reads(&first, (20_000, [5, 6]), &positions)
        .unwrap();
    // The next save: a counted anew, b forgotten, one more pair; the day unchanged.
    let second = Unsaved {
        pages: vec![("a.html".into(), reads(4.0))],
        forgotten: vec!["b.html".into()],
        pairs: vec![4],
        fresh_day: false,
    };
    store
        .save_reads(&second, (20_000, [5, 6]), &positions)
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let (pages, day) = store.load_reads().unwrap();
    assert_eq!(pages.len(), 1);
    assert_eq!(pages["a.html"], reads(4.0));
    let (d, key, pairs) = day.unwrap();
    assert_eq!((d, key), (20_000, [5, 6]));
    assert_eq!(pairs, [1, 2, 3, 4, u64::MAX].into_iter().collect());
    assert_eq!(
        store.meta("access_log:/var/log/a").unwrap().as_deref(),
        Some("7:120")
    );
    // A new day: its pairs alone are kept.
    let mut store = store;
    let third = Unsaved {
        pages: vec![],
        forgotten: vec![],
        pairs: vec![9],
        fresh_day: true,
    };
    store
        .save_reads(&third, (20_001, [7, 8]), &positions)
        .unwrap();
    let (_, day) = store.load_reads().unwrap();
    assert_eq!(day.unwrap().2, [9].into_iter().collect());
}

#[test]
fn frozen_files_keep_the_commit_they_were_taken_at_while_the_store_commits_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let first = Batch {
        upserts: vec![
            ("b.html".into(), entry(b"b1", t(1)), Some(t(1))),
            ("a.html".into(), entry(b"a1", t(0)), Some(t(0))),
        ],
        changes: vec![
            change(ChangeKind::Created, "b.html", t(1)),
            change(ChangeKind::Created, "a.html", t(0)),
        ],
        ..Batch::default()
    };
    store.commit(first, t(1), &KEEP).unwrap();
    let frozen = store.freeze_files().unwrap();
    // Committed after: a changed, b deleted, c added.
    let next = Batch {
        upserts: vec![
            ("a.html".into(), entry(b"a2", t(5)), Some(t(5))),
            ("c.html".into(), entry(b"c1", t(5)), Some(t(5))),
        ],
        deletions: vec!["b.html".into()],
        changes: vec![
            change(ChangeKind::Modified, "a.html", t(5)),
            change(ChangeKind::Created, "c.html", t(5)),
            change(ChangeKind::Deleted, "b.html", t(5)),
        ],
        ..Batch::default()
    };
    store.commit(next, t(5), &KEEP).unwrap();
    let read = |f: &FrozenFiles| {
        let mut files = Vec::new();
        f.for_each(|p, sha, size, modified| {
            files.push((p.to_string(), *sha, size, modified));
            Ok(true)
        })
        .unwrap();
        files
    };
    assert_eq!((frozen.sequence(), frozen.len()), (2, 2));
    assert_eq!(
        read(&frozen),
        [
            ("a.html".into(), Sha256Digest::of(b"a1"), 2, t(0)),
            ("b.html".into(), Sha256Digest::of(b"b1"), 2, t(1)),
        ],
        "in path order, as they were"
    );
    // The twin: taken now, the files are as committed last.
    let now = store.freeze_files().unwrap();
    assert_eq!((now.sequence(), now.len()), (5, 2));
    let names: Vec<String> = read(&now).into_iter().map(|f| f.0).collect();
    assert_eq!(names, ["a.html", "c.html"]);
    // Told to stop, it stops.
    let mut seen = 0;
    now.for_each(|_, _, _, _| {
        seen += 1;
        Ok(false)
    })
    .unwrap();
    assert_eq!(seen, 1);
}

#[test]
fn paged_reads_keep_their_plans_whatever_page_is_asked() {
    use webcoop_daemon::sqlite_plans::times_prepared_again;
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    for i in 0..10 {
        let batch = Batch {
            changes: vec![change(ChangeKind::Modified, "x", t(i))],
            ..Batch::default()
        };
        store.commit(batch, t(i), &KEEP).unwrap();
    }
    let reader = Store::open_read_only(dir.path()).unwrap();
    for s in [&store, &reader] {
        for (since, limit) in [(0, 1), (3, 2), (1, 5), (7, 3), (2, 4), (0, 6)] {
            let page = s.changes_since(since, limit).unwrap();
            assert_eq!(page.len(), limit.min(10 - since as usize));
            assert_eq!(page[0].seq, since + 1);
            s.due_for_judging(limit, Some((since as i64, "x"))).unwrap();
        }
        for sql in [log::CHANGES_SINCE, judging::DUE_FOR_JUDGING] {
            assert_eq!(times_prepared_again(&s.conn, sql).unwrap(), 0, "{sql}");
        }
    }
}

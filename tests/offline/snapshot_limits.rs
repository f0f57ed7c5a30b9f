//! A snapshot a crawler's defaults can read (issue 45): a file larger than the snapshot's
//! documented record limit is left out of it and listed for a plain fetch, and robots.rdf
//! states the largest record the snapshot holds.

use std::process::Command;
use webcoop_protocol::warc::zstd_file::ZstdWarcReader;
use webcoop_testkit as testkit;

#[test]
fn a_file_above_the_record_limit_is_listed_for_a_plain_fetch_not_put_in_the_snapshot() {
    let agent_bin = testkit::workspace_bin("webcoop-agent");
    let site = tempfile::tempdir().unwrap();
    let small: Vec<(String, Vec<u8>)> = (0..5)
        .map(|i| {
            (
                format!("p{i}.html"),
                format!("<p>{}</p>", "x".repeat(100 * (i + 1))).into_bytes(),
            )
        })
        .collect();
    for (name, body) in &small {
        std::fs::write(site.path().join(name), body).unwrap();
    }
    let limit = webcoop_protocol::snapshot::MAX_RECORD;
    let big = vec![b'b'; limit as usize + 1];
    std::fs::write(site.path().join("big.html"), &big).unwrap();
    let state = tempfile::tempdir().unwrap();
    let server = testkit::static_site::StaticServer::serve(site.path());
    let o = Command::new(&agent_bin)
        .arg("--docroot")
        .arg(site.path())
        .args(["--server-url", &server.url()])
        .args(["--base-url", "http://www.example.test/", "--state"])
        .arg(state.path())
        .arg("snapshot")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let out = site.path();
    let robots = std::fs::read(out.join("robots.rdf")).unwrap();
    let doc = webcoop_protocol::robots_rdf::parse(&robots, &Default::default()).unwrap();
    // Listed for a plain fetch.
    assert!(
        doc.items.iter().any(|i| i.url.path() == "/big.html"),
        "big.html is listed"
    );
    // Not in the snapshot; every other file is, and the largest record is stated.
    let dir = out.join(".well-known/webcoop/snapshot");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".warc.zst"))
        .expect("a snapshot");
    let mut reader = ZstdWarcReader::new(std::fs::File::open(&file).unwrap(), 1 << 30).unwrap();
    let mut targets = Vec::new();
    while let Some(located) = reader.next_record().unwrap() {
        if let Some(uri) = located.record.field("WARC-Target-URI") {
            targets.push(uri.to_string());
        }
    }
    assert!(
        !targets.iter().any(|t| t.ends_with("/big.html")),
        "{targets:?}"
    );
    for (name, _) in &small {
        assert!(
            targets.iter().any(|t| t.ends_with(name)),
            "{name}: {targets:?}"
        );
    }
    let largest = small.iter().map(|(_, b)| b.len() as u64).max().unwrap();
    assert_eq!(
        doc.channel.snapshot_max_record,
        Some(largest),
        "{}",
        String::from_utf8_lossy(&robots)
    );
    assert!(doc.channel.snapshot.is_some());
}

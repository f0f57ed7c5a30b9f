//! After each kind of edit, feedparser (a reader nobody here wrote) sees in robots.rdf and the
//! changes feed exactly what the protocol crate sees, and what happened.

use chrono::{TimeZone, Utc};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use webcoop_agent::Agent;
use webcoop_agent::{AgentOptions, Config};
use webcoop_protocol::changes_feed::{self, FeedLimits};
use webcoop_protocol::clock::ManualClock;
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_testkit::{reference_python, run_reference};

const BASE: &str = "https://site.example/";

fn check(
    python: &Path,
    www: &Path,
    step: &str,
    expect_listed: &[&str],
    expect_last_change: Option<(&str, &str)>,
) {
    let rdf_path = www.join("robots.rdf");
    let ours =
        robots_rdf::parse(&std::fs::read(&rdf_path).unwrap(), &RdfLimits::default()).unwrap();
    let seen: Value = serde_json::from_str(&run_reference(
        python,
        "feed_check.py",
        &[rdf_path.as_os_str()],
    ))
    .unwrap();
    assert_eq!(seen["bozo"], false, "{step}: {}", seen["bozo_exception"]);
    let theirs: BTreeSet<(String, String)> = seen["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["link"].as_str().unwrap().to_string(),
                e["updated"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let ours_set: BTreeSet<(String, String)> = ours
        .items
        .iter()
        .map(|i| {
            (
                i.url.to_string(),
                i.modified.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            )
        })
        .collect();
    assert_eq!(
        theirs, ours_set,
        "{step}: feedparser and the protocol crate disagree on robots.rdf"
    );
    let listed: BTreeSet<String> = ours.items.iter().map(|i| i.url.to_string()).collect();
    let expected: BTreeSet<String> = expect_listed.iter().map(|p| format!("{BASE}{p}")).collect();
    assert_eq!(listed, expected, "{step}: listing");

    let feed_path = www.join(".well-known/webcoop/changes.atom");
    let feed =
        changes_feed::parse(&std::fs::read(&feed_path).unwrap(), &FeedLimits::default()).unwrap();
    let seen: Value = serde_json::from_str(&run_reference(
        python,
        "feed_check.py",
        &[feed_path.as_os_str()],
    ))
    .unwrap();
    assert_eq!(seen["bozo"], false, "{step}: {}", seen["bozo_exception"]);
    let entries = seen["entries"].as_array().unwrap();
    assert_eq!(entries.len(), feed.entries.len(), "{step}");
    for (theirs, ours) in entries.iter().zip(&feed.entries) {
        assert_eq!(theirs["link"], ours.url.as_str(), "{step}");
        assert_eq!(theirs["terms"][0], ours.kind.as_str(), "{step}");
        assert_eq!(
            theirs["updated"],
            ours.time.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "{step}"
        );
    }
    match expect_last_change {
        Some((kind, path)) => {
            let last = feed.entries.last().unwrap();
            assert_eq!(
                (last.kind.as_str(), last.url.as_str()),
                (kind, format!("{BASE}{path}").as_str()),
                "{step}"
            );
        }
        None => assert!(feed.entries.is_empty(), "{step}"),
    }
}

#[test]
fn feedparser_sees_every_kind_of_edit() {
    let Some(python) = reference_python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let www = www.canonicalize().unwrap();
    std::fs::write(www.join("index.html"), "home").unwrap();
    let clock = Arc::new(ManualClock::new(
        Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
    ));
    let server = webcoop_testkit::static_site::StaticServer::serve(&www);
    let cli = AgentOptions {
        docroot: Some(www.clone()),
        base_url: Some(BASE.into()),
        state: Some(tmp.path().join("state")),
        debounce_ms: Some(0),
        server_url: Some(server.url()),
        ..AgentOptions::default()
    };
    let mut agent = Agent::open(Config::from_options(cli).unwrap(), clock.clone()).unwrap();
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    check(&python, &www, "baseline", &["index.html"], None);

    let mut step =
        |name: &str, paths: &[&str], edit: &dyn Fn(), listed: &[&str], last: (&str, &str)| {
            clock.advance(std::time::Duration::from_secs(60));
            edit();
            agent
                .reconcile_paths(&paths.iter().map(|p| p.to_string()).collect())
                .unwrap();
            agent.publish().unwrap();
            check(&python, &www, name, listed, Some(last));
        };
    step(
        "create",
        &["a.html"],
        &|| std::fs::write(www.join("a.html"), "a").unwrap(),
        &["a.html", "index.html"],
        ("created", "a.html"),
    );
    step(
        "edit",
        &["a.html"],
        &|| std::fs::write(www.join("a.html"), "a, edited").unwrap(),
        &["a.html", "index.html"],
        ("modified", "a.html"),
    );
    step(
        "rename",
        &["a.html", "b.html"],
        &|| std::fs::rename(www.join("a.html"), www.join("b.html")).unwrap(),
        &["b.html", "index.html"],
        ("created", "b.html"),
    );
    step(
        "touch without change",
        &["index.html"],
        &|| {
            std::fs::File::options()
                .write(true)
                .open(www.join("index.html"))
                .unwrap()
                .set_modified(std::time::SystemTime::now())
                .unwrap()
        },
        &["b.html", "index.html"],
        ("created", "b.html"),
    );
    step(
        "delete",
        &["b.html"],
        &|| std::fs::remove_file(www.join("b.html")).unwrap(),
        &["index.html"],
        ("deleted", "b.html"),
    );
}

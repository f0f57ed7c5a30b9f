//! `check` and the agent share one verdict: for docroots and nginx configurations drawn at
//! random from the classes of `stranger_nginx` (grants to loopback or to other networks,
//! passwords, refusals, client headers, `satisfy any`, address rules inherited or overridden),
//! the files `check --files` reports as published are exactly those the agent publishes.

use super::stranger_support::{Who, docroot, once, plant};
use super::support::agent_bin;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use webcoop::servers::{Nginx, is_root};
use webcoop_testkit::{skip, tool};

/// What a location of the drawn configuration does.
const RULES: &[&str] = &[
    "",
    "allow 127.0.0.1; deny all;",
    "allow 10.0.0.0/8; deny all;",
    "auth_basic staff; auth_basic_user_file /dev/null;",
    "return 403;",
    "if ($http_user_agent ~ bot) { return 403; }",
    "satisfy any; allow 127.0.0.0/8; deny all; auth_basic staff; auth_basic_user_file /dev/null;",
    "deny all;",
    "deny 192.0.2.0/24; allow all;",
    "location ~ \\.txt$ { allow ::1; deny all; }",
];

const DIRS: &[&str] = &["", "a", "b", "c/d"];
const NAMES: &[&str] = &["index.html", "x.html", "y.css", "z.txt"];

/// One drawn site: which files each directory has, the rule of each directory's location,
/// and whether the server block locks everything down for loopback.
#[derive(Debug, Clone)]
struct Drawn {
    files: Vec<(usize, usize)>,
    rules: Vec<usize>,
    lockdown: bool,
}

fn drawn() -> impl Strategy<Value = Drawn> {
    (
        proptest::collection::btree_set((0..DIRS.len(), 0..NAMES.len()), 3..12),
        proptest::collection::vec(0..RULES.len(), DIRS.len()),
        proptest::bool::weighted(0.25),
    )
        .prop_map(|(files, rules, lockdown)| Drawn {
            files: files.into_iter().collect(),
            rules,
            lockdown,
        })
}

fn server(d: &Drawn, www: &Path, port: u16) -> String {
    let mut s = format!(
        "server {{\n  listen 127.0.0.1:{port};\n  root {};\n",
        www.display()
    );
    if d.lockdown {
        s.push_str("  allow 127.0.0.1;\n  deny all;\n  location = /index.html { allow all; }\n");
    }
    for (i, dir) in DIRS.iter().enumerate().skip(1) {
        s.push_str(&format!("  location /{dir}/ {{ {} }}\n", RULES[d.rules[i]]));
    }
    s.push_str("}\n");
    s
}

fn published_by_check(www: &Path, base: &str) -> BTreeSet<String> {
    let state = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(agent_bin())
        .arg("--docroot")
        .arg(www)
        .arg("--state")
        .arg(state.path())
        .args(["--base-url", base, "check", "--files"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("published "))
        .map(str::to_string)
        .collect()
}

#[test]
fn check_reports_as_published_exactly_what_the_agent_publishes() {
    if !is_root() {
        return skip("nginx as www-data needs root");
    }
    let Some(bin) = tool("nginx") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let first = docroot(tmp.path());
    let empty = Drawn {
        files: vec![],
        rules: vec![0; DIRS.len()],
        lockdown: false,
    };
    let nginx = Nginx::start_custom(
        &bin,
        &first,
        &|port| server(&empty, &first, port),
        &|port| SocketAddr::from(([127, 0, 0, 1], port)),
    );
    let base = nginx.url();
    let mut runner = TestRunner::new(Config {
        cases: 16,
        failure_persistence: None,
        ..Config::default()
    });
    let seen_hidden = std::cell::Cell::new(0);
    let seen_refused = std::cell::Cell::new(0);
    runner
        .run(&drawn(), |d| {
            let case = tempfile::tempdir().unwrap();
            let www = docroot(case.path());
            let files: Vec<(String, &str)> = d
                .files
                .iter()
                .map(|(dir, name)| {
                    let rel = if DIRS[*dir].is_empty() {
                        NAMES[*name].to_string()
                    } else {
                        format!("{}/{}", DIRS[*dir], NAMES[*name])
                    };
                    (rel, "a page")
                })
                .collect();
            let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
            plant(&www, &refs);
            nginx.reload_custom(&server(&d, &www, nginx.addr.port()));
            let agent = once(&www, &base, &[], Who::Root);
            prop_assert!(agent.ok, "{}", agent.log);
            let by_agent: BTreeSet<String> = agent.listed.iter().cloned().collect();
            let by_check = published_by_check(&www, &base);
            if agent
                .log
                .contains("the judge cannot see what others get there")
            {
                seen_hidden.set(seen_hidden.get() + 1);
            }
            if agent.log.contains("not published, the server answers") {
                seen_refused.set(seen_refused.get() + 1);
            }
            prop_assert_eq!(by_check, by_agent, "{:?}\n{}", d, agent.log);
            Ok(())
        })
        .unwrap();
    // The draws exercised both the reader and the judge.
    let (h, r) = (seen_hidden.get(), seen_refused.get());
    assert!(h > 0 && r > 0, "{h} {r}");
}

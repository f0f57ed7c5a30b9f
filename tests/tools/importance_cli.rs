//! The importance and refresh tools from the command line: `rank` against NetworkX, and
//! `opic-sim`, `order-sim`, `refresh-sim` as a user runs them.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use webcoop_crawler::tools::power_law_graph;
use webcoop_testkit::{reference_python, run_ok, run_reference, workspace_bin};

fn crawl_bin() -> std::path::PathBuf {
    workspace_bin("webcoop-crawl")
}

/// A power-law graph with a few dangling pages, a self-link and a duplicate arc.
fn write_graph(path: &Path, n: usize) {
    let g = power_law_graph(n, 2.1, 17);
    let mut text = String::from("# generated\n");
    for i in 0..g.len() {
        for j in g.children(i) {
            text.push_str(&format!("{i}\t{j}\n"));
        }
    }
    text.push_str("5\t5\n3\t4\n3\t4\n");
    std::fs::write(path, text).unwrap();
}

fn scores(text: &str) -> HashMap<String, f64> {
    text.lines()
        .map(|l| {
            let (node, score) = l.split_once('\t').unwrap();
            (node.to_string(), score.parse().unwrap())
        })
        .collect()
}

#[test]
fn rank_matches_networkx_to_1e9() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let arcs = dir.path().join("graph.arcs");
    write_graph(&arcs, 400);
    for alpha in ["0.85", "0.5"] {
        let out = run_ok(Command::new(crawl_bin()).args([
            "rank",
            "--arcs",
            arcs.to_str().unwrap(),
            "--alpha",
            alpha,
        ]));
        let ours = scores(&String::from_utf8_lossy(&out.stdout));
        let theirs = scores(&run_reference(
            &python,
            "pagerank_check.py",
            &[arcs.as_os_str(), alpha.as_ref()],
        ));
        assert_eq!(ours.len(), theirs.len());
        let total: f64 = ours.values().sum();
        assert!((total - 1.0).abs() < 1e-12, "{total}");
        for (node, v) in &theirs {
            let w = ours[node];
            assert!((v - w).abs() < 1e-9, "node {node}: networkx {v}, ours {w}");
        }
    }
}

#[test]
fn simulations_run_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let arcs = dir.path().join("graph.arcs");
    write_graph(&arcs, 1000);
    let arcs = arcs.to_str().unwrap();
    let out = run_ok(Command::new(crawl_bin()).args([
        "opic-sim", "--arcs", arcs, "--policy", "greedy", "--steps", "5000",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows[0], "policy\tsteps\tpasses\tG\terr_all_%\terr_top10_%");
    assert_eq!(rows.len(), 6, "a row per pass: {text}");
    let err = |row: &str| -> f64 { row.split('\t').nth(4).unwrap().parse().unwrap() };
    assert!(err(rows[5]) < err(rows[1]), "the error falls: {text}");

    let out = run_ok(Command::new(crawl_bin()).args([
        "order-sim",
        "--arcs",
        arcs,
        "--strategy",
        "bfs,opic,random",
        "--site-span",
        "20",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.lines().nth(2).unwrap().starts_with("Opic\t"), "{text}");

    let out = run_ok(Command::new(crawl_bin()).args([
        "refresh-sim",
        "--pages",
        "200",
        "--budget",
        "20",
        "--days",
        "40",
        "--warmup",
        "10",
        "--policy",
        "uniform,optimal",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(
        names,
        ["uniform", "optimal", "omniscient-optimal"],
        "{text}"
    );
}

#[test]
fn bad_input_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let arcs = dir.path().join("bad.arcs");
    std::fs::write(&arcs, "0\t1\n1 2 3\n").unwrap();
    let out = Command::new(crawl_bin())
        .args(["rank", "--arcs", arcs.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.arcs:2: expected"), "{err}");
    let out = Command::new(crawl_bin())
        .args(["rank", "--arcs", "/nonexistent/arcs.gz"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/arcs.gz"));
    let out = Command::new(crawl_bin())
        .args(["refresh-sim", "--days", "5", "--warmup", "10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

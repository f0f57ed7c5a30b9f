//! Every fuzz seed and every crash the fuzzers found, replayed on stable through the same
//! target functions cargo-fuzz runs (`fuzz/targets.rs`): a parser that regresses on an input
//! the fuzzers once reached fails here, on every machine, nightly or not. The grown corpus
//! (fuzz/README.md) is replayed too when `WEBCOOP_FUZZ_CORPUS` names it.

#[path = "../../fuzz/targets.rs"]
mod targets;

use std::path::Path;

fn inputs(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_every_kept_crash_runs_clean() {
    let root = webcoop_testkit::workspace_root().join("fuzz");
    let grown = std::env::var_os("WEBCOOP_FUZZ_CORPUS").map(std::path::PathBuf::from);
    let mut total = 0;
    for (name, target) in targets::TARGETS {
        let seeds = inputs(&root.join("seeds").join(name));
        assert!(!seeds.is_empty(), "fuzz/seeds/{name} has no seed");
        let mut all = seeds;
        all.extend(inputs(&root.join("regressions").join(name)));
        if let Some(dir) = &grown {
            all.extend(inputs(&dir.join(name)));
        }
        for path in &all {
            let data = std::fs::read(path).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} panics", path.display());
            total += 1;
        }
    }
    eprintln!("replayed {total} inputs");
}

//! Every fuzz corpus and every crash the fuzzers found, replayed on stable through the same
//! target functions cargo-fuzz runs (`fuzz/targets.rs`): a parser that regresses on an input
//! the fuzzers once reached fails here, on every machine, nightly or not.

#[path = "../fuzz/targets.rs"]
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
fn every_corpus_input_and_every_kept_crash_runs_clean() {
    let root = webcoop_testkit::workspace_root().join("fuzz");
    let mut total = 0;
    for (name, target) in targets::TARGETS {
        let corpus = inputs(&root.join("corpus").join(name));
        assert!(!corpus.is_empty(), "fuzz/corpus/{name} has no seed");
        for path in corpus
            .iter()
            .chain(inputs(&root.join("regressions").join(name)).iter())
        {
            let data = std::fs::read(path).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "{name}: {} panics", path.display());
            total += 1;
        }
    }
    eprintln!("replayed {total} inputs");
}

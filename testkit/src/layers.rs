//! The layers of a crate, checked: docs/ARCHITECTURE.md states, for each crate, which of its
//! top-level modules sit above which (a fenced block ```` ```layers CRATE ````, one level a
//! line, the top first), and a module may name (`crate::other`) only modules of lower levels.
//! The crates' unit tests read their own sources against that table, so the documented
//! layering is the code's, and an import that goes up or sideways fails a test.

use std::collections::BTreeSet;
use std::path::Path;

/// One module naming another, and where.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// The module that names the other.
    pub from: String,
    /// The module named.
    pub to: String,
    /// The file, relative to the crate's `src/`.
    pub file: String,
}

/// The levels of the table named `name` in `markdown`, top first.
pub fn table(markdown: &str, name: &str) -> Result<Vec<Vec<String>>, String> {
    let fence = format!("```layers {name}");
    let start = markdown
        .lines()
        .position(|l| l.trim() == fence)
        .ok_or_else(|| format!("no {fence} block"))?;
    let levels: Vec<Vec<String>> = markdown
        .lines()
        .skip(start + 1)
        .take_while(|l| !l.trim_start().starts_with("```"))
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    if levels.is_empty() {
        return Err(format!("the {fence} block is empty"));
    }
    Ok(levels)
}

/// Every `crate::module` named by the code (not comments, not test modules: what follows
/// `#[cfg(test)]` in a file, and files called `tests.rs`) of each top-level module of `src`.
pub fn edges(src: &Path) -> Vec<Edge> {
    let mut out = BTreeSet::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Some(rel) = path
                .strip_prefix(src)
                .ok()
                .and_then(|r| r.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            if !rel.ends_with(".rs") || rel.ends_with("/tests.rs") {
                continue;
            }
            let module = rel
                .split('/')
                .next()
                .unwrap_or_default()
                .trim_end_matches(".rs")
                .to_string();
            if module == "lib" || module == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for line in code.lines() {
                let line = line.split("//").next().unwrap_or_default();
                let mut rest = line;
                while let Some(i) = rest.find("crate::") {
                    let after = &rest[i + "crate::".len()..];
                    let name: String = after
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && name != module {
                        out.insert(Edge {
                            from: module.clone(),
                            to: name,
                            file: rel.clone(),
                        });
                    }
                    rest = after;
                }
            }
        }
    }
    out.into_iter().collect()
}

/// What goes against the table: a module the table does not place, and every edge to a
/// module of the same or a higher level.
pub fn violations(levels: &[Vec<String>], edges: &[Edge]) -> Vec<String> {
    let level = |m: &str| levels.iter().position(|l| l.iter().any(|x| x == m));
    let mut out = Vec::new();
    for e in edges {
        match (level(&e.from), level(&e.to)) {
            (None, _) => out.push(format!("{} ({}) is not in the table", e.from, e.file)),
            (_, None) => out.push(format!(
                "{} ({}) names {}, which is not in the table",
                e.from, e.file, e.to
            )),
            (Some(f), Some(t)) if t <= f => out.push(format!(
                "{} names {} in {}: {} is not below it",
                e.from, e.to, e.file, e.to
            )),
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Fails with every violation of the crate at `crate_dir` against its table `name` in the
/// workspace's docs/ARCHITECTURE.md.
pub fn assert_layers(crate_dir: &Path, name: &str) {
    let doc = crate::workspace_root().join("docs/ARCHITECTURE.md");
    let markdown =
        std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let levels = table(&markdown, name).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let found = violations(&levels, &edges(&crate_dir.join("src")));
    assert!(
        found.is_empty(),
        "imports against the layers of docs/ARCHITECTURE.md:\n{}",
        found.join("\n")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upward_or_sideways_import_is_found_and_a_downward_one_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path();
        std::fs::create_dir_all(src.join("engine")).unwrap();
        std::fs::write(
            src.join("lib.rs"),
            "pub mod engine; pub mod state; pub mod ids;",
        )
        .unwrap();
        std::fs::write(src.join("engine/mod.rs"), "use crate::state::Store;\n").unwrap();
        std::fs::write(
            src.join("state.rs"),
            "use crate::ids::Id;\n// crate::engine in a comment is no import\n\
             #[cfg(test)]\nmod tests { use crate::engine::X; }\n",
        )
        .unwrap();
        std::fs::write(src.join("ids.rs"), "pub struct Id;\n").unwrap();
        let md = "text\n```layers demo\nengine\nstate\nids\n```\n";
        let levels = table(md, "demo").unwrap();
        assert!(violations(&levels, &edges(src)).is_empty());
        // Planted: the state names the engine above it.
        std::fs::write(
            src.join("state.rs"),
            "use crate::ids::Id;\nfn f() { crate::engine::run(); }\n",
        )
        .unwrap();
        let found = violations(&levels, &edges(src));
        assert_eq!(
            found,
            ["state names engine in state.rs: engine is not below it"]
        );
        // A module the table does not place.
        std::fs::write(src.join("extra.rs"), "use crate::ids::Id;\n").unwrap();
        assert!(
            violations(&levels, &edges(src))
                .iter()
                .any(|v| v.starts_with("extra (extra.rs) is not in the table"))
        );
        assert!(table(md, "other").is_err());
    }
}

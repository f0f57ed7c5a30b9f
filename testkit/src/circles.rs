//! Import circles between the files of a crate: file A names an item of file B (a `use`, or a
//! `crate::`, `super::` or `self::` path in code) while B, directly or through others, names
//! one of A's. A circle means neither file can be read, tested or changed without the other;
//! the crates' unit tests assert there are none. A parent module's file naming its own
//! children does not count (it declares them); a child naming its parent does. Test code (after `#[cfg(test)]`, and files
//! called `tests.rs`) and comments are not read. A `mod.rs` that re-exports a child's items
//! (`pub use child::Item`) is a facade, not an importer: a path through it leads to the child
//! that defines the item.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// The module path of a file relative to `src/` (`coop/state.rs` -> `coop::state`,
/// `coop/mod.rs` -> `coop`, `lib.rs` -> the crate root, an empty path).
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a file that counts: no comments, no strings, nothing after `#[cfg(test)]`.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default();
        // Strings hold no imports: their text is dropped (escaped quotes aside, close enough
        // for paths, which never stand in strings here).
        let mut in_str = false;
        for c in line.chars() {
            if c == '"' {
                in_str = !in_str;
                out.push(' ');
            } else if !in_str {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// The paths a piece of code names from `at`: every `use` tree expanded, every `crate::`,
/// `super::` and `self::` path, absolute (segments from the crate root). Paths of a `use`
/// whose first segment is a child module of `at` count too.
fn paths_named(code: &str, at: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        if !starts_word {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        let use_stmt = rest.starts_with("use ");
        let lead = ["crate::", "super::", "self::"]
            .iter()
            .find(|p| rest.starts_with(**p));
        if use_stmt {
            let end = rest.find(';').unwrap_or(rest.len());
            let tree = rest[4..end].trim();
            let mut flat = Vec::new();
            expand(tree, &mut Vec::new(), &mut flat);
            for p in flat {
                let first = p.first().cloned().unwrap_or_default();
                if matches!(first.as_str(), "crate" | "super" | "self") || children.contains(&first)
                {
                    let p = if children.contains(&first) {
                        std::iter::once("self".to_string()).chain(p).collect()
                    } else {
                        p
                    };
                    if let Some(abs) = absolute(&p, at) {
                        out.push(abs);
                    }
                }
            }
            i += end.max(1);
            continue;
        }
        if lead.is_some() {
            let seg: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let p: Vec<String> = seg
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            if let Some(abs) = absolute(&p, at) {
                out.push(abs);
            }
            i += seg.len().max(1);
            continue;
        }
        i += 1;
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = &tree[..open];
        let close = tree.rfind('}').unwrap_or(tree.len());
        let inner = &tree[open + 1..close.max(open + 1)];
        let pushed: Vec<String> = head
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let n = pushed.len();
        prefix.extend(pushed);
        for part in split_top(inner) {
            expand(part, prefix, out);
        }
        prefix.truncate(prefix.len() - n);
        return;
    }
    let path = tree.split(" as ").next().unwrap_or_default();
    let mut p = prefix.clone();
    p.extend(
        path.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_string),
    );
    if !p.is_empty() {
        out.push(p);
    }
}

/// Splits a `use` group's inside at its top-level commas.
fn split_top(inner: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&inner[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// `p` (starting with `crate`, `super` or `self`) from the module `at`, from the crate root.
fn absolute(p: &[String], at: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = at.to_vec();
    let mut rest = p.iter().peekable();
    match rest.peek().map(|s| s.as_str()) {
        Some("crate") => {
            base.clear();
            rest.next();
        }
        Some("self") => {
            rest.next();
        }
        Some("super") => {
            while rest.peek().map(|s| s.as_str()) == Some("super") {
                base.pop()?;
                rest.next();
            }
        }
        _ => return None,
    }
    base.extend(rest.cloned());
    Some(base)
}

/// The file-level import graph of the crate whose sources are at `src`: file -> files it
/// names, paths relative to `src`.
pub fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: BTreeMap<Vec<String>, (String, String)> = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let Some(rel) = path.strip_prefix(src).ok().and_then(|r| r.to_str()) else {
                continue;
            };
            if !rel.ends_with(".rs") || rel.ends_with("tests.rs") || rel.starts_with("bin/") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            files.insert(module_of(rel), (rel.to_string(), code_of(&text)));
        }
    }
    // A facade's re-exports: (module, item) -> the child module that defines it.
    let mut reexports: HashMap<(Vec<String>, String), Vec<String>> = HashMap::new();
    let children_of = |m: &[String]| -> BTreeSet<String> {
        files
            .keys()
            .filter(|k| k.len() == m.len() + 1 && k.starts_with(m))
            .filter_map(|k| k.last().cloned())
            .collect()
    };
    for (module, (_, code)) in &files {
        let children = children_of(module);
        for line in code.split(';') {
            let line = line.trim();
            let Some(tree) = line
                .strip_prefix("pub use ")
                .or_else(|| line.strip_prefix("pub(crate) use "))
                .or_else(|| line.strip_prefix("pub(super) use "))
            else {
                continue;
            };
            let mut flat = Vec::new();
            expand(tree, &mut Vec::new(), &mut flat);
            for p in flat {
                let first = p.first().cloned().unwrap_or_default();
                let p: Vec<String> = if children.contains(&first) {
                    std::iter::once("self".to_string()).chain(p).collect()
                } else {
                    p
                };
                if let (Some(abs), Some(item)) = (absolute(&p, module), p.last()) {
                    reexports.insert((module.clone(), item.clone()), abs);
                }
            }
        }
    }
    // The file a path leads to: its longest prefix that is a file's module, through facades.
    let resolve = |p: &[String]| -> Option<Vec<String>> {
        let mut p = p.to_vec();
        for _ in 0..8 {
            let n = (0..=p.len()).rev().find(|&n| files.contains_key(&p[..n]))?;
            let module = p[..n].to_vec();
            match p
                .get(n)
                .and_then(|item| reexports.get(&(module.clone(), item.clone())))
            {
                Some(target) if target != &p[..=n] => {
                    let mut next = target.clone();
                    next.extend(p[n + 1..].iter().cloned());
                    p = next;
                }
                _ => return Some(module),
            }
        }
        None
    };
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, (rel, code)) in &files {
        let children = children_of(module);
        // A parent (`mod.rs`, or `x.rs` beside `x/`) declares its children: naming them is
        // its part, not an import that can close a circle.
        let is_facade = !children.is_empty();
        let mut named = BTreeSet::new();
        for p in paths_named(code, module, &children) {
            let Some(target) = resolve(&p) else { continue };
            // A facade naming its own descendants re-exports or declares them.
            if target == *module || (is_facade && target.starts_with(module)) {
                continue;
            }
            if let Some((file, _)) = files.get(&target) {
                named.insert(file.clone());
            }
        }
        out.insert(rel.clone(), named);
    }
    out
}

/// The circles of a graph: each set of two or more files that reach one another (a strongly
/// connected component), sorted.
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iterative over the file names.
    let names: Vec<&String> = graph.keys().collect();
    let index_of: HashMap<&String, usize> =
        names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            graph[*n]
                .iter()
                .filter_map(|t| index_of.get(t).copied())
                .collect()
        })
        .collect();
    let n = names.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut ei)) = work.last_mut() {
            if *ei == 0 && index[v] == usize::MAX {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = edges[v].get(*ei) {
                *ei += 1;
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut scc = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    scc.push(names[w].clone());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    out.push(scc);
                }
            }
        }
    }
    out.sort();
    out
}

/// Fails with every import circle between the files of the crate at `crate_dir`.
pub fn assert_no_circles(crate_dir: &Path) {
    let g = graph(&crate_dir.join("src"));
    let found = circles(&g);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let inside: BTreeSet<&String> = c.iter().collect();
            let arrows: Vec<String> = c
                .iter()
                .flat_map(|f| {
                    g[f].iter()
                        .filter(|t| inside.contains(t))
                        .map(move |t| format!("{f} -> {t}"))
                })
                .collect();
            format!("{{{}}}: {}", c.join(", "), arrows.join("; "))
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} import circle(s) between files:\n{}",
        found.len(),
        shown.join("\n")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_circle_through_siblings_is_found_and_a_facade_re_export_is_not_one() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path();
        write(src, "lib.rs", "mod coop; mod ids;\n");
        write(src, "ids.rs", "pub struct Id;\n");
        write(
            src,
            "coop/mod.rs",
            "mod state; mod claims;\npub(crate) use state::{State, Reach};\n",
        );
        write(
            src,
            "coop/state.rs",
            "use crate::ids::Id;\npub struct State; pub struct Reach;\n",
        );
        // A child naming the facade's re-export reaches the file that defines it.
        write(
            src,
            "coop/claims.rs",
            "use super::{State, Reach};\n// super::claims in a comment\n",
        );
        let g = graph(src);
        assert_eq!(
            g["coop/claims.rs"],
            ["coop/state.rs".to_string()].into_iter().collect()
        );
        assert!(circles(&g).is_empty(), "{g:?}");
        // Planted: the state names the claims, which name the state.
        write(
            src,
            "coop/state.rs",
            "use crate::ids::Id;\npub struct State; pub struct Reach;\nfn f() { super::claims::g(); }\n",
        );
        let found = circles(&graph(src));
        assert_eq!(
            found,
            [vec![
                "coop/claims.rs".to_string(),
                "coop/state.rs".to_string()
            ]]
        );
        // A longer one, through a nested group and `crate::` paths.
        write(
            src,
            "coop/state.rs",
            "pub struct State; pub struct Reach;\nuse crate::{ids::{Id}, coop::claims::G};\n",
        );
        write(
            src,
            "coop/claims.rs",
            "pub struct G;\nuse crate::ids::Id as I;\nfn f() -> crate::coop::state::State { todo!() }\n",
        );
        assert_eq!(circles(&graph(src)).len(), 1);
    }

    #[test]
    fn no_crate_of_the_workspace_has_an_import_circle() {
        let root = crate::workspace_root();
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members = manifest
            .lines()
            .find(|l| l.trim_start().starts_with("members"))
            .expect("the workspace lists its members");
        let mut crates: Vec<std::path::PathBuf> = members
            .split('"')
            .skip(1)
            .step_by(2)
            .map(|m| root.join(m))
            .collect();
        crates.push(root.clone());
        assert!(crates.len() > 3, "{members}");
        for c in crates {
            assert_no_circles(&c);
        }
    }
}

//! nginx's configuration: its syntax (directives ending in `;` or a `{ }` block, `#`
//! comments, quoted arguments), its `include`s spliced in place (from what `nginx -T` printed,
//! or from the file system), and the server blocks it defines.

mod analysis;
mod variables;

pub(crate) use analysis::hidden_places;

use super::includes::{IncludeSource, expand_in_dump, expand_include};
use super::{Vhost, read_rules_file};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Includes followed within includes, at most.
const MAX_INCLUDE_DEPTH: usize = 16;

/// One directive, with its block if it has one, and where it was read.
#[derive(Debug, Clone)]
pub(crate) struct Directive {
    /// Its name.
    pub(crate) name: String,
    /// Its arguments, unquoted.
    pub(crate) args: Vec<String>,
    /// The file it was read from.
    pub(crate) file: Arc<str>,
    /// Its line there.
    pub(crate) line: usize,
    /// Its block, when it has one.
    pub(crate) block: Option<Vec<Directive>>,
    /// For an `include` that could not be read: why.
    pub(crate) broken: Option<String>,
}

impl Directive {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

fn tokens(text: &str) -> Result<Vec<(String, usize)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            '{' | '}' | ';' => out.push((c.to_string(), line)),
            '"' | '\'' => {
                let mut s = String::new();
                let start = line;
                loop {
                    match chars.next() {
                        None => return Err(format!("line {start}: unterminated quoted string")),
                        Some('\\') => {
                            if let Some(n) = chars.next() {
                                s.push(n);
                            }
                        }
                        Some(q) if q == c => break,
                        Some(n) => {
                            if n == '\n' {
                                line += 1;
                            }
                            s.push(n);
                        }
                    }
                }
                out.push((s, start));
            }
            c => {
                let mut s = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || matches!(n, '{' | '}' | ';') {
                        break;
                    }
                    s.push(n);
                    chars.next();
                }
                out.push((s, line));
            }
        }
    }
    Ok(out)
}

fn block(
    tokens: &[(String, usize)],
    pos: &mut usize,
    depth: usize,
    file: &Arc<str>,
) -> Result<Vec<Directive>, String> {
    if depth > 32 {
        return Err("blocks nested too deeply".into());
    }
    let mut out = Vec::new();
    while *pos < tokens.len() {
        let (tok, line) = &tokens[*pos];
        *pos += 1;
        if tok == "}" {
            return if depth == 0 {
                Err(format!("line {line}: unexpected }}"))
            } else {
                Ok(out)
            };
        }
        if tok == ";" || tok == "{" {
            return Err(format!("line {line}: unexpected {tok}"));
        }
        let mut d = Directive {
            name: tok.clone(),
            args: Vec::new(),
            file: file.clone(),
            line: *line,
            block: None,
            broken: None,
        };
        loop {
            let Some((t, _)) = tokens.get(*pos) else {
                return Err(format!("line {line}: {} is not terminated", d.name));
            };
            *pos += 1;
            match t.as_str() {
                ";" => break,
                "{" => {
                    d.block = Some(block(tokens, pos, depth + 1, file)?);
                    break;
                }
                "}" => return Err(format!("line {line}: {} is not terminated", d.name)),
                _ => d.args.push(t.clone()),
            }
        }
        out.push(d);
    }
    if depth > 0 {
        return Err("a block is not closed".into());
    }
    Ok(out)
}

/// Parses nginx's configuration syntax; `file` names it in messages.
pub(crate) fn parse(text: &str, file: &str) -> Result<Vec<Directive>, String> {
    let file: Arc<str> = Arc::from(file);
    block(&tokens(text)?, &mut 0, 0, &file)
}

/// A configuration with its includes spliced in, and the files they came from.
pub(crate) struct Loaded {
    /// The directives.
    pub(crate) tree: Vec<Directive>,
    /// The included files read.
    pub(crate) includes: Vec<PathBuf>,
    /// The `include` patterns met, for a watch on the directories they list.
    pub(crate) patterns: Vec<String>,
}

/// Where relative includes start: nginx's configuration prefix, the directory of the
/// `nginx.conf` above the file (`/etc/nginx` for `/etc/nginx/sites-enabled/x`), or the file's
/// own directory.
pub(crate) fn prefix_of(file: &Path) -> PathBuf {
    let start = file.parent().unwrap_or(Path::new("/"));
    start
        .ancestors()
        .find(|d| d.join("nginx.conf").is_file())
        .unwrap_or(start)
        .to_path_buf()
}

/// Reads `file` with every `include` spliced in place. An include that cannot be read stays
/// as a directive marked broken: what it would govern is hidden.
pub(crate) fn load(file: &Path) -> Result<Loaded, String> {
    let text = read_rules_file(file)?;
    load_text(&text, file, &prefix_of(file), IncludeSource::Disk)
}

/// What `nginx -T` printed, read with its includes spliced from what it printed: `main` is
/// the file it loaded first, whose directory is its prefix for relative includes.
pub(crate) fn load_dump(main: &Path, dumped: &BTreeMap<PathBuf, String>) -> Result<Loaded, String> {
    let text = dumped
        .get(main)
        .ok_or_else(|| format!("nginx -T did not print {}", main.display()))?;
    let prefix = main.parent().unwrap_or(Path::new("/")).to_path_buf();
    let mut loaded = load_text(text, main, &prefix, IncludeSource::Nginx(dumped))?;
    // A file nginx printed that no include named here (read out of its place, its rules
    // govern everything: more is hidden, nothing less).
    for (path, text) in dumped {
        if path != main && !loaded.includes.contains(path) {
            let mut more = parse(text, &path.display().to_string())?;
            let mut seen = HashSet::new();
            splice(
                &mut more,
                &prefix,
                1,
                IncludeSource::Nginx(dumped),
                &mut loaded,
                &mut seen,
            );
            loaded.includes.push(path.clone());
            loaded.tree.extend(more);
        }
    }
    Ok(loaded)
}

fn load_text(
    text: &str,
    file: &Path,
    prefix: &Path,
    source: IncludeSource,
) -> Result<Loaded, String> {
    let name = file.display().to_string();
    let mut tree = parse(text, &name)?;
    let mut loaded = Loaded {
        tree: Vec::new(),
        includes: Vec::new(),
        patterns: Vec::new(),
    };
    let mut seen: HashSet<PathBuf> = HashSet::from([file.to_path_buf()]);
    splice(&mut tree, prefix, 0, source, &mut loaded, &mut seen);
    loaded.tree = tree;
    Ok(loaded)
}

fn splice(
    tree: &mut Vec<Directive>,
    prefix: &Path,
    depth: usize,
    source: IncludeSource,
    loaded: &mut Loaded,
    seen: &mut HashSet<PathBuf>,
) {
    let mut out = Vec::with_capacity(tree.len());
    for mut d in std::mem::take(tree) {
        if let Some(b) = d.block.as_mut() {
            splice(b, prefix, depth, source, loaded, seen);
            out.push(d);
            continue;
        }
        if d.name != "include" {
            out.push(d);
            continue;
        }
        let Some(pattern) = d.args.first().cloned() else {
            d.broken = Some("include without a file".into());
            out.push(d);
            continue;
        };
        if depth >= MAX_INCLUDE_DEPTH {
            d.broken = Some(format!("include {pattern} nested too deeply"));
            out.push(d);
            continue;
        }
        loaded.patterns.push(pattern.clone());
        let files = match source {
            IncludeSource::Nginx(dumped) => {
                expand_in_dump(&pattern, prefix, dumped).and_then(|f| {
                    // nginx refuses to start on a missing plain include: one it did not print
                    // is not understood.
                    if f.is_empty() && !pattern.contains(['*', '?', '[']) {
                        Err(format!("nginx -T did not print {pattern}"))
                    } else {
                        Ok(f)
                    }
                })
            }
            IncludeSource::Disk | IncludeSource::Apache(_) => expand_include(&pattern, prefix),
        };
        let files = match files {
            Ok(f) => f,
            Err(e) => {
                d.broken = Some(format!("include {pattern}: {e}"));
                out.push(d);
                continue;
            }
        };
        for f in files {
            if !seen.insert(f.clone()) {
                continue;
            }
            loaded.includes.push(f.clone());
            let text = match source {
                IncludeSource::Nginx(dumped) => dumped
                    .get(&f)
                    .cloned()
                    .ok_or_else(|| "not printed by nginx -T".to_string()),
                IncludeSource::Disk | IncludeSource::Apache(_) => read_rules_file(&f),
            };
            match text.and_then(|text| parse(&text, &f.display().to_string())) {
                Ok(mut inner) => {
                    splice(&mut inner, prefix, depth + 1, source, loaded, seen);
                    out.extend(inner);
                }
                Err(e) => {
                    let mut broken = d.clone();
                    broken.broken = Some(format!("include {}: {e}", f.display()));
                    out.push(broken);
                }
            }
        }
    }
    *tree = out;
}

/// Every directive, depth first.
pub(crate) fn all(ds: &[Directive]) -> Vec<&Directive> {
    let mut out = Vec::new();
    for d in ds {
        out.push(d);
        if let Some(b) = &d.block {
            out.extend(all(b));
        }
    }
    out
}

/// The `server` blocks of HTTP (at the top of a file read alone, or in `http`), not those of
/// `stream` or `mail`.
pub(crate) fn http_servers(tree: &[Directive]) -> Vec<&Directive> {
    let mut out = Vec::new();
    for d in tree {
        match (d.name.as_str(), &d.block) {
            ("server", Some(_)) => out.push(d),
            ("http", Some(b)) => {
                out.extend(b.iter().filter(|s| s.name == "server" && s.block.is_some()))
            }
            _ => {}
        }
    }
    out
}

/// The server blocks of a configuration, as virtual hosts: where each is, what it listens on,
/// its names and its `root`.
pub(crate) fn server_blocks(tree: &[Directive]) -> Vec<Vhost> {
    http_servers(tree)
        .into_iter()
        .filter_map(|d| {
            let block = d.block.as_deref()?;
            let mut v = Vhost {
                at: (d.file.to_string(), d.line),
                listens: Vec::new(),
                names: Vec::new(),
                docroot: None,
            };
            for inner in block {
                match inner.name.as_str() {
                    "listen" => v.listens.push(inner.args.join(" ")),
                    "server_name" => {
                        v.names
                            .extend(inner.args.iter().map(|a| a.to_ascii_lowercase()));
                    }
                    "root" => v.docroot = inner.args.first().cloned(),
                    _ => {}
                }
            }
            Some(v)
        })
        .collect()
}

#[cfg(test)]
mod tests;

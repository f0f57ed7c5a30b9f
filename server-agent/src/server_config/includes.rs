//! Where included files come from: the server's own account of what it loaded (`nginx -T`
//! prints every file; `apache2 -t -D DUMP_INCLUDES` lists each with the line that included
//! it), or, when the server cannot be asked, the file system, expanded as the servers expand
//! `include` patterns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How `include`s are resolved while reading.
#[derive(Debug, Clone, Copy)]
pub(crate) enum IncludeSource<'a> {
    /// Patterns expanded on the file system.
    Disk,
    /// What Apache listed: each file with the file and line that included it.
    Apache(&'a ApacheIncludes),
    /// What nginx printed: every file it loaded, with its text.
    Nginx(&'a BTreeMap<PathBuf, String>),
}

/// Apache's `DUMP_INCLUDES`: the main file, then each included file under the file and line
/// that included it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ApacheIncludes {
    /// The main configuration file.
    pub(crate) main: PathBuf,
    /// Each included file, in load order, with its includer and the includer's line.
    pub(crate) files: Vec<(PathBuf, PathBuf, usize)>,
}

impl ApacheIncludes {
    /// Parses `apache2 -t -D DUMP_INCLUDES`'s output (`(*) /etc/apache2/apache2.conf`, then
    /// `(146) /etc/apache2/mods-enabled/alias.load`, nested by indentation).
    pub(crate) fn parse(out: &str) -> Result<ApacheIncludes, String> {
        let mut main: Option<PathBuf> = None;
        let mut stack: Vec<(usize, PathBuf)> = Vec::new();
        let mut files = Vec::new();
        for raw in out.lines() {
            let indent = raw.len() - raw.trim_start().len();
            let line = raw.trim();
            let Some(rest) = line.strip_prefix('(') else {
                continue;
            };
            let Some((mark, path)) = rest.split_once(')') else {
                continue;
            };
            let path = PathBuf::from(path.trim());
            if mark == "*" {
                main = Some(path.clone());
                stack = vec![(indent, path)];
                continue;
            }
            let at: usize = mark
                .parse()
                .map_err(|_| format!("DUMP_INCLUDES line {line:?} is not understood"))?;
            while stack.last().is_some_and(|(i, _)| *i >= indent) {
                stack.pop();
            }
            let Some((_, parent)) = stack.last() else {
                return Err(format!("DUMP_INCLUDES line {line:?} has no includer"));
            };
            files.push((path.clone(), parent.clone(), at));
            stack.push((indent, path));
        }
        let main = main.ok_or("DUMP_INCLUDES named no main configuration file")?;
        Ok(ApacheIncludes { main, files })
    }

    /// The files included by `file` at a directive spanning lines `first..=last`.
    pub(crate) fn included_at(&self, file: &str, first: usize, last: usize) -> Vec<PathBuf> {
        self.files
            .iter()
            .filter(|(_, parent, at)| parent.as_os_str() == file && (first..=last).contains(at))
            .map(|(f, _, _)| f.clone())
            .collect()
    }

    /// Every file Apache read, the main one first.
    pub(crate) fn all(&self) -> Vec<PathBuf> {
        std::iter::once(self.main.clone())
            .chain(self.files.iter().map(|(f, _, _)| f.clone()))
            .collect()
    }
}

/// The files an `include` pattern names among those nginx printed, in sorted order as nginx
/// expands globs.
pub(crate) fn expand_in_dump(
    pattern: &str,
    base: &Path,
    dumped: &BTreeMap<PathBuf, String>,
) -> Result<Vec<PathBuf>, String> {
    let full = absolute(pattern, base);
    let text = full.to_string_lossy().into_owned();
    if !text.contains(['*', '?', '[']) {
        return Ok(if dumped.contains_key(&full) {
            vec![full]
        } else {
            Vec::new()
        });
    }
    let glob = globset::GlobBuilder::new(&text)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("include pattern {pattern:?}: {e}"))?
        .compile_matcher();
    Ok(dumped
        .keys()
        .filter(|p| glob.is_match(p))
        .cloned()
        .collect())
}

fn absolute(pattern: &str, base: &Path) -> PathBuf {
    if Path::new(pattern).is_absolute() {
        PathBuf::from(pattern)
    } else {
        base.join(pattern)
    }
}

/// The files a configuration's `include` names: a path or a shell pattern, relative to
/// `base`, expanded in sorted order as nginx and Apache do; a directory (Apache) means every
/// file in it.
pub(crate) fn expand_include(pattern: &str, base: &Path) -> Result<Vec<PathBuf>, String> {
    let full = absolute(pattern, base);
    let text = full.to_string_lossy().into_owned();
    if !text.contains(['*', '?', '[']) {
        if full.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&full)
                .map_err(|e| format!("{} cannot be read ({e})", full.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            return Ok(files);
        }
        return Ok(vec![full]);
    }
    // Walk from the last directory without wildcards, matching whole paths.
    let fixed: PathBuf = full
        .components()
        .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
        .collect();
    let depth = full.components().count() - fixed.components().count();
    let glob = globset::GlobBuilder::new(&text)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("include pattern {pattern:?}: {e}"))?
        .compile_matcher();
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&fixed)
        .min_depth(depth)
        .max_depth(depth)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() || e.path().is_file())
        .map(walkdir::DirEntry::into_path)
        .filter(|p| glob.is_match(p))
        .collect();
    files.sort();
    Ok(files)
}

/// The directories whose listing decides what an `include` pattern names: a new file there
/// changes the configuration even though no file read changed.
pub(crate) fn watched_dirs(pattern: &str, base: &Path) -> Vec<PathBuf> {
    let full = absolute(pattern, base);
    let fixed: PathBuf = full
        .components()
        .take_while(|c| !c.as_os_str().to_string_lossy().contains(['*', '?', '[']))
        .collect();
    if fixed == full {
        return if full.is_dir() {
            vec![full]
        } else {
            Vec::new()
        };
    }
    let depth = full.components().count() - fixed.components().count();
    walkdir::WalkDir::new(&fixed)
        .min_depth(0)
        .max_depth(depth.saturating_sub(1))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir())
        .map(walkdir::DirEntry::into_path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_expand_in_order_and_directories_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::create_dir_all(base.join("conf.d")).unwrap();
        std::fs::create_dir_all(base.join("sites/a")).unwrap();
        for f in [
            "conf.d/b.conf",
            "conf.d/a.conf",
            "conf.d/c.txt",
            "sites/a/x.conf",
        ] {
            std::fs::write(base.join(f), "").unwrap();
        }
        let got = expand_include("conf.d/*.conf", base).unwrap();
        assert_eq!(
            got,
            [base.join("conf.d/a.conf"), base.join("conf.d/b.conf")]
        );
        assert_eq!(expand_include("conf.d", base).unwrap().len(), 3);
        assert_eq!(
            expand_include("sites/*/*.conf", base).unwrap(),
            [base.join("sites/a/x.conf")]
        );
        assert!(expand_include("none/*.conf", base).unwrap().is_empty());
        assert_eq!(
            expand_include("/abs/x.conf", base).unwrap(),
            [PathBuf::from("/abs/x.conf")]
        );
        assert_eq!(watched_dirs("conf.d/*.conf", base), [base.join("conf.d")]);
        let mut dirs = watched_dirs("sites/*/*.conf", base);
        dirs.sort();
        assert_eq!(dirs, [base.join("sites"), base.join("sites/a")]);
    }

    #[test]
    fn apaches_dump_of_its_includes_is_read_with_nesting() {
        let out = "Included configuration files:\n  (*) /etc/apache2/apache2.conf\n    \
                   (146) /etc/apache2/mods-enabled/alias.load\n    (14) /tmp/ap/conf.d/a.conf\n      \
                   (4) /tmp/ap/conf.d/inner/b.conf\n    (225) /etc/apache2/sites-enabled/000-default.conf\n";
        let inc = ApacheIncludes::parse(out).unwrap();
        assert_eq!(inc.main, PathBuf::from("/etc/apache2/apache2.conf"));
        assert_eq!(
            inc.included_at("/tmp/ap/conf.d/a.conf", 4, 4),
            [PathBuf::from("/tmp/ap/conf.d/inner/b.conf")]
        );
        assert_eq!(
            inc.included_at("/etc/apache2/apache2.conf", 225, 225),
            [PathBuf::from("/etc/apache2/sites-enabled/000-default.conf")]
        );
        assert!(
            inc.included_at("/etc/apache2/apache2.conf", 1, 10)
                .is_empty()
        );
        assert_eq!(inc.all().len(), 5);
        assert!(ApacheIncludes::parse("nothing here").is_err());
    }

    #[test]
    fn nginx_includes_come_from_what_it_printed() {
        let dumped: BTreeMap<PathBuf, String> = [
            ("/etc/nginx/nginx.conf", ""),
            ("/etc/nginx/conf.d/b.conf", ""),
            ("/etc/nginx/conf.d/a.conf", ""),
            ("/etc/nginx/mime.types", ""),
        ]
        .into_iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
        let base = Path::new("/etc/nginx");
        assert_eq!(
            expand_in_dump("conf.d/*.conf", base, &dumped).unwrap(),
            [
                PathBuf::from("/etc/nginx/conf.d/a.conf"),
                PathBuf::from("/etc/nginx/conf.d/b.conf")
            ]
        );
        assert_eq!(
            expand_in_dump("mime.types", base, &dumped).unwrap().len(),
            1
        );
        assert!(
            expand_in_dump("missing.conf", base, &dumped)
                .unwrap()
                .is_empty()
        );
    }
}

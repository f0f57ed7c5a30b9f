//! What the judge cannot see from where it stands, read from the web server's configuration.
//!
//! The judge ([`crate::judge`]) asks the server for each file as an anonymous client on
//! loopback. Rules whose effect is the same for everyone (a `return`, a handler, a redirect,
//! a permission) show in its answer. Rules that depend on who asks (nginx `allow`/`deny`,
//! `geo`, `if` on the client's address, `satisfy`, authentication; Apache `Require
//! ip|host|local|env`, `Allow`/`Deny`, `<If>`) would let the judge through where others are
//! kept out, or the reverse: the places they govern are hidden, never asked about. So is
//! every place governed by something the agent does not understand (an unknown directive or
//! block, an `include` it cannot read, a regular expression it cannot compile): fail closed,
//! and say so. `include` is followed. Reading `.htaccess` files too, whatever the server (an
//! unreadable one hides its directory, as Apache refuses it whole).

mod apache;
pub(crate) mod directives;
pub(crate) mod nginx;

// nginx and Apache use PCRE; fancy-regex adds the look-around and back-references PCRE
// configurations use (the shipped nginx block itself has `(?!well-known/)`) to the regex crate.
use fancy_regex::{Regex, RegexBuilder};
use std::fmt;
use std::path::{Path, PathBuf};

/// Configuration files larger than this are not parsed; what they govern is hidden instead.
const MAX_RULES_FILE: u64 = 1 << 20;

/// What a rule governs, on the docroot-relative path with a leading `/` (`/private/a.html`).
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    /// Everything under (or at) this path prefix, compared as nginx compares prefixes.
    Prefix(String),
    /// Exactly this path.
    Exact(String),
    /// A regular expression over the whole path.
    Path(Regex),
    /// Files whose name (last segment) matches, under a directory prefix (`""` for anywhere).
    FileName { under: String, name: Regex },
}

/// One hidden place, with where the rule was read and why it hides.
#[derive(Debug, Clone)]
pub struct Hidden {
    matcher: Matcher,
    /// Where the rule was read, and why it hides (`site.conf:12: allow depends on who asks`).
    pub(crate) source: String,
}

impl fmt::Display for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.matcher {
            Matcher::Prefix(p) => write!(f, "{p}* ({})", self.source),
            Matcher::Exact(p) => write!(f, "{p} ({})", self.source),
            Matcher::Path(r) => write!(f, "~{} ({})", r.as_str(), self.source),
            Matcher::FileName { under, name } => {
                write!(f, "{under}/**/~{} ({})", name.as_str(), self.source)
            }
        }
    }
}

/// A configuration the agent cannot read at all.
#[derive(Debug, thiserror::Error)]
#[error("--server-config {path}: {reason}")]
pub struct ServerConfigError {
    /// The file.
    pub(crate) path: PathBuf,
    /// What is wrong, with the line.
    pub(crate) reason: String,
}

/// The site as the configuration sees it: its docroot, its URL's path and host, and the
/// directives the operator vouched for.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    /// The docroot (canonical).
    pub docroot: &'a Path,
    /// The base URL's path (`/` usually).
    pub base_path: &'a str,
    /// The base URL's host.
    pub host: &'a str,
    /// Directives declared to serve every client alike (`--trust-directive`), lower case.
    pub trusted: &'a [String],
}

/// Every hidden place of a site, and the configuration files they were read from.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerRules {
    hidden: Vec<Hidden>,
    /// The server configuration files read (watched: a change means new rules).
    sources: Vec<PathBuf>,
}

impl ServerRules {
    /// No rules.
    pub(crate) fn none() -> ServerRules {
        ServerRules::default()
    }

    /// Hides everything (a configuration that cannot be read governs all of the site).
    pub(crate) fn hide_all(&mut self, why: String) {
        self.hidden.push(Hidden {
            matcher: Matcher::Prefix("/".into()),
            source: why,
        });
    }

    /// The server configuration files the rules come from, includes too.
    pub(crate) fn sources(&self) -> Vec<PathBuf> {
        self.sources.clone()
    }

    /// The hidden places, for the start-up log and `check`.
    pub(crate) fn hidden(&self) -> &[Hidden] {
        &self.hidden
    }

    /// Why a docroot-relative file (`private/a.html`) is hidden, if it is.
    pub(crate) fn hides(&self, rel: &str) -> Option<&Hidden> {
        let path = format!("/{rel}");
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.hidden.iter().find(|r| match &r.matcher {
            Matcher::Prefix(p) => path.starts_with(p.as_str()) || format!("{path}/") == *p,
            Matcher::Exact(p) => path == *p,
            Matcher::Path(re) => matches(re, &path),
            Matcher::FileName { under, name: re } => {
                (under.is_empty() || path.starts_with(&format!("{under}/"))) && matches(re, name)
            }
        })
    }

    /// Why a directory is hidden whole, if it is (rules on file names are checked per file).
    pub(crate) fn hides_dir(&self, rel: &str) -> Option<&Hidden> {
        let path = format!("/{rel}/");
        self.hidden.iter().find(|r| match &r.matcher {
            Matcher::Prefix(p) => path.starts_with(p.as_str()),
            _ => false,
        })
    }

    /// Adds the rules of every `.htaccess` under `docroot` (symlinks are not followed: the
    /// agent never publishes through a link that leaves the docroot anyway).
    pub(crate) fn add_htaccess_files(&mut self, site: Site) {
        let walk = walkdir::WalkDir::new(site.docroot)
            .follow_links(false)
            .into_iter();
        for entry in walk.filter_map(Result::ok) {
            if entry.file_type().is_file() && entry.file_name() == ".htaccess" {
                let dir = entry.path().parent().unwrap_or(site.docroot);
                let rel_dir = dir
                    .strip_prefix(site.docroot)
                    .ok()
                    .and_then(Path::to_str)
                    .map(|s| {
                        if s.is_empty() {
                            String::new()
                        } else {
                            format!("/{s}")
                        }
                    });
                // A directory whose name is not UTF-8 holds nothing publishable anyway.
                let Some(rel_dir) = rel_dir else { continue };
                self.add_htaccess(entry.path(), &rel_dir, site);
            }
        }
    }

    /// Adds one `.htaccess` governing the directory `rel_dir` (`""` for the docroot, else
    /// `/sub/dir`).
    pub(crate) fn add_htaccess(&mut self, file: &Path, rel_dir: &str, site: Site) {
        let source = |why: &str| format!("{}: {why}", file.display());
        let whole_dir = |why: String| Hidden {
            matcher: Matcher::Prefix(format!("{rel_dir}/")),
            source: why,
        };
        let text = match read_rules_file(file) {
            Ok(t) => t,
            Err(e) => {
                self.hidden
                    .push(whole_dir(source(&format!("{e}, so hidden whole"))));
                return;
            }
        };
        match apache::hidden_places(
            &text,
            &file.display().to_string(),
            apache::Context::Htaccess(rel_dir),
            site,
        ) {
            Ok((hidden, _)) => self.hidden.extend(hidden),
            Err(reason) => self
                .hidden
                .push(whole_dir(source(&format!("{reason}; hidden whole")))),
        }
    }

    /// Adds the hidden places of an nginx or Apache configuration file and what it includes.
    pub(crate) fn add_server_config(
        &mut self,
        file: &Path,
        site: Site,
    ) -> Result<(), ServerConfigError> {
        let err = |reason: String| ServerConfigError {
            path: file.to_path_buf(),
            reason,
        };
        self.sources.push(file.to_path_buf());
        let text = read_rules_file(file).map_err(err)?;
        if looks_like_apache(&text) {
            let name = file.display().to_string();
            let (hidden, includes) =
                apache::hidden_places(&text, &name, apache::Context::Server { file }, site)
                    .map_err(err)?;
            self.hidden.extend(hidden);
            self.sources.extend(includes);
        } else {
            let loaded = nginx::load(file).map_err(err)?;
            self.sources.extend(loaded.includes.iter().cloned());
            self.hidden.extend(nginx::hidden_places(&loaded, site));
        }
        Ok(())
    }
}

/// What a configuration text is, for [`hidden_in_text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// An nginx configuration.
    Nginx,
    /// An Apache server configuration.
    Apache,
    /// An `.htaccess` of the docroot's top directory.
    Htaccess,
}

/// The places a configuration text hides from the judge, read as `kind` with no include
/// followed (no file is read): what the fuzzers feed, since an `.htaccess` is written by
/// whoever may write into the docroot.
pub fn hidden_in_text(text: &str, kind: TextKind, site: Site) -> Result<Vec<Hidden>, String> {
    match kind {
        TextKind::Nginx => {
            let tree = nginx::parse(text, "fuzz.conf")?;
            let loaded = nginx::Loaded {
                tree,
                includes: Vec::new(),
            };
            Ok(nginx::hidden_places(&loaded, site))
        }
        TextKind::Apache => {
            apache::hidden_places(text, "fuzz.conf", apache::Context::Text, site).map(|(h, _)| h)
        }
        TextKind::Htaccess => {
            apache::hidden_places(text, ".htaccess", apache::Context::Htaccess(""), site)
                .map(|(h, _)| h)
        }
    }
}

/// Reads a configuration file, refusing one too large to be one.
pub(crate) fn read_rules_file(file: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(file).map_err(|e| format!("cannot be read ({e})"))?;
    if meta.len() > MAX_RULES_FILE {
        return Err(format!("is larger than {} KiB", MAX_RULES_FILE >> 10));
    }
    let bytes = std::fs::read(file).map_err(|e| format!("cannot be read ({e})"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Whether a configuration's text is Apache's (else it is read as nginx's).
pub(crate) fn looks_like_apache(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim_start().to_ascii_lowercase();
        t.starts_with("<directory")
            || t.starts_with("<location")
            || t.starts_with("<files")
            || t.starts_with("<virtualhost")
            || t.starts_with("<ifmodule")
            || t.starts_with("documentroot")
            || t.starts_with("servername")
    })
}

/// A URL path of the configuration made relative to the site's base path, with a leading `/`;
/// `None` when it lies outside the site.
fn under_base(path: &str, base_path: &str) -> Option<String> {
    let base = base_path.trim_end_matches('/');
    if base.is_empty() {
        return Some(path.to_string());
    }
    let rest = path.strip_prefix(base)?;
    if rest.is_empty() || rest.starts_with('/') {
        Some(if rest.is_empty() {
            "/".into()
        } else {
            rest.into()
        })
    } else {
        None
    }
}

fn regex(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .delegate_size_limit(1 << 20)
        .backtrack_limit(100_000)
        .build()
        .map_err(|e| format!("regular expression {pattern:?} is not understood ({e})"))
}

/// Whether `re` matches `text`; a match that runs past the backtracking limit counts as a
/// match (the safe side: hidden, not published).
fn matches(re: &Regex, text: &str) -> bool {
    re.is_match(text).unwrap_or(true)
}

/// A shell wildcard (`*.inc`, `wp-config.php`) as a whole-name regex, as Apache's `<Files>`.
fn wildcard(pattern: &str) -> Result<Regex, String> {
    let mut re = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&fancy_regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex(&re, false)
}

/// The files a configuration's `include` names: a path or a shell pattern, relative to
/// `base`, expanded in sorted order as nginx and Apache do; a directory (Apache) means every
/// file in it.
fn expand_include(pattern: &str, base: &Path) -> Result<Vec<PathBuf>, String> {
    let full = if Path::new(pattern).is_absolute() {
        PathBuf::from(pattern)
    } else {
        base.join(pattern)
    };
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

/// What the tests of the configuration readers share.
#[cfg(test)]
pub(crate) mod testing {
    use super::{ServerRules, Site};
    use std::path::Path;

    /// The site `www.example.org` at `/` in `docroot`, trusting nothing.
    pub(crate) fn site(docroot: &Path) -> Site<'_> {
        Site {
            docroot,
            base_path: "/",
            host: "www.example.org",
            trusted: &[],
        }
    }

    /// Fails unless each of `hidden` is hidden and none of `shown` is.
    pub(crate) fn assert_hides(rules: &ServerRules, hidden: &[&str], shown: &[&str]) {
        for p in hidden {
            assert!(rules.hides(p).is_some(), "{p} is not hidden");
        }
        for p in shown {
            assert!(
                rules.hides(p).is_none(),
                "{p}: {:?}",
                rules.hides(p).map(ToString::to_string)
            );
        }
    }

    /// Fails unless the rules hide nothing at all.
    pub(crate) fn assert_hides_nothing(rules: &ServerRules) {
        assert!(
            rules.hidden().is_empty(),
            "{:?}",
            rules
                .hidden()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        );
    }
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
    }
}

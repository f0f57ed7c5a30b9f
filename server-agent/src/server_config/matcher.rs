//! What a rule governs, matched as the server itself matches it: nginx locations and Apache's
//! `<Location*>` against the URL path, `<Directory*>` against the absolute filesystem path of
//! the file's directory, `<Files*>` against the file's base name.
//!
//! A docroot has several spellings: the canonical path the agent walks, the path the
//! operator gave, and the path the server names (`DocumentRoot /srv/site/current` where
//! `current` is a symlink to a release). Apache matches `<Directory>` against the path as it
//! builds it, unresolved; which spelling a rule was written against is unknowable, so a rule
//! hides a file when it matches under any spelling. The reader only ever hides: a spelling too
//! many hides more, never less.

use fancy_regex::{Regex, RegexBuilder};
use std::fmt;

/// What a rule governs.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    /// Everything at or under this docroot-relative prefix (`/private/`), as nginx compares
    /// prefixes (also a `.htaccess` directory's scope).
    UrlPrefix(String),
    /// Exactly this docroot-relative path.
    UrlExact(String),
    /// A regular expression over the request's whole URL path (the base path included), as
    /// nginx's regex locations and Apache's `<LocationMatch>` match.
    UrlRegex(Regex),
    /// Apache's `<Location>` with wildcards: matched against the URL path's first components.
    UrlGlob {
        /// The pattern as a regex.
        re: Regex,
        /// Its number of `/`-separated components.
        components: usize,
    },
    /// A directory (absolute, no trailing `/`) and everything below it.
    DirPrefix(String),
    /// Apache's `<Directory>` with wildcards (`fnmatch` with `FNM_PATHNAME`): matched against
    /// the first components of the file's directory.
    DirGlob {
        /// The pattern as a regex.
        re: Regex,
        /// Its number of `/`-separated components.
        components: usize,
    },
    /// Apache's `<DirectoryMatch>`: a regular expression over a directory's absolute path,
    /// tried on the file's directory and each above it.
    DirRegex(Regex),
    /// Apache's `<Files>`/`<FilesMatch>`: the file's base name.
    FileName(Regex),
    /// Every one of these (a `<Files>` inside a `<Directory>`).
    All(Vec<Matcher>),
    /// The first, but none of the others (an nginx address rule, but the locations that set
    /// their own).
    Except(Box<Matcher>, Vec<Matcher>),
}

/// A file as rules see it: its URL path, its docroot-relative path, and the absolute paths of
/// its directory under every spelling of the docroot.
pub(crate) struct Candidate {
    /// The request's URL path (`/base/a/b.html`).
    url_path: String,
    /// Docroot-relative with a leading `/` (`/a/b.html`).
    rel: String,
    /// The file's base name.
    name: String,
    /// The file's directory, absolute, under each spelling (`/srv/www/a`).
    dirs: Vec<String>,
}

impl Candidate {
    /// The file at docroot-relative `rel` (`a/b.html`, `""` for the docroot itself) under the
    /// docroot `spellings`, served below `base_path`.
    pub(crate) fn file(rel: &str, base_path: &str, spellings: &[String]) -> Candidate {
        let rel = rel.trim_start_matches('/');
        let (dir, name) = match rel.rsplit_once('/') {
            Some((d, n)) => (d, n),
            None => ("", rel),
        };
        Candidate {
            url_path: format!("{}{rel}", slash_ended(base_path)),
            rel: format!("/{rel}"),
            name: name.to_string(),
            dirs: spellings.iter().map(|s| join(s, dir)).collect(),
        }
    }
}

/// `/base/` from `/base` or `/base/`.
fn slash_ended(p: &str) -> String {
    if p.ends_with('/') {
        p.to_string()
    } else {
        format!("{p}/")
    }
}

/// `root` and a relative directory, with no trailing `/` (`/` alone for the filesystem root).
fn join(root: &str, rel_dir: &str) -> String {
    let root = root.trim_end_matches('/');
    let joined = if rel_dir.is_empty() {
        root.to_string()
    } else {
        format!("{root}/{rel_dir}")
    };
    if joined.is_empty() {
        "/".into()
    } else {
        joined
    }
}

/// Whether `re` matches; a match that runs past the backtracking limit counts as a match
/// (the safe side: hidden, not published).
pub(crate) fn matches(re: &Regex, text: &str) -> bool {
    re.is_match(text).unwrap_or(true)
}

/// `path`'s first `n` components (`/a/b/c`, 2 -> `/a/b`), or `None` when it has fewer.
fn first_components(path: &str, n: usize) -> Option<&str> {
    if n == 0 {
        return Some("");
    }
    let mut seen = 0;
    for (i, b) in path.bytes().enumerate().skip(1) {
        if b == b'/' {
            seen += 1;
            if seen == n {
                return Some(&path[..i]);
            }
        }
    }
    // The whole path has exactly n components.
    (path.len() > 1 && seen + 1 == n).then_some(path)
}

/// The number of `/`-separated components of an absolute pattern (`/a/*/c` has 3).
pub(crate) fn components(pattern: &str) -> usize {
    pattern
        .trim_end_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .count()
}

/// Every ancestor of an absolute directory path, itself first (`/a/b`, `/a`, `/`).
fn ancestors(dir: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(dir);
    std::iter::from_fn(move || {
        let cur = next?;
        next = match cur.rfind('/') {
            Some(0) if cur.len() > 1 => Some("/"),
            Some(i) if i > 0 => Some(&cur[..i]),
            _ => None,
        };
        Some(cur)
    })
}

impl Matcher {
    /// Whether the rule governs the file.
    pub(crate) fn governs(&self, c: &Candidate) -> bool {
        match self {
            Matcher::UrlPrefix(p) => c.rel.starts_with(p.as_str()) || format!("{}/", c.rel) == *p,
            Matcher::UrlExact(p) => c.rel == *p,
            Matcher::UrlRegex(re) => matches(re, &c.url_path),
            Matcher::UrlGlob { re, components } => {
                first_components(&c.url_path, *components).is_some_and(|prefix| matches(re, prefix))
            }
            Matcher::DirPrefix(p) => c.dirs.iter().any(|d| under(d, p)),
            Matcher::DirGlob { re, components } => c.dirs.iter().any(|d| {
                first_components(d, *components).is_some_and(|prefix| matches(re, prefix))
            }),
            Matcher::DirRegex(re) => c
                .dirs
                .iter()
                .any(|d| ancestors(d).any(|a| matches(re, a) || matches(re, &slash_ended(a)))),
            Matcher::FileName(re) => matches(re, &c.name),
            Matcher::All(ms) => ms.iter().all(|m| m.governs(c)),
            Matcher::Except(m, not) => m.governs(c) && !not.iter().any(|n| n.governs(c)),
        }
    }

    /// Whether the rule governs everything under a directory (`c` is a file directly in it
    /// named by no rule), so that the directory need not be walked at all.
    pub(crate) fn governs_whole_dir(&self, c: &Candidate) -> bool {
        match self {
            Matcher::UrlPrefix(_) | Matcher::DirPrefix(_) | Matcher::DirRegex(_) => self.governs(c),
            Matcher::DirGlob { .. } => self.governs(c),
            Matcher::All(ms) => ms.iter().all(|m| m.governs_whole_dir(c)),
            // Whether an exception reaches into the directory is not known from one file.
            Matcher::Except(..)
            | Matcher::UrlExact(_)
            | Matcher::UrlRegex(_)
            | Matcher::UrlGlob { .. }
            | Matcher::FileName(_) => false,
        }
    }

    /// `self` but none of `not` (nothing when `not` is empty).
    pub(crate) fn except(self, not: Vec<Matcher>) -> Matcher {
        if not.is_empty() {
            self
        } else {
            Matcher::Except(Box::new(self), not)
        }
    }

    /// `self` narrowed by `inner` (a section inside another).
    pub(crate) fn and(self, inner: Matcher) -> Matcher {
        match self {
            Matcher::All(mut ms) => {
                ms.push(inner);
                Matcher::All(ms)
            }
            outer => Matcher::All(vec![outer, inner]),
        }
    }
}

/// Whether absolute directory `dir` is `p` or below it.
fn under(dir: &str, p: &str) -> bool {
    let p = p.trim_end_matches('/');
    p.is_empty() || dir == p || dir.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Matcher::UrlPrefix(p) => write!(f, "{p}*"),
            Matcher::UrlExact(p) => write!(f, "{p}"),
            Matcher::UrlRegex(r) => write!(f, "URL ~{}", r.as_str()),
            Matcher::UrlGlob { re, .. } => write!(f, "URL ~{}", re.as_str()),
            Matcher::DirPrefix(p) => write!(f, "directory {p}/"),
            Matcher::DirGlob { re, .. } => write!(f, "directories ~{}", re.as_str()),
            Matcher::DirRegex(r) => write!(f, "directories ~{}", r.as_str()),
            Matcher::FileName(r) => write!(f, "files named ~{}", r.as_str()),
            Matcher::All(ms) => {
                let parts: Vec<String> = ms.iter().map(ToString::to_string).collect();
                f.write_str(&parts.join(" and "))
            }
            Matcher::Except(m, not) => {
                let parts: Vec<String> = not.iter().map(ToString::to_string).collect();
                write!(f, "{m} but {}", parts.join(", "))
            }
        }
    }
}

/// A PCRE pattern of nginx or Apache, compiled; fancy-regex adds the look-around and
/// back-references PCRE configurations use (the shipped nginx block has `(?!well-known/)`).
pub(crate) fn regex(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .delegate_size_limit(1 << 20)
        .backtrack_limit(100_000)
        .build()
        .map_err(|e| format!("regular expression {pattern:?} is not understood ({e})"))
}

/// A shell wildcard as `fnmatch` reads it (`*` and `?` never match `/`, `[...]` classes with
/// `!` or `^` negation and ranges, `\` escaping), anchored at both ends.
pub(crate) fn fnmatch(pattern: &str) -> Result<Regex, String> {
    let mut re = String::from("^");
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '\\' => match chars.next() {
                Some(n) => re.push_str(&fancy_regex::escape(&n.to_string())),
                None => re.push_str("\\\\"),
            },
            '[' => {
                // A class: up to the first `]` that is not its first member.
                let mut class = String::new();
                let mut negate = false;
                if matches!(chars.peek(), Some('!' | '^')) {
                    negate = true;
                    chars.next();
                }
                let mut closed = false;
                let mut first = true;
                while let Some(&n) = chars.peek() {
                    chars.next();
                    if n == ']' && !first {
                        closed = true;
                        break;
                    }
                    first = false;
                    match n {
                        '\\' | '[' | '^' | '&' | '~' | '|' => {
                            class.push('\\');
                            class.push(n);
                        }
                        n => class.push(n),
                    }
                }
                if !closed {
                    // No closing bracket: fnmatch reads `[` as itself.
                    re.push_str("\\[");
                    if negate {
                        re.push('!');
                    }
                    re.push_str(&fancy_regex::escape(&class));
                    continue;
                }
                re.push('[');
                if negate {
                    re.push('^');
                }
                re.push_str(&class);
                // Classes never match `/` under FNM_PATHNAME.
                if negate {
                    re.push('/');
                }
                re.push(']');
            }
            c => re.push_str(&fancy_regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex(&re, false)
}

/// Whether a pattern has shell wildcards.
pub(crate) fn has_wildcards(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rel: &str) -> Candidate {
        Candidate::file(
            rel,
            "/",
            &["/srv/site/releases/42".into(), "/srv/site/current".into()],
        )
    }

    #[test]
    fn fnmatch_reads_classes_and_keeps_to_one_component() {
        let re = fnmatch("/srv/*/[pP]riv[!x]te").unwrap();
        assert!(matches(&re, "/srv/a/private"));
        assert!(matches(&re, "/srv/b/Private"));
        assert!(!matches(&re, "/srv/a/b/private"), "* stops at /");
        assert!(!matches(&re, "/srv/a/privxte"));
        let re = fnmatch("secret[0-9].html").unwrap();
        assert!(matches(&re, "secret7.html"));
        assert!(!matches(&re, "secretx.html"));
        let re = fnmatch("a[.html").unwrap();
        assert!(matches(&re, "a[.html"), "an open bracket is itself");
        assert!(matches(&fnmatch("*.PHP").unwrap(), "x.PHP"));
    }

    #[test]
    fn directories_match_under_every_spelling_of_the_docroot() {
        let m = Matcher::DirPrefix("/srv/site/current/private".into());
        assert!(m.governs(&file("private/a.html")));
        assert!(m.governs(&file("private/deep/a.html")));
        assert!(!m.governs(&file("privateer/a.html")));
        let glob = Matcher::DirGlob {
            re: fnmatch("/srv/site/*/priv*").unwrap(),
            components: 4,
        };
        assert!(glob.governs(&file("private/x/y.html")));
        assert!(!glob.governs(&file("public/x.html")));
        let re = Matcher::DirRegex(regex("^/srv/site/current/[0-9]{3}/$", false).unwrap());
        assert!(re.governs(&file("123/a.html")));
        assert!(re.governs(&file("123/sub/a.html")), "a directory above");
        assert!(!re.governs(&file("12/a.html")));
        let files = Matcher::DirPrefix("/srv/site/current/a".into())
            .and(Matcher::FileName(fnmatch("*.inc").unwrap()));
        assert!(files.governs(&file("a/b/x.inc")));
        assert!(!files.governs(&file("b/x.inc")));
        assert!(Matcher::DirPrefix("/".into()).governs(&file("x")));
    }

    #[test]
    fn url_rules_match_the_whole_url_path() {
        let c = Candidate::file("a/b.html", "/docs/", &["/www".into()]);
        assert!(Matcher::UrlRegex(regex("^/docs/a/", false).unwrap()).governs(&c));
        assert!(!Matcher::UrlRegex(regex("^/a/", false).unwrap()).governs(&c));
        let glob = Matcher::UrlGlob {
            re: fnmatch("/docs/*").unwrap(),
            components: 2,
        };
        assert!(glob.governs(&c));
        assert!(Matcher::UrlPrefix("/a/".into()).governs(&c));
        assert!(Matcher::UrlPrefix("/a/b.html/".into()).governs(&c));
        assert!(Matcher::UrlExact("/a/b.html".into()).governs(&c));
    }

    #[test]
    fn components_and_ancestors() {
        assert_eq!(first_components("/a/b/c", 2), Some("/a/b"));
        assert_eq!(first_components("/a/b", 2), Some("/a/b"));
        assert_eq!(first_components("/a", 2), None);
        assert_eq!(components("/a/*/c/"), 3);
        assert_eq!(ancestors("/a/b").collect::<Vec<_>>(), ["/a/b", "/a", "/"]);
        assert_eq!(ancestors("/").collect::<Vec<_>>(), ["/"]);
    }
}

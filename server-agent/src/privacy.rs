//! What may be published: by default nothing hidden, nothing a server or an editor keeps for
//! itself, nothing the webmaster excluded, nothing the site's robots.txt disallows, and never
//! the agent's own output.
//!
//! Castillo's crawls found password files on public servers; a listing of every file is an
//! invitation to find them, so the rules err on the side of leaving things out.

use globset::{GlobSet, GlobSetBuilder};
use std::fmt;

/// Why a path is not published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// A dotfile or anything in a dot-directory (`.git/`, `.htpasswd`, `.env`, `.well-known/`).
    Hidden,
    /// A version-control directory without a dot (`CVS/`, `RCS/`, `SCCS/`, `_darcs/`).
    VersionControl,
    /// An editor or backup file (`~`, `.bak`, `.swp`, `.orig`, `#autosave#`, ...).
    Backup,
    /// A server configuration file (`.htaccess`, `.htpasswd`, `web.config`).
    ServerConfig,
    /// Matches an `--exclude` glob.
    ExcludedByPattern,
    /// Matches no `--include` glob.
    NotIncluded,
    /// The site's robots.txt disallows it.
    RobotsTxt,
    /// A document the agent itself publishes.
    AgentOutput,
}

impl fmt::Display for Exclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Exclusion::Hidden => "hidden",
            Exclusion::VersionControl => "version control",
            Exclusion::Backup => "editor or backup file",
            Exclusion::ServerConfig => "server configuration",
            Exclusion::ExcludedByPattern => "--exclude",
            Exclusion::NotIncluded => "not --include'd",
            Exclusion::RobotsTxt => "robots.txt",
            Exclusion::AgentOutput => "agent output",
        })
    }
}

/// A bad glob, named.
#[derive(Debug, thiserror::Error)]
#[error("bad {kind} pattern {pattern:?}: {reason}")]
pub struct PatternError {
    /// `--include` or `--exclude`.
    pub kind: &'static str,
    /// The glob.
    pub pattern: String,
    /// Why.
    pub reason: String,
}

const VCS_DIRS: &[&str] = &["CVS", "RCS", "SCCS", "_darcs", "_MTN", "{arch}"];
const SERVER_CONFIG: &[&str] = &["web.config"];
const BACKUP_SUFFIXES: &[&str] = &[
    "~", ".bak", ".swp", ".swo", ".swx", ".orig", ".rej", ".tmp", ".old", ".save",
];

/// The rules deciding which paths (relative to the docroot, `/`-separated) are public.
pub struct PublicFilter {
    include: Option<GlobSet>,
    exclude: GlobSet,
    robots: Option<texting_robots::Robot>,
    /// Paths the agent writes when the output directory is (inside) the docroot: exact names,
    /// and name prefixes for numbered sitemap parts.
    own_files: Vec<String>,
    own_prefixes: Vec<(String, String)>,
}

/// Globs match the whole path relative to the docroot; `*` stays within a path segment and
/// `**` crosses them; a pattern without `/` matches at any depth (`*.log` is `**/*.log`), as in
/// `.gitignore`.
fn globset(kind: &'static str, patterns: &[String]) -> Result<GlobSet, PatternError> {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        let trimmed = p.trim().trim_start_matches('/');
        let full = if p.trim().starts_with('/') || trimmed.contains('/') {
            trimmed.to_string()
        } else {
            format!("**/{trimmed}")
        };
        let glob = globset::GlobBuilder::new(&full)
            .literal_separator(true)
            .build()
            .map_err(|e| PatternError {
                kind,
                pattern: p.clone(),
                reason: e.kind().to_string(),
            })?;
        builder.add(glob);
    }
    builder.build().map_err(|e| PatternError {
        kind,
        pattern: patterns.join(","),
        reason: e.to_string(),
    })
}

impl PublicFilter {
    /// Rules from the settings. `robots_txt` is the site's robots.txt, if it has one and it is
    /// to be respected; `own_dir` is where the agent's output directory lies within the docroot
    /// (`Some("")` when it is the docroot itself, `None` when outside).
    pub fn new(
        include: &[String],
        exclude: &[String],
        robots_txt: Option<&[u8]>,
        own_dir: Option<&str>,
    ) -> Result<Self, PatternError> {
        Self::with_own_files(include, exclude, robots_txt, own_dir, &[])
    }

    /// As [`PublicFilter::new`], with more files the agent writes into its output directory
    /// (such as the IndexNow key file).
    pub fn with_own_files(
        include: &[String],
        exclude: &[String],
        robots_txt: Option<&[u8]>,
        own_dir: Option<&str>,
        extra: &[String],
    ) -> Result<Self, PatternError> {
        let include = if include.is_empty() {
            None
        } else {
            Some(globset("--include", include)?)
        };
        let exclude = globset("--exclude", exclude)?;
        // The `*` group applies to a crawler robots.txt does not name; the agent's token is
        // one no site names, so it gets exactly that group.
        let robots = robots_txt
            .and_then(|txt| texting_robots::Robot::new("webcoop-agent-listing", txt).ok());
        let (own_files, own_prefixes) = match own_dir {
            Some(dir) => {
                let p = |name: &str| {
                    if dir.is_empty() {
                        name.to_string()
                    } else {
                        format!("{dir}/{name}")
                    }
                };
                let mut files = vec![p(crate::publish::ROBOTS_RDF), p(crate::publish::SITEMAP)];
                files.extend(extra.iter().map(|f| p(f)));
                (
                    files,
                    vec![(
                        p(crate::publish::SITEMAP_PART_PREFIX),
                        crate::publish::SITEMAP_PART_SUFFIX.to_string(),
                    )],
                )
            }
            None => (Vec::new(), Vec::new()),
        };
        Ok(PublicFilter {
            include,
            exclude,
            robots,
            own_files,
            own_prefixes,
        })
    }

    /// Whether a directory may hold public files; a refused directory is not walked at all.
    pub fn check_dir(&self, rel: &str) -> Result<(), Exclusion> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name.starts_with('.') {
            return Err(Exclusion::Hidden);
        }
        if VCS_DIRS.contains(&name) {
            return Err(Exclusion::VersionControl);
        }
        if self.exclude.is_match(rel) || self.excludes_whole_dir(rel) {
            return Err(Exclusion::ExcludedByPattern);
        }
        Ok(())
    }

    fn excludes_whole_dir(&self, rel: &str) -> bool {
        // A directory is pruned only when a glob excludes everything beneath it (`drafts/**`);
        // probing two unlikely names at two depths keeps `drafts/*.tmp` from pruning it.
        self.exclude.is_match(format!("{rel}/x"))
            && self.exclude.is_match(format!("{rel}/y.webcoop-probe/z"))
    }

    /// Whether a file is public.
    pub fn check_file(&self, rel: &str) -> Result<(), Exclusion> {
        let mut segments = rel.split('/').peekable();
        while let Some(seg) = segments.next() {
            if seg.starts_with('.') {
                return Err(if matches!(seg, ".htaccess" | ".htpasswd") {
                    Exclusion::ServerConfig
                } else {
                    Exclusion::Hidden
                });
            }
            if segments.peek().is_some() && VCS_DIRS.contains(&seg) {
                return Err(Exclusion::VersionControl);
            }
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if SERVER_CONFIG.contains(&name) {
            return Err(Exclusion::ServerConfig);
        }
        if BACKUP_SUFFIXES.iter().any(|s| name.ends_with(s))
            || (name.starts_with('#') && name.ends_with('#'))
        {
            return Err(Exclusion::Backup);
        }
        if self.own_files.iter().any(|f| f == rel)
            || self
                .own_prefixes
                .iter()
                .any(|(p, s)| rel.starts_with(p.as_str()) && rel.ends_with(s.as_str()))
        {
            return Err(Exclusion::AgentOutput);
        }
        if self.exclude.is_match(rel) {
            return Err(Exclusion::ExcludedByPattern);
        }
        if let Some(include) = &self.include
            && !include.is_match(rel)
        {
            return Err(Exclusion::NotIncluded);
        }
        if let Some(robots) = &self.robots
            && !robots.allowed(&format!("/{rel}"))
        {
            return Err(Exclusion::RobotsTxt);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter() -> PublicFilter {
        PublicFilter::new(
            &[],
            &["drafts/**".into(), "*.log".into()],
            Some(b"User-agent: *\nDisallow: /private/\nDisallow: /*.pdf$\n\nUser-agent: Googlebot\nDisallow: /\n"),
            Some(""),
        )
        .unwrap()
    }

    #[test]
    fn secrets_and_editor_droppings_are_never_public() {
        let f = filter();
        for (path, why) in [
            (".htpasswd", Exclusion::ServerConfig),
            ("admin/.htaccess", Exclusion::ServerConfig),
            (".git/config", Exclusion::Hidden),
            ("a/.env", Exclusion::Hidden),
            (".well-known/webcoop/changes.atom", Exclusion::Hidden),
            ("index.html~", Exclusion::Backup),
            ("index.html.bak", Exclusion::Backup),
            ("page.swp", Exclusion::Backup),
            ("patch.orig", Exclusion::Backup),
            ("#notes.txt#", Exclusion::Backup),
            ("CVS/Entries", Exclusion::VersionControl),
            ("web.config", Exclusion::ServerConfig),
            ("drafts/post.html", Exclusion::ExcludedByPattern),
            ("logs/access.log", Exclusion::ExcludedByPattern),
            ("private/salaries.html", Exclusion::RobotsTxt),
            ("docs/manual.pdf", Exclusion::RobotsTxt),
            ("robots.rdf", Exclusion::AgentOutput),
            ("sitemap.xml", Exclusion::AgentOutput),
            ("sitemap-3.xml.gz", Exclusion::AgentOutput),
        ] {
            assert_eq!(f.check_file(path), Err(why), "{path}");
        }
        for ok in [
            "index.html",
            "docs/manual.pdf.html",
            "CVS.html",
            "robots.txt",
            "sitemap-notes.html",
            "a/b/c.css",
        ] {
            assert_eq!(f.check_file(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn directories_are_pruned_only_when_wholly_excluded() {
        let f = filter();
        assert_eq!(f.check_dir(".git"), Err(Exclusion::Hidden));
        assert_eq!(f.check_dir("a/.svn"), Err(Exclusion::Hidden));
        assert_eq!(f.check_dir("CVS"), Err(Exclusion::VersionControl));
        assert_eq!(f.check_dir("drafts"), Err(Exclusion::ExcludedByPattern));
        assert_eq!(f.check_dir("logs"), Ok(()));
        assert_eq!(f.check_dir("docs"), Ok(()));
    }

    #[test]
    fn include_patterns_restrict_and_bad_patterns_are_named() {
        let f = PublicFilter::new(&["**/*.html".into()], &[], None, None).unwrap();
        assert_eq!(f.check_file("a/b.html"), Ok(()));
        assert_eq!(f.check_file("a/b.css"), Err(Exclusion::NotIncluded));
        // Output outside the docroot: a file named robots.rdf is just a file.
        let f = PublicFilter::new(&[], &[], None, None).unwrap();
        assert_eq!(f.check_file("robots.rdf"), Ok(()));
        let e = PublicFilter::new(&[], &["a/[".into()], None, None)
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("--exclude") && e.to_string().contains("a/["),
            "{e}"
        );
    }

    #[test]
    fn output_in_a_subdirectory_is_recognised() {
        let f = PublicFilter::new(&[], &[], None, Some("meta")).unwrap();
        assert_eq!(f.check_file("meta/robots.rdf"), Err(Exclusion::AgentOutput));
        assert_eq!(f.check_file("robots.rdf"), Ok(()));
    }
}

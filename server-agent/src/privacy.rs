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
pub(crate) enum Exclusion {
    /// A dotfile or anything in a dot-directory (`.git/`, `.htpasswd`, `.env`, `.well-known/`).
    Hidden,
    /// A version-control directory without a dot (`CVS/`, `RCS/`, `SCCS/`, `_darcs/`).
    VersionControl,
    /// A directory servers keep to themselves (a Java web application's `WEB-INF/` and
    /// `META-INF/`: its classes, libraries and descriptors).
    ServerPrivate,
    /// An editor or backup file (`~`, `.bak`, `.swp`, `.orig`, `#autosave#`, ...).
    Backup,
    /// A secret by its name (a key, a database, a dump, a log, infrastructure state...):
    /// the class, from [`crate::secrets`].
    Secret(&'static str),
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
    /// Run by the web server (`.php`, `.cgi`, `.py`...): its source must never be shown.
    ServerSide,
    /// In a place whose server rules depend on who asks, or are not understood
    /// (`.htaccess` or `--server-config`): the judge cannot see what others get there.
    HiddenFromJudge,
    /// The site's robots.txt exists but could not be read or parsed: nothing is published
    /// until it can be.
    RobotsTxtUnreadable,
}

impl fmt::Display for Exclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Exclusion::Hidden => "hidden",
            Exclusion::VersionControl => "version control",
            Exclusion::ServerPrivate => "a server's private directory (WEB-INF/, META-INF/)",
            Exclusion::Backup => "editor or backup file",
            Exclusion::Secret(class) => class,
            Exclusion::ServerConfig => "server configuration",
            Exclusion::ExcludedByPattern => "--exclude",
            Exclusion::NotIncluded => "not --include'd",
            Exclusion::RobotsTxt => "robots.txt",
            Exclusion::AgentOutput => "agent output",
            Exclusion::ServerSide => "run by the web server",
            Exclusion::HiddenFromJudge => {
                "hidden: the server's rules for it depend on who asks, or are not understood"
            }
            Exclusion::RobotsTxtUnreadable => "robots.txt unreadable",
        })
    }
}

/// A bad glob, named.
#[derive(Debug, thiserror::Error)]
#[error("bad {kind} pattern {pattern:?}: {reason}")]
pub struct PatternError {
    /// `--include` or `--exclude`.
    pub(crate) kind: &'static str,
    /// The glob.
    pub(crate) pattern: String,
    /// Why.
    pub(crate) reason: String,
}

const VCS_DIRS: &[&str] = &["CVS", "RCS", "SCCS", "_darcs", "_MTN", "{arch}"];

/// Directories servers keep to themselves, whatever their case (Java servlet containers
/// never serve them; a copied web application leaks its descriptors and classes through them).
const SERVER_PRIVATE_DIRS: &[&str] = &["web-inf", "meta-inf"];

fn server_private(segment: &str) -> bool {
    SERVER_PRIVATE_DIRS
        .iter()
        .any(|d| segment.eq_ignore_ascii_case(d))
}

/// Extensions the web server runs instead of showing (Apache's `AddHandler` runs `x.php.html`
/// as PHP too, so these count anywhere after the first dot of a name).
const EXECUTED_EXTS: &[&str] = &[
    "php", "phtml", "pht", "phar", "php3", "php4", "php5", "php6", "php7", "php8", "php9", "phps",
    "cgi", "fcgi", "pl", "pm", "py", "rb", "asp", "aspx", "ascx", "ashx", "asmx", "jsp", "jspx",
    "shtml", "inc",
];

/// The rules deciding which paths (relative to the docroot, `/`-separated) are public.
pub(crate) struct PublicFilter {
    include: Option<GlobSet>,
    exclude: GlobSet,
    robots: Robots,
    /// Extensions of [`EXECUTED_EXTS`] and of [`crate::secrets`] the webmaster publishes anyway.
    publish_ext: Vec<String>,
    access: crate::server_config::ServerRules,
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

/// What the site's robots.txt says to the listing.
enum Robots {
    /// None, or ignored.
    Absent,
    /// Parsed.
    Parsed(Box<texting_robots::Robot>),
    /// Present but unreadable or unparseable (why): fail closed.
    Unreadable(String),
}

/// Why a robots.txt is not one, if it is not: RFC 9309 files are UTF-8 lines that are empty,
/// comments or `name: value` records. An HTML error page, a binary file or a file cut in the
/// middle of a write would otherwise read as "no rules", and publish everything.
pub(crate) fn robots_txt_problem(txt: &[u8]) -> Option<String> {
    let Ok(text) = std::str::from_utf8(txt) else {
        return Some("it is not UTF-8".into());
    };
    if text.contains('\0') {
        return Some("it holds NUL bytes".into());
    }
    text.lines().enumerate().find_map(|(i, line)| {
        let content = line.split('#').next().unwrap_or("").trim();
        (!content.is_empty() && !content.contains(':'))
            .then(|| format!("line {} is not a record ({:?})", i + 1, truncate(line, 60)))
    })
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The site's robots.txt as the agent found it.
pub(crate) enum RobotsTxt<'a> {
    /// There is none, or it is ignored.
    Absent,
    /// Its bytes.
    Bytes(&'a [u8]),
    /// It exists but could not be read (why).
    Unreadable(String),
}

/// Everything a [`PublicFilter`] is built from.
#[derive(Default)]
pub(crate) struct FilterRules<'a> {
    /// `--include` globs (empty: everything).
    pub(crate) include: &'a [String],
    /// `--exclude` globs.
    pub(crate) exclude: &'a [String],
    /// Extensions published although the server would run or hide them (`--publish-ext`).
    pub(crate) publish_ext: &'a [String],
    /// The site's robots.txt.
    pub(crate) robots_txt: Option<RobotsTxt<'a>>,
    /// Where the output directory lies within the docroot (`Some("")` when it is the docroot).
    pub(crate) own_dir: Option<&'a str>,
    /// More files the agent writes there (the IndexNow key file).
    pub(crate) own_files: &'a [String],
    /// Places the server's rules hide from the judge.
    pub(crate) access: crate::server_config::ServerRules,
}

/// Whether a file name has an extension the web server runs, anywhere after its first dot.
fn executed(name: &str, publish_ext: &[String]) -> bool {
    let lower = name.to_ascii_lowercase();
    let published = |e: &str| publish_ext.iter().any(|p| p.eq_ignore_ascii_case(e));
    lower
        .split('.')
        .skip(1)
        .any(|e| EXECUTED_EXTS.contains(&e) && !published(e))
}

impl PublicFilter {
    /// Rules from the settings. `robots_txt` is the site's robots.txt, if it has one and it is
    /// to be respected; `own_dir` is where the agent's output directory lies within the docroot
    /// (`Some("")` when it is the docroot itself, `None` when outside). The agent builds its
    /// filter with [`PublicFilter::from_rules`]; this shorter form is for tests.
    #[cfg(test)]
    pub(crate) fn new(
        include: &[String],
        exclude: &[String],
        robots_txt: Option<&[u8]>,
        own_dir: Option<&str>,
    ) -> Result<Self, PatternError> {
        Self::from_rules(FilterRules {
            include,
            exclude,
            robots_txt: robots_txt.map(RobotsTxt::Bytes),
            own_dir,
            ..FilterRules::default()
        })
    }

    /// The filter for `rules`.
    pub(crate) fn from_rules(rules: FilterRules) -> Result<Self, PatternError> {
        let include = if rules.include.is_empty() {
            None
        } else {
            Some(globset("--include", rules.include)?)
        };
        let exclude = globset("--exclude", rules.exclude)?;
        // The `*` group applies to a crawler robots.txt does not name; the agent's token is
        // one no site names, so it gets exactly that group. Crawlers parse at most 500 KiB
        // (RFC 9309), so the listing reads no more.
        let robots = match rules.robots_txt {
            None | Some(RobotsTxt::Absent) => Robots::Absent,
            Some(RobotsTxt::Unreadable(why)) => Robots::Unreadable(why),
            Some(RobotsTxt::Bytes(txt)) => {
                let txt = &txt[..txt.len().min(500 << 10)];
                match robots_txt_problem(txt) {
                    Some(why) => Robots::Unreadable(why),
                    None => match texting_robots::Robot::new("webcoop-agent-listing", txt) {
                        Ok(r) => Robots::Parsed(Box::new(r)),
                        Err(e) => Robots::Unreadable(e.to_string()),
                    },
                }
            }
        };
        let (own_files, own_prefixes) = match rules.own_dir {
            Some(dir) => {
                let p = |name: &str| {
                    if dir.is_empty() {
                        name.to_string()
                    } else {
                        format!("{dir}/{name}")
                    }
                };
                let mut files = vec![p(crate::publish::ROBOTS_RDF), p(crate::publish::SITEMAP)];
                files.extend(rules.own_files.iter().map(|f| p(f)));
                let parts = [
                    (
                        crate::publish::SITEMAP_PART_PREFIX,
                        crate::publish::SITEMAP_PART_SUFFIX,
                    ),
                    crate::publish::listing_parts::PART_NAME,
                ];
                let parts = parts
                    .iter()
                    .map(|(prefix, suffix)| (p(prefix), suffix.to_string()))
                    .collect();
                (files, parts)
            }
            None => (Vec::new(), Vec::new()),
        };
        Ok(PublicFilter {
            include,
            exclude,
            robots,
            publish_ext: rules
                .publish_ext
                .iter()
                .map(|e| e.trim().trim_start_matches('.').to_ascii_lowercase())
                .collect(),
            access: rules.access,
            own_files,
            own_prefixes,
        })
    }

    /// The places the server's rules hide from the judge, for the start-up log.
    pub(crate) fn access(&self) -> &crate::server_config::ServerRules {
        &self.access
    }

    /// Why the site's robots.txt could not be read, if it could not: nothing is published.
    pub(crate) fn robots_unreadable(&self) -> Option<&str> {
        match &self.robots {
            Robots::Unreadable(why) => Some(why),
            _ => None,
        }
    }

    /// Whether a directory may hold public files; a refused directory is not walked at all.
    pub(crate) fn check_dir(&self, rel: &str) -> Result<(), Exclusion> {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name.starts_with('.') {
            return Err(Exclusion::Hidden);
        }
        if VCS_DIRS.contains(&name) {
            return Err(Exclusion::VersionControl);
        }
        if server_private(name) {
            return Err(Exclusion::ServerPrivate);
        }
        if self.exclude.is_match(rel) || self.excludes_whole_dir(rel) {
            return Err(Exclusion::ExcludedByPattern);
        }
        if self.access.hides_dir(rel).is_some() {
            return Err(Exclusion::HiddenFromJudge);
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
    pub(crate) fn check_file(&self, rel: &str) -> Result<(), Exclusion> {
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
            if segments.peek().is_some() && server_private(seg) {
                return Err(Exclusion::ServerPrivate);
            }
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        // Emacs' autosaves and MS Office's lock files.
        if (name.starts_with('#') && name.ends_with('#')) || name.starts_with("~$") {
            return Err(Exclusion::Backup);
        }
        if executed(name, &self.publish_ext) {
            return Err(Exclusion::ServerSide);
        }
        if let Some(class) = crate::secrets::class_of(name, &self.publish_ext) {
            return Err(if class.name == crate::secrets::BACKUP {
                Exclusion::Backup
            } else {
                Exclusion::Secret(class.name)
            });
        }
        if self.access.hides(rel).is_some() {
            return Err(Exclusion::HiddenFromJudge);
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
        match &self.robots {
            Robots::Absent => Ok(()),
            Robots::Unreadable(_) => Err(Exclusion::RobotsTxtUnreadable),
            Robots::Parsed(robots) if !robots.allowed(&format!("/{rel}")) => {
                Err(Exclusion::RobotsTxt)
            }
            Robots::Parsed(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter() -> PublicFilter {
        PublicFilter::new(
            &[],
            &["drafts/**".into(), "*.log".into(), "logs/*.txt".into()],
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
            ("app/WEB-INF/web.xml", Exclusion::ServerPrivate),
            ("app/web-inf/lib/x.jar", Exclusion::ServerPrivate),
            ("META-INF/MANIFEST.MF", Exclusion::ServerPrivate),
            ("web.config", Exclusion::Secret("a configuration file")),
            ("drafts/post.html", Exclusion::ExcludedByPattern),
            ("logs/access.log", Exclusion::Secret("a log")),
            ("logs/access.txt", Exclusion::ExcludedByPattern),
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
    fn what_the_server_runs_or_keeps_is_never_public_unless_asked() {
        let f = filter();
        for p in [
            "wp-config.php",
            "a/index.PHP",
            "x.php5",
            "shell.php.html",
            "cgi-bin/run.cgi",
            "tool.pl",
            "app.py",
            "app.rb",
            "default.aspx",
            "page.jsp",
            "shell.pht",
            "lib.phar",
            "old.php3",
            "new.php8",
            "header.shtml",
            "db.inc",
        ] {
            assert_eq!(f.check_file(p), Err(Exclusion::ServerSide), "{p}");
        }
        for (p, class) in [
            ("site.env", "a key or credentials"),
            ("server.key", "a key or credentials"),
            ("cert.pem", "a key or credentials"),
            ("id.p12", "a key or credentials"),
            ("keys/id_ed25519", "a key or credentials"),
            ("dump.sql", "a dump"),
            ("dump.sql.gz", "a dump"),
            ("site.tar", "an archive of the site (a backup)"),
            ("site.tar.gz", "an archive of the site (a backup)"),
            ("site.tar.zst", "an archive of the site (a backup)"),
            ("site.tgz", "an archive of the site (a backup)"),
            ("site.zip", "an archive of the site (a backup)"),
            ("error.log", "a log"),
            ("error_log", "a log"),
            ("access.log.1", "a log"),
            ("access.log.2.gz", "a log"),
            ("shop.db-wal", "a database or its journal"),
            ("infra/terraform.tfstate", "infrastructure state"),
            ("core.4242", "a dump"),
            ("docker-compose.yml", "infrastructure state"),
            ("compose.yaml", "infrastructure state"),
            ("docker-compose.prod.yml", "infrastructure state"),
            ("deploy/compose.staging.yaml", "infrastructure state"),
        ] {
            assert_eq!(f.check_file(p), Err(Exclusion::Secret(class)), "{p}");
        }
        assert_eq!(f.check_file("INDEX.HTML.BAK"), Err(Exclusion::Backup));
        assert_eq!(f.check_file("~$report.docx"), Err(Exclusion::Backup));
        for p in [
            "index.html",
            "a.tar.html",
            "v1.2.3.html",
            "style.css",
            "b.js",
            "logo.png",
        ] {
            assert_eq!(f.check_file(p), Ok(()), "{p}");
        }
        let widened = PublicFilter::from_rules(FilterRules {
            publish_ext: &[".py".into(), "ZIP".into()],
            ..FilterRules::default()
        })
        .unwrap();
        assert_eq!(widened.check_file("examples/app.py"), Ok(()));
        assert_eq!(widened.check_file("release.zip"), Ok(()));
        assert_eq!(widened.check_file("x.php"), Err(Exclusion::ServerSide));
    }

    #[test]
    fn an_unreadable_robots_txt_publishes_nothing() {
        let f = PublicFilter::from_rules(FilterRules {
            robots_txt: Some(RobotsTxt::Unreadable("permission denied".into())),
            ..FilterRules::default()
        })
        .unwrap();
        assert_eq!(f.robots_unreadable(), Some("permission denied"));
        assert_eq!(
            f.check_file("index.html"),
            Err(Exclusion::RobotsTxtUnreadable)
        );
        for (txt, why) in [
            (&b"User-agent: *\nDisallow: /a\n\xff\xfe"[..], "UTF-8"),
            (b"<html><body>Not Found</body></html>\n", "line 1"),
            (b"User-agent: *\nDisallow /private/\n", "line 2"),
            (b"User-agent: *\0\nDisallow: /\n", "NUL"),
        ] {
            let f = PublicFilter::new(&[], &[], Some(txt), None).unwrap();
            assert!(
                f.robots_unreadable().is_some_and(|w| w.contains(why)),
                "{:?}: {:?}",
                String::from_utf8_lossy(txt),
                f.robots_unreadable()
            );
            assert_eq!(f.check_file("a.html"), Err(Exclusion::RobotsTxtUnreadable));
        }
        // Comments, blank lines, unknown records and CRLF are all fine.
        let fine = b"# hello\r\n\r\nUser-agent: *\r\nDisallow: /x # why\r\nFoo-bar: baz\r\n";
        let f = PublicFilter::new(&[], &[], Some(fine), None).unwrap();
        assert_eq!(f.robots_unreadable(), None);
        assert_eq!(f.check_file("a.html"), Ok(()));
    }

    #[test]
    fn directories_are_pruned_only_when_wholly_excluded() {
        let f = filter();
        assert_eq!(f.check_dir(".git"), Err(Exclusion::Hidden));
        assert_eq!(f.check_dir("a/.svn"), Err(Exclusion::Hidden));
        assert_eq!(f.check_dir("CVS"), Err(Exclusion::VersionControl));
        assert_eq!(f.check_dir("shop/WEB-INF"), Err(Exclusion::ServerPrivate));
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

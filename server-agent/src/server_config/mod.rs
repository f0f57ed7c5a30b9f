//! What the judge cannot see, read from the web server's configuration.
//!
//! The judge ([`crate::judge`]) asks the server for each file as a stranger would: from an
//! address of its own that no configuration names, without credentials. Rules the same for
//! everyone (a `return`, a handler, a `deny all`) and rules that can only refuse a stranger (a
//! password, an `allow` of another network) show in its answer. What remains are rules that
//! could let the judge in where the world is refused: grants to loopback, `local`, this
//! machine's own addresses or a network holding the judge's address, decisions on a value that
//! depends on who asks (the client's headers, cookies, a `map` or `geo` of them), decisions the
//! agent cannot see (`auth_request`, code), and anything not understood. The reader only ever
//! hides: each such rule hides the places it governs, matched with the server's own semantics,
//! and the places of rules that merely depend on who asks are noted for `check`.

mod apache;
mod apache_vars;
pub(crate) mod directives;
mod grants;
pub(crate) mod includes;
pub(crate) mod matcher;
mod moves;
pub(crate) mod nginx;

pub use grants::{JudgeFacts, local_addresses};
pub(crate) use includes::ApacheIncludes;

use includes::IncludeSource;
use matcher::{Candidate, Matcher};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Configuration files larger than this are not parsed; what they govern is hidden instead.
const MAX_RULES_FILE: u64 = 1 << 20;

/// The name `.htaccess` files have unless `AccessFileName` says otherwise.
const DEFAULT_ACCESS_FILE: &str = ".htaccess";

/// A place governed by a rule, with where the rule was read and what it does there.
#[derive(Debug, Clone)]
pub struct Hidden {
    matcher: Matcher,
    /// Where the rule was read, and why (`site.conf:12: allow 127.0.0.1 lets the judge in`).
    pub(crate) source: String,
}

impl fmt::Display for Hidden {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.matcher, self.source)
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

/// A virtual host (Apache) or server block (nginx) as its configuration defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vhost {
    /// Where it opens: file and line.
    pub(crate) at: (String, usize),
    /// What it listens on, as written (`*:80`, `127.0.0.1:8080 default_server`, `443 ssl`).
    pub(crate) listens: Vec<String>,
    /// `server_name`s, or `ServerName` and `ServerAlias`, lower case.
    pub(crate) names: Vec<String>,
    /// Its `root` or `DocumentRoot`, as written.
    pub(crate) docroot: Option<String>,
}

/// The site as the configuration sees it, and who the judge is.
#[derive(Debug, Clone, Copy)]
pub struct Site<'a> {
    /// The docroot (canonical).
    pub docroot: &'a Path,
    /// Every spelling of the docroot, absolute: the canonical one, the one the operator gave,
    /// the one the server's configuration names (a symlink not resolved).
    pub spellings: &'a [String],
    /// The base URL's path (`/` usually).
    pub base_path: &'a str,
    /// The base URL's host.
    pub host: &'a str,
    /// Directives declared to serve every client alike (`--trust-directive`), lower case.
    pub trusted: &'a [String],
    /// Who the judge is.
    pub judge: &'a JudgeFacts,
    /// The virtual hosts or server blocks that answer the site (file, line), when known:
    /// only their rules are read. `None`: all of them, as any may answer.
    pub vhosts: Option<&'a [(String, usize)]>,
    /// Apache's `Define`s and environment in effect when it read its configuration.
    pub defines: &'a [(String, String)],
}

/// Every place a site's configuration hides, and what was read to find them.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerRules {
    hidden: Vec<Hidden>,
    /// Places governed by rules that depend on who asks but refuse the judge as a stranger.
    notes: Vec<Hidden>,
    /// The configuration files read (watched: a change means new rules).
    sources: Vec<PathBuf>,
    /// `include` patterns' directories (a new file there means new rules).
    watched_dirs: Vec<PathBuf>,
    /// Apache's `AccessFileName`s, when a configuration named them.
    access_files: Vec<String>,
    /// The docroot's spellings and the base path, to match rules against.
    spellings: Vec<String>,
    base_path: String,
    /// Internal moves whose destination no file read so far hides: weighed again as each
    /// file adds its places (an `.htaccess` rewrite into a place the main configuration hides).
    moves: Vec<moves::Move>,
}

impl ServerRules {
    /// No rules.
    pub(crate) fn none() -> ServerRules {
        ServerRules::default()
    }

    /// No rules yet, for `site`.
    pub(crate) fn for_site(site: Site) -> ServerRules {
        let mut spellings: Vec<String> = site.spellings.to_vec();
        let canonical = site.docroot.display().to_string();
        if !spellings.contains(&canonical) {
            spellings.push(canonical);
        }
        ServerRules {
            spellings,
            base_path: site.base_path.to_string(),
            ..ServerRules::default()
        }
    }

    /// Hides everything (a configuration that cannot be read governs all of the site).
    pub(crate) fn hide_all(&mut self, why: String) {
        self.hidden.push(Hidden {
            matcher: Matcher::UrlPrefix("/".into()),
            source: why,
        });
    }

    /// The server configuration files the rules come from, includes too.
    pub(crate) fn sources(&self) -> Vec<PathBuf> {
        self.sources.clone()
    }

    /// The directories whose listing the rules depend on (include globs).
    pub(crate) fn watched_dirs(&self) -> &[PathBuf] {
        &self.watched_dirs
    }

    /// The hidden places, for the start-up log and `check`.
    pub(crate) fn hidden(&self) -> &[Hidden] {
        &self.hidden
    }

    fn candidate(&self, rel: &str) -> Candidate {
        let base = if self.base_path.is_empty() {
            "/"
        } else {
            &self.base_path
        };
        Candidate::file(rel, base, &self.spellings)
    }

    /// Why a docroot-relative file (`private/a.html`) is hidden, if it is.
    pub(crate) fn hides(&self, rel: &str) -> Option<&Hidden> {
        if self.hidden.is_empty() {
            return None;
        }
        let c = self.candidate(rel);
        self.hidden.iter().find(|r| r.matcher.governs(&c))
    }

    /// The rule that depends on who asks governing a file the judge may still be served,
    /// if one does.
    pub(crate) fn noted(&self, rel: &str) -> Option<&Hidden> {
        if self.notes.is_empty() {
            return None;
        }
        let c = self.candidate(rel);
        self.notes.iter().find(|r| r.matcher.governs(&c))
    }

    /// Why a directory is hidden whole, if it is (rules on file names are checked per file).
    pub(crate) fn hides_dir(&self, rel: &str) -> Option<&Hidden> {
        if self.hidden.is_empty() {
            return None;
        }
        // A name no rule can end with: what governs it governs every file there.
        let probe = if rel.is_empty() {
            "\u{0}".to_string()
        } else {
            format!("{rel}/\u{0}")
        };
        let c = self.candidate(&probe);
        self.hidden.iter().find(|r| r.matcher.governs_whole_dir(&c))
    }

    fn take(&mut self, hidden: Vec<Hidden>, notes: Vec<Hidden>, moves: Vec<moves::Move>) {
        self.hidden.extend(hidden);
        self.notes.extend(notes);
        self.moves.extend(moves);
        let pending = std::mem::take(&mut self.moves);
        let site = (self.base_path.as_str(), self.spellings.as_slice());
        self.moves = moves::settle(&mut self.hidden, pending, site);
    }

    /// The names of the per-directory files Apache reads.
    pub(crate) fn access_file_names(&self) -> Vec<String> {
        if self.access_files.is_empty() {
            vec![DEFAULT_ACCESS_FILE.to_string()]
        } else {
            self.access_files.clone()
        }
    }

    /// Adds the rules of every per-directory file (`.htaccess`, or what `AccessFileName`
    /// names) from the file system's root down to every directory of the docroot: Apache
    /// reads them all where `AllowOverride` permits, and reading one Apache would not read
    /// only hides more. For a server that `ignores` them (nginx), every place one of them
    /// means to protect is hidden: the world is served what it meant to keep out, which the
    /// webmaster must hear of. Symlinks are not followed: the agent never publishes through a
    /// link that leaves the docroot anyway.
    pub(crate) fn add_htaccess_files(&mut self, site: Site, ignored: bool) {
        let names = self.access_file_names();
        // Above the docroot, under each of its spellings: each governs all of the site.
        let mut above: Vec<PathBuf> = Vec::new();
        for s in &self.spellings {
            for dir in Path::new(s).ancestors().skip(1) {
                for n in &names {
                    let f = dir.join(n);
                    if f.is_file() && !above.contains(&f) {
                        above.push(f);
                    }
                }
            }
        }
        for f in above {
            self.add_htaccess(&f, None, site, ignored);
        }
        let walk = walkdir::WalkDir::new(site.docroot)
            .follow_links(false)
            .into_iter();
        for entry in walk.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy();
            if entry.file_type().is_file() && names.iter().any(|n| *n == name) {
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
                self.add_htaccess(entry.path(), Some(&rel_dir), site, ignored);
            }
        }
    }

    /// Adds one per-directory file governing the docroot-relative directory `rel_dir` (`""`
    /// for the docroot, else `/sub/dir`), or all of the site (`None`: above the docroot), for
    /// a server that reads it or `ignored` it.
    pub(crate) fn add_htaccess(
        &mut self,
        file: &Path,
        rel_dir: Option<&str>,
        site: Site,
        ignored: bool,
    ) {
        let source = |why: &str| format!("{}: {why}", file.display());
        let scope = Matcher::UrlPrefix(format!("{}/", rel_dir.unwrap_or("")));
        let text = match read_rules_file(file) {
            Ok(t) => t,
            Err(e) => {
                // Apache refuses a directory whose .htaccess it cannot read.
                self.hidden.push(Hidden {
                    matcher: scope,
                    source: source(&format!("{e}, so hidden whole")),
                });
                return;
            }
        };
        let name = file.display().to_string();
        match apache::read(
            &text,
            &name,
            apache::Context::Htaccess(rel_dir),
            site,
            IncludeSource::Disk,
        ) {
            Ok(r) if ignored => {
                for h in r.hidden.into_iter().chain(r.notes) {
                    self.hidden.push(Hidden {
                        matcher: h.matcher,
                        source: format!(
                            "{} (the server ignores .htaccess files, so it serves this to anyone although the file means to keep it from some: move the rule into its configuration)",
                            h.source
                        ),
                    });
                }
            }
            Ok(r) => self.take(r.hidden, r.notes, r.moves),
            Err(reason) => self.hidden.push(Hidden {
                matcher: scope,
                source: source(&format!("{reason}; hidden whole")),
            }),
        }
    }

    /// Adds the hidden places of an nginx or Apache configuration file and what it includes,
    /// read from the file system. A file that is only part of a configuration (a virtual
    /// host) is read with the main configuration above it, which holds the rest of the rules.
    pub(crate) fn add_server_config(
        &mut self,
        file: &Path,
        site: Site,
    ) -> Result<Survey, ServerConfigError> {
        let err = |reason: String| ServerConfigError {
            path: file.to_path_buf(),
            reason,
        };
        let text = read_rules_file(file).map_err(err)?;
        let mut survey = Survey::default();
        if looks_like_apache(&text) {
            let main = apache_main_above(file);
            let mut files = vec![file.to_path_buf()];
            if let Some(m) = &main
                && m != file
            {
                files.insert(0, m.clone());
                survey.main_found = Some(m.clone());
            }
            let mut read_already: Vec<PathBuf> = Vec::new();
            for f in files {
                if read_already.contains(&f) {
                    continue;
                }
                let r = read_apache_file(&f, site, IncludeSource::Disk)?;
                self.sources.push(f.clone());
                read_already.push(f.clone());
                read_already.extend(r.includes.iter().cloned());
                self.absorb_apache(r, &mut survey);
            }
            survey.kind = Some(ServerKind::Apache);
        } else {
            let prefix = nginx::prefix_of(file);
            let main = prefix.join("nginx.conf");
            let mut files = vec![file.to_path_buf()];
            // A file without the `http` block is a part (a site's server block): the rules
            // around it are in the main file, which includes it.
            let whole = nginx::parse(&text, &file.display().to_string())
                .map(|tree| tree.iter().any(|d| d.name == "http" || d.name == "events"))
                .unwrap_or(true);
            if main.is_file() && main != file && !whole {
                files.insert(0, main.clone());
                survey.main_found = Some(main);
            }
            let mut read_already: Vec<PathBuf> = Vec::new();
            for f in files {
                if read_already.contains(&f) {
                    continue;
                }
                let loaded = nginx::load(&f).map_err(|reason| ServerConfigError {
                    path: f.clone(),
                    reason,
                })?;
                self.sources.push(f.clone());
                read_already.push(f.clone());
                read_already.extend(loaded.includes.iter().cloned());
                self.absorb_nginx(&loaded, &prefix, site, &mut survey);
            }
            survey.kind = Some(ServerKind::Nginx);
        }
        Ok(survey)
    }

    /// Adds what `nginx -T` printed: `main` first, every file it loaded in `dumped`.
    pub(crate) fn add_nginx_dump(
        &mut self,
        main: &Path,
        dumped: &BTreeMap<PathBuf, String>,
        site: Site,
    ) -> Result<Survey, ServerConfigError> {
        let loaded = nginx::load_dump(main, dumped).map_err(|reason| ServerConfigError {
            path: main.to_path_buf(),
            reason,
        })?;
        let mut survey = Survey {
            kind: Some(ServerKind::Nginx),
            ..Survey::default()
        };
        self.sources.push(main.to_path_buf());
        let prefix = main.parent().unwrap_or(Path::new("/")).to_path_buf();
        self.absorb_nginx(&loaded, &prefix, site, &mut survey);
        Ok(survey)
    }

    /// Adds Apache's configuration as it listed what it read (`DUMP_INCLUDES`).
    pub(crate) fn add_apache_dump(
        &mut self,
        includes: &ApacheIncludes,
        site: Site,
    ) -> Result<Survey, ServerConfigError> {
        let main = &includes.main;
        let r = read_apache_file(main, site, IncludeSource::Apache(includes))?;
        let mut survey = Survey {
            kind: Some(ServerKind::Apache),
            ..Survey::default()
        };
        self.sources.push(main.clone());
        let mut read: Vec<PathBuf> = r.includes.clone();
        self.absorb_apache(r, &mut survey);
        // A file Apache listed that was not met at its place (a line number read otherwise):
        // read out of its place, its rules govern everything.
        for f in includes.all().into_iter().skip(1) {
            if read.contains(&f) {
                continue;
            }
            let r = read_apache_file(&f, site, IncludeSource::Apache(includes))?;
            read.push(f.clone());
            self.sources.push(f);
            read.extend(r.includes.iter().cloned());
            self.absorb_apache(r, &mut survey);
        }
        Ok(survey)
    }

    fn absorb_apache(&mut self, r: apache::Reading, survey: &mut Survey) {
        self.sources.extend(r.includes.iter().cloned());
        self.access_files.extend(r.access_files.iter().cloned());
        self.access_files.dedup();
        self.take(r.hidden, r.notes, r.moves);
        survey.vhosts.extend(r.vhosts);
        if r.main_docroot.is_some() {
            survey.main_docroot = r.main_docroot;
        }
    }

    fn absorb_nginx(
        &mut self,
        loaded: &nginx::Loaded,
        prefix: &Path,
        site: Site,
        survey: &mut Survey,
    ) {
        self.sources.extend(loaded.includes.iter().cloned());
        for p in &loaded.patterns {
            for d in includes::watched_dirs(p, prefix) {
                if !self.watched_dirs.contains(&d) {
                    self.watched_dirs.push(d);
                }
            }
        }
        let (hidden, notes, moves) = nginx::hidden_places(loaded, site);
        self.take(hidden, notes, moves);
        survey.vhosts.extend(nginx::server_blocks(&loaded.tree));
    }
}

/// Which server a configuration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// nginx.
    Nginx,
    /// Apache httpd.
    Apache,
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ServerKind::Nginx => "nginx",
            ServerKind::Apache => "Apache",
        })
    }
}

/// What reading a configuration learned besides its rules.
#[derive(Debug, Clone, Default)]
pub(crate) struct Survey {
    /// The server it is for.
    pub(crate) kind: Option<ServerKind>,
    /// Its virtual hosts or server blocks.
    pub(crate) vhosts: Vec<Vhost>,
    /// Apache's main `DocumentRoot`.
    pub(crate) main_docroot: Option<String>,
    /// The main configuration found above a file given alone (read with it).
    pub(crate) main_found: Option<PathBuf>,
}

/// Apache's main configuration above a file: `apache2.conf` or `httpd.conf` in a directory
/// above it (Debian's `/etc/apache2`), if there is one.
fn apache_main_above(file: &Path) -> Option<PathBuf> {
    let start = file.parent()?;
    start.ancestors().find_map(|d| {
        ["apache2.conf", "httpd.conf"]
            .iter()
            .map(|n| d.join(n))
            .find(|p| p.is_file())
    })
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
                patterns: Vec::new(),
            };
            Ok(nginx::hidden_places(&loaded, site).0)
        }
        TextKind::Apache => apache::read(
            text,
            "fuzz.conf",
            apache::Context::Text,
            site,
            IncludeSource::Disk,
        )
        .map(|r| r.hidden),
        TextKind::Htaccess => apache::read(
            text,
            ".htaccess",
            apache::Context::Htaccess(Some("")),
            site,
            IncludeSource::Disk,
        )
        .map(|r| r.hidden),
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

/// Reads one Apache configuration file in server context, its includes found through
/// `source`; an error names the file.
fn read_apache_file<'a>(
    file: &Path,
    site: Site,
    source: IncludeSource<'a>,
) -> Result<apache::Reading, ServerConfigError> {
    let err = |reason: String| ServerConfigError {
        path: file.to_path_buf(),
        reason,
    };
    let text = read_rules_file(file).map_err(err)?;
    apache::read(
        &text,
        &file.display().to_string(),
        apache::Context::Server { file },
        site,
        source,
    )
    .map_err(err)
}

/// Whether a configuration's text is Apache's (else it is read as nginx's): nginx ends its
/// directives with `;` and opens blocks with `{`; Apache has neither, and its sections are
/// `<Tags>`.
pub(crate) fn looks_like_apache(text: &str) -> bool {
    let mut nginx = 0;
    let mut apache = 0;
    for l in text.lines() {
        let t = l.split('#').next().unwrap_or("").trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with('<') && t.ends_with('>') {
            apache += 1;
        } else if t.ends_with(';') || t.ends_with('{') || t.ends_with('}') {
            nginx += 1;
        } else if !t.contains(['{', ';']) {
            apache += 1;
        }
    }
    apache > nginx
}

/// Whether a host matches server names as nginx and Apache read them: exact, `*.domain`,
/// `.domain` (nginx: the domain and its subdomains), `name.*`, `~regex`, `_` (any).
pub(crate) fn names_match(names: &[&String], host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    names.iter().any(|n| {
        let n = n.to_ascii_lowercase();
        if let Some(re) = n.strip_prefix('~') {
            return matcher::regex(re, true).is_ok_and(|r| r.is_match(&host).unwrap_or(true));
        }
        n == "_"
            || n == host
            || n.strip_prefix("*.")
                .is_some_and(|d| host.ends_with(&format!(".{d}")))
            || n.strip_prefix('.')
                .is_some_and(|d| host == d || host.ends_with(&format!(".{d}")))
            || n.strip_suffix(".*")
                .is_some_and(|d| host.starts_with(&format!("{d}.")))
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

/// What the tests of the configuration readers share.
#[cfg(test)]
pub(crate) mod testing;

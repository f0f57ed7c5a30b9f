//! The server's configuration as read for one site: from the server's own account (its
//! dump) when it can be had, else by following includes from the main file its process was
//! started with, and the files given with `--server-config` beside either.

use super::{Obtained, ServerProcess, ViewError, dump, reload};
use crate::server_config::{ServerKind, ServerRules, Site, Survey};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// What was read, in its first pass (every block) and how.
pub(super) struct Read {
    pub(super) rules: ServerRules,
    pub(super) survey: Survey,
    pub(super) obtained: Obtained,
    pub(super) resolved: HashMap<(String, usize), String>,
    pub(super) defines: Vec<(String, String)>,
    pub(super) pid_file: Option<PathBuf>,
    pub(super) prefix: Option<PathBuf>,
    pub(super) dumped_files: Vec<PathBuf>,
}

/// Reads the configuration for `site`: from the server's own dump when it can be had, else
/// from files; `given` (`--server-config`) is read too. None when nothing was to be read of
/// a server that is neither nginx nor Apache.
pub(super) fn read_config(
    kind: Option<ServerKind>,
    process: Option<&ServerProcess>,
    given: &[PathBuf],
    site: Site,
    dumps: &mut Dumps,
) -> Result<Option<Read>, ViewError> {
    let mut read = Read {
        rules: ServerRules::for_site(site),
        survey: Survey::default(),
        // Until known: replaced below before the reading is returned.
        obtained: Obtained::Declined,
        resolved: HashMap::new(),
        defines: Vec::new(),
        pid_file: None,
        prefix: None,
        dumped_files: Vec::new(),
    };
    let (mut obtained, mut why_not) = (None, None);
    if let Some(p) = process {
        match dumps.get(p) {
            Ok(d) => obtained = Some(read.take_dump(&d, p, site)?),
            Err(e) => why_not = Some(e),
        }
    }
    // The server could not tell: the main file its command line names (or its default),
    // read by following includes by hand. Never a guess where no server process was seen.
    let followed = match process {
        Some(p) if obtained.is_none() && given.is_empty() => {
            read.follow_main_file(p, site, &mut why_not)
        }
        _ => None,
    };
    // A file given beside the server's own account: read too, unless the server read it. Which
    // of its blocks answers is unknown, so all of them count (only hiding more).
    let mut extra = site;
    if obtained.is_some() {
        extra.vhosts = None;
    }
    for f in given.iter().filter(|f| !read.dumped_files.contains(f)) {
        let s = read.rules.add_server_config(f, extra)?;
        merge(&mut read.survey, s);
        read.prefix = read
            .prefix
            .take()
            .or_else(|| f.parent().map(Path::to_path_buf));
    }
    let files: Vec<PathBuf> = followed.into_iter().chain(given.iter().cloned()).collect();
    read.obtained = match (obtained, files.is_empty()) {
        (Some(o), _) => o,
        (None, false) => Obtained::Files {
            files,
            why: why_not,
        },
        (None, true) => return unreadable(kind, process, why_not).map(|()| None),
    };
    Ok(Some(read))
}

/// Nothing could be read: an error for nginx or Apache (saying how the server was known),
/// nothing to read for another server.
fn unreadable(
    kind: Option<ServerKind>,
    process: Option<&ServerProcess>,
    why_not: Option<String>,
) -> Result<(), ViewError> {
    let Some(kind) = kind else {
        return Ok(());
    };
    Err(ViewError::Unreadable {
        kind,
        how: process.map_or_else(
            || "it says so in its Server header".to_string(),
            |p| p.found_by.clone(),
        ),
        why: why_not
            .unwrap_or_else(|| "no process of it can be seen from this user to ask".to_string()),
    })
}

impl Read {
    /// Takes the server's own account of its configuration; how it was obtained.
    fn take_dump(
        &mut self,
        dump: &Dump,
        p: &ServerProcess,
        site: Site,
    ) -> Result<Obtained, ViewError> {
        match dump {
            Dump::Nginx(d) => {
                self.survey = self.rules.add_nginx_dump(&d.main, &d.files, site)?;
                self.prefix = d.main.parent().map(Path::to_path_buf);
                self.dumped_files = d.files.keys().cloned().collect();
                self.pid_file = nginx_pid_file(&d.files, &d.main);
                Ok(Obtained::Dumped {
                    by: format!("{} -T", p.exe.display()),
                    files: d.files.len(),
                })
            }
            Dump::Apache(d) => {
                let mut s = site;
                s.defines = &d.defines;
                self.survey = self.rules.add_apache_dump(&d.includes, s)?;
                self.resolved = d.vhost_addrs.clone();
                self.defines = d.defines.clone();
                self.pid_file = d.pid_file.clone();
                self.prefix = d.server_root.clone();
                self.dumped_files = d.includes.all();
                if self.survey.main_docroot.is_none() {
                    self.survey.main_docroot = d.main_docroot.clone();
                }
                Ok(Obtained::Dumped {
                    by: format!("{} -t -D DUMP_INCLUDES", p.exe.display()),
                    files: self.dumped_files.len(),
                })
            }
        }
    }

    /// Follows includes by hand from the main file `p` was started with; that file when it
    /// was read, and why the server's account was not used added to `why_not`.
    fn follow_main_file(
        &mut self,
        p: &ServerProcess,
        site: Site,
        why_not: &mut Option<String>,
    ) -> Option<PathBuf> {
        let main = main_file_of(p);
        let before = why_not.take().unwrap_or_default();
        match self.rules.add_server_config(&main, site) {
            Ok(s) => {
                merge(&mut self.survey, s);
                self.prefix = main.parent().map(Path::to_path_buf);
                *why_not = Some(format!(
                    "{before}; its files were read by following includes from {}",
                    main.display()
                ));
                Some(main)
            }
            Err(e) => {
                *why_not = Some(format!("{before}; {e}"));
                None
            }
        }
    }
}

/// The main configuration file a server process was started with: as its command line names
/// it (`-c`, `-f`, relative to `-p`, `-d`), else where Debian's builds look by default.
pub(super) fn main_file_of(p: &ServerProcess) -> PathBuf {
    let (flag, root_flag, root, name) = match p.kind {
        ServerKind::Nginx => ("-c", "-p", "/etc/nginx", "nginx.conf"),
        ServerKind::Apache => ("-f", "-d", "/etc/apache2", "apache2.conf"),
    };
    let value = |f: &str| {
        p.args
            .iter()
            .position(|a| a == f)
            .and_then(|i| p.args.get(i + 1))
    };
    let root = value(root_flag).map_or(PathBuf::from(root), PathBuf::from);
    match value(flag) {
        Some(f) if Path::new(f).is_absolute() => PathBuf::from(f),
        Some(f) => root.join(f),
        None if p.kind == ServerKind::Nginx => PathBuf::from("/etc/nginx/nginx.conf"),
        None => root.join(name),
    }
}

/// What a second reading adds to the survey.
fn merge(survey: &mut Survey, s: Survey) {
    if survey.kind.is_none() {
        survey.kind = s.kind;
    }
    survey.main_found = survey.main_found.take().or(s.main_found);
    survey.vhosts.extend(s.vhosts);
    survey.main_docroot = survey.main_docroot.take().or(s.main_docroot);
}

/// nginx's `pid` directive (in the main file), or its default.
fn nginx_pid_file(
    files: &std::collections::BTreeMap<PathBuf, String>,
    main: &Path,
) -> Option<PathBuf> {
    let text = files.get(main)?;
    let tree = crate::server_config::nginx::parse(text, "main").ok()?;
    Some(
        tree.iter()
            .find(|d| d.name == "pid")
            .and_then(|d| d.args.first())
            .map(PathBuf::from)
            .unwrap_or_else(|| reload::default_pid_file(ServerKind::Nginx)),
    )
}

/// A server's own account of its configuration, taken once per look.
pub(super) enum Dump {
    Nginx(dump::NginxDump),
    Apache(dump::ApacheDump),
}

/// Dumps taken during one look (each pass reads the same one).
#[derive(Default)]
pub(super) struct Dumps {
    taken: Option<Result<std::sync::Arc<Dump>, String>>,
}

impl Dumps {
    fn get(&mut self, p: &ServerProcess) -> Result<std::sync::Arc<Dump>, String> {
        self.taken
            .get_or_insert_with(|| {
                match p.kind {
                    ServerKind::Nginx => dump::nginx(p).map(Dump::Nginx),
                    ServerKind::Apache => dump::apache(p).map(Dump::Apache),
                }
                .map(std::sync::Arc::new)
            })
            .clone()
    }
}

//! The web server as the agent knows it: which process serves the site, what the server
//! itself says its configuration is, where a stranger's request for the site lands (so where
//! the judge asks, from an address of its own), and which rules of that configuration hide
//! files from the judge.
//!
//! The configuration is read from the server by default (`nginx -T`; Apache's
//! `DUMP_INCLUDES`, `DUMP_VHOSTS` and `DUMP_RUN_CFG`), from the process found listening on the
//! site's port. `--server-config FILE` adds files for unusual set-ups; `--server-config none`
//! says in words that who-asks rules are not to be looked for. A server that is nginx or Apache
//! and whose configuration cannot be read stops the agent at start.

pub(crate) mod dump;
mod listen;
mod probe;
pub(crate) mod process;
mod read;
pub(crate) mod reload;
#[cfg(test)]
mod tests;

pub(crate) use process::ServerProcess;

use crate::config::Config;
use crate::server_config::{
    JudgeFacts, ServerConfigError, ServerKind, ServerRules, Site, local_addresses,
};
use listen::{Choice, Facts};
use read::{Dumps, Read, read_config};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use url::Url;

/// How the agent learned the server's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Obtained {
    /// From the server itself: the command, and the number of files it read.
    Dumped {
        /// The command, as run.
        by: String,
        /// Files it named.
        files: usize,
    },
    /// Read by following includes from files (given with `--server-config`, or where the
    /// server keeps them), and why not from the server when that was tried.
    Files {
        /// The files read first.
        files: Vec<PathBuf>,
        /// Why the server's own account was not used, when it was tried.
        why: Option<String>,
    },
    /// Not read, as the operator said (`--server-config none`).
    Declined,
    /// Not read: the server is not one whose configuration the agent reads (what it said).
    NotApplicable(String),
}

impl std::fmt::Display for Obtained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Obtained::Dumped { by, files } => {
                write!(f, "read from the server itself ({by}: {files} files)")
            }
            Obtained::Files { files, why } => {
                let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
                write!(f, "read from {}", names.join(", "))?;
                if let Some(w) = why {
                    write!(f, " ({w})")?;
                }
                Ok(())
            }
            Obtained::Declined => f.write_str(
                "not read (--server-config none): rules that depend on who asks are not looked for",
            ),
            Obtained::NotApplicable(s) => write!(
                f,
                "not read: the server ({s}) is neither nginx nor Apache, so rules that depend on who asks are not looked for"
            ),
        }
    }
}

impl ServerView {
    /// What the console must say on every page while it lasts: the configuration not read,
    /// so rules that depend on who asks are not looked for.
    pub(crate) fn unread_note(&self) -> Option<String> {
        matches!(
            self.obtained,
            Obtained::Declined | Obtained::NotApplicable(_)
        )
        .then(|| {
            format!(
                "The web server's configuration was {}. Files a rule grants only to some \
                 clients may be published.",
                self.obtained
            )
        })
    }

    /// Every rule that hides files from the judge: the configuration's, and those of the
    /// per-directory files (`.htaccess`) as they are now.
    pub(crate) fn rules(&self, config: &Config) -> ServerRules {
        let mut rules = self.rules.clone();
        let host = config.base_url.host_str().unwrap_or_default();
        let site = Site {
            docroot: &config.docroot,
            spellings: &self.spellings,
            base_path: config.base_url.path(),
            host,
            trusted: &config.trust_directives,
            judge: &self.judge,
            vhosts: None,
            defines: &self.defines,
        };
        rules.add_htaccess_files(site, !self.reads_htaccess);
        rules
    }

    /// The names of per-directory files that count (`.htaccess` unless `AccessFileName`
    /// says otherwise; for nginx, which ignores them, what they mean to protect is hidden).
    pub(crate) fn access_file_names(&self) -> Vec<String> {
        self.rules.access_file_names()
    }

    /// The lines the start-up log and the console show of it.
    pub(crate) fn summary(&self) -> Vec<String> {
        let mut out = vec![format!(
            "the web server's configuration was {}",
            self.obtained
        )];
        if let Some(p) = &self.process {
            out.push(format!("the web server is {} ({})", p.kind, p.found_by));
        }
        out.push(format!(
            "the judge asks {} from {}, as a stranger: {}",
            self.server_url.origin().ascii_serialization(),
            self.judge.source,
            self.asked_there
        ));
        out
    }
}

/// Something the operator should know of the web server, and what to do about it if
/// anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Remark {
    /// What was found.
    pub(crate) text: String,
    /// What to change, when something should be.
    pub(crate) fix: Option<String>,
}

impl Remark {
    fn note(text: String) -> Remark {
        Remark { text, fix: None }
    }

    fn fix(text: String, fix: &str) -> Remark {
        Remark {
            text,
            fix: Some(fix.to_string()),
        }
    }
}

/// Why the agent cannot know its web server well enough to start.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// A configuration file that cannot be read or understood.
    #[error(transparent)]
    Config(#[from] ServerConfigError),
    /// nginx or Apache serves the site, and its configuration cannot be read.
    #[error(
        "the web server is {kind} ({how}), but its configuration cannot be read: {why}. Give --server-config FILE (its main configuration file), or --server-config none to publish without looking for rules that depend on who asks"
    )]
    Unreadable {
        /// nginx or Apache.
        kind: ServerKind,
        /// How it was recognised.
        how: String,
        /// What failed.
        why: String,
    },
    /// The judge's own address cannot be used.
    #[error("the judge's address: {0}")]
    Source(String),
}

/// What the agent knows of the web server that judges its files.
#[derive(Debug, Clone)]
pub(crate) struct ServerView {
    /// nginx or Apache, when known.
    pub(crate) kind: Option<ServerKind>,
    /// The server's process, when found.
    pub(crate) process: Option<ServerProcess>,
    /// How the configuration was learned.
    pub(crate) obtained: Obtained,
    /// What the configuration hides (per-directory files apart).
    rules: ServerRules,
    /// Whether per-directory files (`.htaccess`) count: not for nginx, which ignores them.
    reads_htaccess: bool,
    /// The docroot's spellings the rules are matched with.
    spellings: Vec<String>,
    /// Apache's `Define`s and environment.
    defines: Vec<(String, String)>,
    /// Who the judge is.
    pub(crate) judge: JudgeFacts,
    /// Where the judge asks (scheme, address, port).
    pub(crate) server_url: Url,
    /// Why there, in words.
    pub(crate) asked_there: String,
    /// Things the operator should know: a partial configuration, a loopback host over the
    /// docroot, a `--server-url` that reaches another host.
    pub(crate) warnings: Vec<Remark>,
    /// What to watch for a reload.
    pub(crate) watch: reload::Watch,
}

/// The addresses a host name has (a literal is its own).
fn addresses_of(host: &str, port: u16) -> Vec<IpAddr> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(a) = h.parse::<IpAddr>() {
        return vec![a];
    }
    (h, port)
        .to_socket_addrs()
        .map(|it| it.map(|s| s.ip()).collect())
        .unwrap_or_default()
}

/// The docroot's spellings: canonical, as given, and as the server's block names it.
fn spellings(config: &Config, server_root: Option<&str>, prefix: Option<&Path>) -> Vec<String> {
    let mut out = vec![config.docroot.display().to_string()];
    let mut add = |p: &Path| {
        let s = p.display().to_string();
        let s = if s.len() > 1 {
            s.trim_end_matches('/').to_string()
        } else {
            s
        };
        if !out.contains(&s) {
            out.push(s);
        }
    };
    add(&config.docroot_given);
    if let Some(r) = server_root {
        let p = Path::new(r);
        if p.is_absolute() {
            add(p);
        } else if let Some(prefix) = prefix {
            add(&prefix.join(p));
        }
    }
    out
}

/// Looks at the web server for the site of `config`, the judge asking from `source`.
pub(crate) fn look(config: &Config, source: IpAddr) -> Result<ServerView, ViewError> {
    let base = &config.base_url;
    let host = base.host_str().unwrap_or_default().to_string();
    let port = base.port_or_known_default().unwrap_or(80);
    let judge = JudgeFacts {
        source,
        local: local_addresses(),
    };
    let name_addrs = addresses_of(&host, port);
    // Where to look for the server: the --server-url given, else the site's own name.
    let given_url = config
        .judge
        .server_url_given
        .then(|| config.judge.server_url.clone());
    let mut warnings = Vec::new();
    let (process, kind, server_said) = match &given_url {
        Some(u) => {
            let p = u.port_or_known_default().unwrap_or(80);
            let addrs = addresses_of(u.host_str().unwrap_or_default(), p);
            find_server((p, &addrs), (&host, u.scheme()), &mut warnings)
        }
        None => find_server((port, &name_addrs), (&host, base.scheme()), &mut warnings),
    };
    let given_files = &config.server_config;
    let first_spellings = spellings(config, None, None);
    let mut site = Site {
        docroot: &config.docroot,
        spellings: &first_spellings,
        base_path: base.path(),
        host: &host,
        trusted: &config.trust_directives,
        judge: &judge,
        vhosts: None,
        defines: &[],
    };
    let mut dumps = Dumps::default();
    let first = if config.server_config_none {
        None
    } else {
        read_config(kind, process.as_ref(), given_files, site, &mut dumps)?
    };
    let Some(first) = first else {
        let (server_url, asked_there) =
            where_judge_asks(base, &host, None, given_url.as_ref(), &mut warnings);
        return Ok(ServerView {
            kind,
            process,
            obtained: not_read(config, server_said),
            rules: ServerRules::for_site(site),
            reads_htaccess: true,
            spellings: first_spellings.clone(),
            defines: Vec::new(),
            judge,
            asked_there,
            server_url,
            warnings,
            watch: reload::Watch::default(),
        });
    };
    let kind = kind.or(first.survey.kind);
    // Where a stranger's request lands, and which block answers it.
    let choice = kind.and_then(|k| answering_block(k, &first, (&host, port, &name_addrs), &judge));
    let docroot_written = choice
        .as_ref()
        .and_then(|c| c.docroot.clone())
        .or_else(|| first.survey.main_docroot.clone());
    let all_spellings = spellings(config, docroot_written.as_deref(), first.prefix.as_deref());
    site.spellings = &all_spellings;
    site.defines = &first.defines;
    let chosen: Vec<(String, usize)> = choice.iter().map(|c| c.vhost.clone()).collect();
    site.vhosts = choice.as_ref().map(|_| chosen.as_slice());
    // The second pass: the rules of the block that answers, with every spelling.
    let read = read_config(kind, process.as_ref(), given_files, site, &mut dumps)?.unwrap_or(first);
    let (server_url, asked_there) = where_judge_asks(
        base,
        &host,
        choice.as_ref(),
        given_url.as_ref(),
        &mut warnings,
    );
    warnings.extend(findings(config, kind, &read, choice.as_ref(), port));
    let watch = watch_of(&read, kind, process.as_ref());
    Ok(ServerView {
        kind,
        process,
        obtained: read.obtained.clone(),
        rules: read.rules,
        reads_htaccess: kind != Some(ServerKind::Nginx),
        spellings: all_spellings.clone(),
        defines: read.defines.clone(),
        judge,
        server_url,
        asked_there,
        warnings,
        watch,
    })
}

/// The block of the configuration read that answers a stranger's request for `host` on
/// `port`, and where that request lands.
fn answering_block(
    kind: ServerKind,
    read: &Read,
    (host, port, name_addrs): (&str, u16, &[IpAddr]),
    judge: &JudgeFacts,
) -> Option<Choice> {
    listen::choose(&Facts {
        kind,
        vhosts: &read.survey.vhosts,
        resolved: &read.resolved,
        host,
        port,
        name_addrs,
        local: &judge.local,
        source: judge.source,
    })
}

/// How the configuration was not read: declined by the operator, or of a server that is
/// neither nginx nor Apache (what it said of itself).
fn not_read(config: &Config, server_said: Option<String>) -> Obtained {
    if config.server_config_none {
        return Obtained::Declined;
    }
    Obtained::NotApplicable(server_said.unwrap_or_else(|| "it sent no Server header".to_string()))
}

/// The server listening where the judge will ask: its process (a warning when it cannot be
/// found), its kind, and what its `Server` header said when the process was not found.
fn find_server(
    (port, addrs): (u16, &[IpAddr]),
    (host, scheme): (&str, &str),
    warnings: &mut Vec<Remark>,
) -> (Option<ServerProcess>, Option<ServerKind>, Option<String>) {
    let process = match process::find(port, addrs) {
        Ok(p) => p,
        Err(e) => {
            warnings.push(Remark::fix(
                e,
                "give --server-config with the server's main configuration file",
            ));
            None
        }
    };
    let mut kind = process.as_ref().map(|p| p.kind);
    let mut server_said = None;
    if kind.is_none()
        && let (Some(a), "http") = (addrs.first(), scheme)
    {
        server_said = probe::server_header(SocketAddr::new(*a, port), host);
        kind = server_said.as_deref().and_then(probe::kind_of_header);
    }
    (process, kind, server_said)
}

/// Where the judge asks, and why there: where a stranger's request lands when the
/// configuration says, else `--server-url`, else the site's own address; a `--server-url`
/// that is not where the world's requests land is warned of.
fn where_judge_asks(
    base: &Url,
    host: &str,
    choice: Option<&listen::Choice>,
    given: Option<&Url>,
    warnings: &mut Vec<Remark>,
) -> (Url, String) {
    match (choice, given) {
        (Some(c), given) => {
            let url = url_at(base, c.destination);
            if let Some(g) = given
                && g.origin() != url.origin()
            {
                warnings.push(Remark::fix(
                    format!(
                        "--server-url {} is not where a stranger's request for {host} lands ({}): the judge asks {} instead",
                        g.origin().ascii_serialization(),
                        c.why,
                        url.origin().ascii_serialization()
                    ),
                    "leave --server-url out: the judge asks where the world's requests land",
                ));
            }
            (url, c.why.clone())
        }
        (None, Some(g)) => (g.clone(), "--server-url".to_string()),
        (None, None) => (origin_of(base), format!("the site's own address ({host})")),
    }
}

/// What to watch for a change of the server's rules: the files read, the include
/// directories, the pid file (a reload), and nginx's master.
fn watch_of(
    read: &Read,
    kind: Option<ServerKind>,
    process: Option<&ServerProcess>,
) -> reload::Watch {
    let mut paths = read.rules.sources();
    paths.extend(read.rules.watched_dirs().iter().cloned());
    let pid_file = read
        .pid_file
        .clone()
        .or_else(|| kind.map(reload::default_pid_file));
    if let Some(p) = &pid_file {
        paths.push(p.clone());
    }
    reload::Watch {
        paths,
        pid_file,
        nginx_master: process
            .filter(|p| p.kind == ServerKind::Nginx)
            .map(|p| p.pid),
    }
}

/// What the operator should know of how the configuration was read and what it serves.
fn findings(
    config: &Config,
    kind: Option<ServerKind>,
    read: &Read,
    choice: Option<&Choice>,
    port: u16,
) -> Vec<Remark> {
    let given = &config.server_config;
    let mut out = Vec::new();
    if let Some(main) = &read.survey.main_found {
        out.push(Remark::note(format!(
            "--server-config names part of a configuration: its main file {} was read with it",
            main.display()
        )));
    }
    if !given.is_empty() && !read.dumped_files.is_empty() {
        let missing: Vec<String> = read
            .dumped_files
            .iter()
            .filter(|f| !given.contains(f))
            .map(|f| f.display().to_string())
            .collect();
        if !missing.is_empty() {
            out.push(Remark::note(format!(
                "--server-config names {} of the {} files the server loads; all of them were read from the server",
                read.dumped_files.len() - missing.len(),
                read.dumped_files.len()
            )));
        }
    }
    let (Some(k), Some(c)) = (kind, choice) else {
        return out;
    };
    let canonical = |written: &str| -> Option<PathBuf> {
        let p = Path::new(written);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            read.prefix.as_deref()?.join(p)
        };
        p.canonicalize().ok()
    };
    if let Some(root) = c.docroot.as_deref().and_then(canonical)
        && root != config.docroot
    {
        out.push(Remark::fix(
            format!(
                "{}:{} answers for the site but serves {}, not the docroot {}",
                c.vhost.0,
                c.vhost.1,
                root.display(),
                config.docroot.display()
            ),
            "give the docroot that server block serves, or the base URL it answers for",
        ));
    }
    for (v, sockets) in
        listen::loopback_only(k, &read.survey.vhosts, &read.resolved, port, &c.vhost)
    {
        let over = v
            .docroot
            .as_deref()
            .and_then(canonical)
            .is_some_and(|r| config.docroot.starts_with(&r) || r.starts_with(&config.docroot));
        if over {
            let on: Vec<String> = sockets
                .iter()
                .map(|s| SocketAddr::new(s.addr, s.port).to_string())
                .collect();
            out.push(Remark::note(format!(
                "{}:{} listens on loopback only ({}) over the same docroot: it answers neither the world nor the judge, which asks {}",
                v.at.0,
                v.at.1,
                on.join(", "),
                c.destination
            )));
        }
    }
    out
}

fn origin_of(base: &Url) -> Url {
    Url::parse(&base.origin().ascii_serialization()).unwrap_or_else(|_| base.clone())
}

/// The base URL's origin with its host and port replaced by an address.
fn url_at(base: &Url, at: SocketAddr) -> Url {
    let mut u = origin_of(base);
    // An IP host and a port are always accepted by an http(s) URL.
    let _ = u.set_ip_host(at.ip());
    let _ = u.set_port(Some(at.port()));
    u
}

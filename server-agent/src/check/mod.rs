//! `webcoop-agent check`: looks at the web server as the agent does (the same look: its
//! process, its own account of its configuration, where a stranger's request lands) and says
//! in plain lines what is right and what to change: how the configuration was read, and what
//! of it was partial or forgotten; hosts over the docroot that listen on loopback only; the
//! verdict on each file asked about, computed by the agent's own code (every file with
//! `--files`); the places hidden from the judge and why, and the files published under a
//! rule that depends on who asks; the proxy of `/.well-known/webcoop/` and what it says of
//! the client, media types of `.rdf` and `.atom`, compression of the listings; the robots.txt
//! lines that point crawlers at the agent; and the state directory's permissions.

mod origin;
mod proxy;
mod usage;
pub(crate) mod verdicts;

use crate::agent::look_at_server;
use crate::config::Config;
use crate::server_config::{ServerKind, ServerRules, looks_like_apache};
use crate::web_server::{Obtained, ServerView};
use std::os::unix::fs::PermissionsExt;
use verdicts::FileVerdict;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Whether it is right as it is.
    pub ok: bool,
    /// What was looked at and found.
    pub(crate) what: String,
    /// What to change, when it is not right.
    pub(crate) fix: Option<String>,
}

impl Finding {
    fn ok(what: impl Into<String>) -> Finding {
        Finding {
            ok: true,
            what: what.into(),
            fix: None,
        }
    }

    fn fix(what: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            ok: false,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.fix {
            None => write!(f, "ok    {}", self.what),
            Some(fix) => write!(f, "FIX   {}\n      -> {fix}", self.what),
        }
    }
}

/// The places the configuration hides from the judge: by rules that could let it in (as they
/// should be), or by rules the agent does not understand (to fix or vouch for).
fn hidden_findings(rules: &ServerRules, out: &mut Vec<Finding>) {
    for h in rules.hidden() {
        let line = h.to_string();
        if line.contains("ignores .htaccess") {
            out.push(Finding::fix(
                format!("kept out, as the server ignores the .htaccess that protects it: {line}"),
                "move the rule into the server's configuration (nginx reads no .htaccess)",
            ));
        } else if line.contains("not understood") || line.contains("cannot be read") {
            out.push(Finding::fix(
                format!(
                    "not published, as the agent cannot tell what the server does there: {line}"
                ),
                "simplify that part, or vouch for the directive with --trust-directive NAME if it serves every client alike",
            ));
        } else {
            out.push(Finding::ok(format!(
                "kept out, as a rule there could let the judge in where others are refused: {line}"
            )));
        }
    }
}

/// The robots.txt lines that point crawlers at the agent's documents.
pub(crate) fn robots_lines(config: &Config) -> [String; 2] {
    let join = |p: &str| {
        config
            .base_url
            .join(p)
            .map(String::from)
            .unwrap_or_default()
    };
    [
        format!("Sitemap: {}", join(crate::publish::SITEMAP)),
        format!("Robots-RDF: {}", join(crate::publish::ROBOTS_RDF)),
    ]
}

/// Everything `check` looks at, and a line for each file judged (every file with
/// `every_file`, else a sample): `published PATH`, `hidden PATH (why)`, `refused PATH (why)`
/// or `unknown PATH (why)`, by path.
pub fn check(config: &Config, every_file: bool) -> (Vec<Finding>, Vec<String>) {
    let (findings, verdicts) = if config.origin.is_some() {
        origin::check(config, every_file)
    } else {
        check_verdicts(config, every_file)
    };
    let lines = verdicts
        .into_iter()
        .map(|(path, v)| match v {
            FileVerdict::Published => format!("published {path}"),
            FileVerdict::Hidden(why) => format!("hidden    {path} ({why})"),
            FileVerdict::Refused(why) => format!("refused   {path} ({why})"),
            FileVerdict::Unknown(why) => format!("unknown   {path} ({why})"),
        })
        .collect();
    (findings, lines)
}

/// Everything `check` looks at, and the verdict on each file judged.
fn check_verdicts(
    config: &Config,
    every_file: bool,
) -> (
    Vec<Finding>,
    std::collections::BTreeMap<String, FileVerdict>,
) {
    let mut out = Vec::new();
    state_findings(config, &mut out);
    // The documents, and the robots.txt lines that lead crawlers to them.
    let listing = config.out.join(crate::publish::ROBOTS_RDF);
    if listing.is_file() {
        out.push(Finding::ok(format!("{} is published", listing.display())));
    } else {
        out.push(Finding::fix(
            format!("{} is not published yet", listing.display()),
            "run the agent (once with --once, or as its service)",
        ));
    }
    let robots = config.docroot.join("robots.txt");
    let text = std::fs::read_to_string(&robots).unwrap_or_default();
    for line in robots_lines(config) {
        if text.lines().any(|l| l.trim().eq_ignore_ascii_case(&line)) {
            out.push(Finding::ok(format!("robots.txt has \"{line}\"")));
        } else {
            out.push(Finding::fix(
                format!(
                    "robots.txt lacks \"{line}\": crawlers will not find the agent's documents"
                ),
                format!(
                    "add the line to {} (webcoop-agent --print-robots-lines prints both)",
                    robots.display()
                ),
            ));
        }
    }
    if let Some(problem) = crate::privacy::robots_txt_problem(text.as_bytes()) {
        out.push(Finding::fix(
            format!("robots.txt cannot be parsed: {problem}; nothing is published until it can"),
            "fix robots.txt",
        ));
    }
    usage::check(config.content_usage, &text, &mut out);
    server_findings(config, every_file, &mut out)
}

/// Whether the state directory is the agent's alone and writable.
fn state_findings(config: &Config, out: &mut Vec<Finding>) {
    // The agent's alone: it holds subscribers' secrets and copies of files.
    match std::fs::metadata(&config.state) {
        Ok(m) if m.permissions().mode() & 0o002 != 0 => out.push(Finding::fix(
            format!(
                "state directory {} is writable by every user",
                config.state.display()
            ),
            format!("chmod 700 {}", config.state.display()),
        )),
        Ok(m) if m.permissions().mode() & 0o077 != 0 => out.push(Finding::fix(
            format!(
                "state directory {} can be read by other users (mode {:o}): it holds the hub's subscriber secrets and kept copies of files",
                config.state.display(),
                m.permissions().mode() & 0o777
            ),
            format!("chmod 700 {}", config.state.display()),
        )),
        Ok(_) => {
            let probe = config.state.join(".webcoop-check");
            match std::fs::write(&probe, b"") {
                Ok(()) => {
                    let _ = std::fs::remove_file(&probe);
                    out.push(Finding::ok(format!(
                        "state directory {} is writable by this user and no other",
                        config.state.display()
                    )));
                }
                Err(e) => out.push(Finding::fix(
                    format!(
                        "state directory {} cannot be written: {e}",
                        config.state.display()
                    ),
                    "run the agent as the user who owns it (webcoop), or chown it to that user",
                )),
            }
        }
        Err(e) => out.push(Finding::fix(
            format!("state directory {}: {e}", config.state.display()),
            "create it, owned by the user the agent runs as",
        )),
    }
}

/// What `check` says of the web server: how its configuration was read, where the judge asks,
/// the verdicts on files, what is hidden and what the configuration says of the agent's
/// documents. The verdicts come back too (`--files` prints them).
fn server_findings(
    config: &Config,
    every_file: bool,
    out: &mut Vec<Finding>,
) -> (
    Vec<Finding>,
    std::collections::BTreeMap<String, FileVerdict>,
) {
    let mut findings = std::mem::take(out);
    let (view, rules) = match look_at_server(config, true) {
        Ok((Some(v), r)) => (v, r),
        Ok((None, _)) => return (findings, Default::default()),
        Err(e) => {
            findings.push(Finding::fix(
                format!("the agent does not start: {e}"),
                "fix what it names",
            ));
            return (findings, Default::default());
        }
    };
    view_findings(&view, &mut findings);
    let verdicts = verdicts::check(config, &view, rules.clone(), every_file, &mut findings);
    hidden_findings(&rules, &mut findings);
    configuration_findings(config, &view, &rules, &mut findings);
    (findings, verdicts)
}

/// How the configuration was read, where the judge asks, and what the operator should know.
fn view_findings(view: &ServerView, out: &mut Vec<Finding>) {
    for line in view.summary() {
        match view.obtained {
            Obtained::Declined => out.push(Finding::fix(
                line,
                "leave --server-config none out once the agent can read the configuration (run it as the web server's user or root, or name the main file)",
            )),
            _ => out.push(Finding::ok(line)),
        }
    }
    for w in &view.warnings {
        match &w.fix {
            Some(fix) => out.push(Finding::fix(w.text.clone(), fix.clone())),
            None => out.push(Finding::ok(w.text.clone())),
        }
    }
}

/// The proxy, media types and compression, from the configuration files read.
fn configuration_findings(
    config: &Config,
    view: &ServerView,
    rules: &ServerRules,
    out: &mut Vec<Finding>,
) {
    let sources = rules.sources();
    let Some(main) = sources.first() else {
        out.push(Finding::fix(
            "no web server configuration was read: its proxy, media types and compression are not checked",
            "let the agent read it (it asks nginx or Apache itself), or give --server-config FILE",
        ));
        return;
    };
    let apache = match view.kind {
        Some(k) => k == ServerKind::Apache,
        None => std::fs::read_to_string(main).is_ok_and(|t| looks_like_apache(&t)),
    };
    if apache {
        let text: String = sources
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .collect::<Vec<_>>()
            .join("\n");
        proxy::check_apache(config, main, &text, out);
    } else {
        proxy::check_nginx(config, main, out);
    }
}

//! Apache's configuration and `.htaccess` files read for what they hide from the judge:
//! sections matched with Apache's own semantics (`<Directory>` wildcards with `fnmatch`,
//! `*Match` regular expressions over absolute paths, `<Files>` over base names), `Define`s
//! substituted, `Include`s followed in place (as the server listed them in its own dump, or
//! by hand), only the virtual host that answers the site read, and the virtual hosts and
//! `AccessFileName`s noted for the agent's other needs.

mod access;
mod lines;

use super::directives::{self, Kind, Section};
use super::includes::{IncludeSource, expand_include};
use super::matcher::{Matcher, components, fnmatch, has_wildcards, regex};
use super::moves::Move;
use super::{Hidden, Site, Vhost, read_rules_file, under_base};
use access::Effect;
use lines::{logical_lines, section_open, substitute, words};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Includes followed within includes, at most.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Directives whose arguments may name an unknown `${VAR}` without it mattering to what is
/// served (logs, the process's own files).
const UNRESOLVED_HARMLESS: &[&str] = &[
    "errorlog",
    "customlog",
    "transferlog",
    "pidfile",
    "mutex",
    "user",
    "group",
    "defaultruntimedir",
    "scriptsock",
    "loglevel",
    "logformat",
    "scriptlog",
    "serveradmin",
];

/// Where the rules are read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Context<'a> {
    /// A `.htaccess` governing this docroot-relative directory (`""` or `/sub`), or all of the
    /// site when it lies above the docroot (`None`).
    Htaccess(Option<&'a str>),
    /// A server configuration file.
    Server {
        /// The file (its includes are relative to the server root above it).
        file: &'a Path,
    },
    /// A server configuration given as text, whose includes are not followed (each hides
    /// what it governs).
    Text,
}

/// What reading found.
#[derive(Debug, Default)]
pub(crate) struct Reading {
    /// Places hidden from the judge.
    pub(crate) hidden: Vec<Hidden>,
    /// Places governed by rules that depend on who asks but refuse the judge as a stranger.
    pub(crate) notes: Vec<Hidden>,
    /// Files included.
    pub(crate) includes: Vec<PathBuf>,
    /// `AccessFileName`s named.
    pub(crate) access_files: Vec<String>,
    /// Virtual hosts defined.
    pub(crate) vhosts: Vec<Vhost>,
    /// The main server's `DocumentRoot`.
    pub(crate) main_docroot: Option<String>,
    /// Internal moves whose destination this reading does not hide (another file may).
    pub(crate) moves: Vec<Move>,
}

/// Where a directive's rules apply.
#[derive(Debug, Clone)]
enum Scope {
    /// All the site (a server-wide rule).
    Everything,
    /// A place of the site.
    Place(Matcher),
    /// Not the site's files (another directory, another method, a proxy, another host).
    Nowhere,
}

/// An open section: its name, argument, where it opened, and the scope of what it holds.
struct Open {
    name: String,
    arg: String,
    at: String,
    scope: Scope,
    /// The virtual host it opens, as an index into the reading's list.
    vhost: Option<usize>,
}

struct Reader<'a> {
    ctx: Context<'a>,
    site: Site<'a>,
    source: IncludeSource<'a>,
    stack: Vec<Open>,
    out: Reading,
    defines: HashMap<String, String>,
    server_root: Option<PathBuf>,
    /// Why the RewriteConds waiting for their rule depend on who asks, if one does.
    pending_rewrite: Option<String>,
    /// Why the `<If>` chain being read depends on who asks, if it does.
    if_chain: Option<String>,
    /// Requests moved inside the server, weighed once every hidden place is known.
    moves: Vec<Move>,
}

impl Reader<'_> {
    fn scope(&self) -> Scope {
        match self.stack.last() {
            Some(o) => o.scope.clone(),
            None => match self.ctx {
                Context::Htaccess(Some(dir)) => Scope::Place(Matcher::UrlPrefix(format!("{dir}/"))),
                Context::Htaccess(None) | Context::Server { .. } | Context::Text => {
                    Scope::Everything
                }
            },
        }
    }

    fn place(scope: &Scope) -> Option<Matcher> {
        match scope {
            Scope::Everything => Some(Matcher::UrlPrefix("/".into())),
            Scope::Place(m) => Some(m.clone()),
            Scope::Nowhere => None,
        }
    }

    fn hide(&mut self, scope: &Scope, at: &str, why: String) {
        if let Some(matcher) = Self::place(scope) {
            self.out.hidden.push(Hidden {
                matcher,
                source: format!("{at}: {why}"),
            });
        }
    }

    fn note(&mut self, scope: &Scope, at: &str, why: String) {
        if let Some(matcher) = Self::place(scope) {
            self.out.notes.push(Hidden {
                matcher,
                source: format!("{at}: {why}"),
            });
        }
    }

    /// A request moved from `scope` to the local URL `to`.
    fn moved(&mut self, scope: &Scope, at: &str, text: String, to: &str) {
        if let Some(from) = Self::place(scope) {
            self.moves.push(Move {
                from,
                at: at.to_string(),
                text,
                to: to.to_string(),
            });
        }
    }

    fn effect(&mut self, scope: &Scope, at: &str, e: Effect) {
        match e {
            Effect::Seen => {}
            Effect::Refuses(why) => self.note(scope, at, why),
            Effect::Hides(why) => self.hide(scope, at, why),
        }
    }

    /// Whether a `<VirtualHost>` opened at `at` answers the site.
    fn vhost_read(&self, file: &str, line: usize) -> bool {
        match self.site.vhosts {
            None => true,
            Some(chosen) => chosen.iter().any(|(f, l)| f == file && *l == line),
        }
    }

    /// Opens a section; a place outside the site, a method other than GET, a proxy or
    /// another virtual host reads as nowhere, a condition on who asks hides what is around it.
    fn open(&mut self, name: &str, args: &[String], file: &str, line: usize) {
        let at = format!("{file}:{line}");
        let around = self.scope();
        let lower = name.to_ascii_lowercase();
        let mut vhost = None;
        let scope = if matches!(around, Scope::Nowhere) {
            Scope::Nowhere
        } else {
            match directives::apache_section(&lower) {
                Section::Transparent => around,
                Section::VirtualHost => {
                    self.out.vhosts.push(Vhost {
                        at: (file.to_string(), line),
                        listens: args.to_vec(),
                        names: Vec::new(),
                        docroot: None,
                    });
                    vhost = Some(self.out.vhosts.len() - 1);
                    if self.vhost_read(file, line) {
                        around
                    } else {
                        Scope::Nowhere
                    }
                }
                Section::Elsewhere => Scope::Nowhere,
                Section::Methods => {
                    let get = args.iter().any(|m| m.eq_ignore_ascii_case("GET"));
                    if get == (lower == "limit") {
                        around
                    } else {
                        Scope::Nowhere
                    }
                }
                Section::Condition => {
                    let expr = args.join(" ");
                    let why = match lower.as_str() {
                        "if" => super::apache_vars::expr_who_asks(&expr),
                        "elseif" => self
                            .if_chain
                            .clone()
                            .or_else(|| super::apache_vars::expr_who_asks(&expr)),
                        _ => self.if_chain.clone(),
                    };
                    if lower == "if" {
                        self.if_chain = why.clone();
                    }
                    if let Some(what) = why {
                        self.hide(
                            &around,
                            &at,
                            format!("<{name}> reads {what}, which depends on who asks"),
                        );
                    }
                    around
                }
                Section::Unknown => {
                    self.hide(&around, &at, format!("section <{name}> is not understood"));
                    Scope::Nowhere
                }
                Section::Place => match self.section_place(&lower, args, &around) {
                    Ok(Some(m)) => Scope::Place(m),
                    Ok(None) => Scope::Nowhere,
                    Err(e) => {
                        self.hide(&around, &at, format!("<{name}>: {e}"));
                        Scope::Nowhere
                    }
                },
            }
        };
        self.stack.push(Open {
            name: lower,
            arg: args.join(" "),
            at,
            scope,
            vhost,
        });
    }

    /// What a place section governs, if it is in the site.
    fn section_place(
        &self,
        section: &str,
        args: &[String],
        around: &Scope,
    ) -> Result<Option<Matcher>, String> {
        // `<Files ~ "re">` is `<FilesMatch "re">`, and so for the others.
        let (section, arg) = match args {
            [tilde, re] if tilde == "~" => (format!("{section}match"), re.clone()),
            [arg] => match arg.strip_prefix('~') {
                Some(re) if !re.is_empty() && section != "files" => {
                    (format!("{section}match"), re.trim().to_string())
                }
                _ => (section.to_string(), arg.clone()),
            },
            _ => return Err(format!("arguments {args:?} are not understood")),
        };
        let htaccess = matches!(self.ctx, Context::Htaccess(_));
        let inner = match section.as_str() {
            "files" => Matcher::FileName(fnmatch(&arg)?),
            "filesmatch" => Matcher::FileName(regex(&arg, false)?),
            _ if htaccess => return Err("not allowed in .htaccess".into()),
            "directory" => {
                let dir = arg.trim_end_matches('/');
                if !arg.starts_with('/') {
                    return Err(format!("{arg} is not an absolute path"));
                }
                if has_wildcards(dir) {
                    Matcher::DirGlob {
                        re: fnmatch(dir)?,
                        components: components(dir),
                    }
                } else {
                    Matcher::DirPrefix(dir.to_string())
                }
            }
            "directorymatch" => Matcher::DirRegex(regex(&arg, false)?),
            "location" if has_wildcards(&arg) => Matcher::UrlGlob {
                re: fnmatch(arg.trim_end_matches('/'))?,
                components: components(&arg),
            },
            "location" => match under_base(&arg, self.site.base_path) {
                Some(p) => Matcher::UrlPrefix(p),
                None => return Ok(None),
            },
            "locationmatch" => Matcher::UrlRegex(regex(&arg, false)?),
            other => return Err(format!("section {other} is not understood")),
        };
        // A `<Files>` inside a `<Directory>` (or a `.htaccess`) governs files there only.
        Ok(Some(match (around, section.as_str()) {
            (Scope::Place(outer), "files" | "filesmatch") => outer.clone().and(inner),
            _ => inner,
        }))
    }

    fn close(&mut self, line: &str, at: &str) -> Result<(), String> {
        let name = line
            .trim_start_matches("</")
            .trim_end_matches('>')
            .trim()
            .to_ascii_lowercase();
        match self.stack.pop() {
            Some(o) if o.name == name => {
                if !matches!(name.as_str(), "if" | "elseif") {
                    self.if_chain = None;
                }
                Ok(())
            }
            Some(o) => Err(format!(
                "{at}: </{name}> closes <{} {}> opened at {}",
                o.name, o.arg, o.at
            )),
            None => Err(format!("{at}: {line} closes nothing")),
        }
    }

    /// The directory relative includes start from.
    fn root(&self) -> PathBuf {
        if let Some(r) = &self.server_root {
            return r.clone();
        }
        match self.ctx {
            Context::Server { file } => {
                let start = file.parent().unwrap_or(Path::new("/"));
                start
                    .ancestors()
                    .find(|d| d.join("apache2.conf").is_file() || d.join("httpd.conf").is_file())
                    .unwrap_or(start)
                    .to_path_buf()
            }
            Context::Htaccess(_) | Context::Text => PathBuf::from("/"),
        }
    }

    fn include(
        &mut self,
        w: &[String],
        optional: bool,
        at: &str,
        place: (&str, usize, usize),
        depth: usize,
    ) -> Result<(), String> {
        let scope = self.scope();
        let Some(pattern) = w.get(1) else {
            self.hide(&scope, at, "Include without a file".into());
            return Ok(());
        };
        match self.ctx {
            Context::Htaccess(_) => {
                self.hide(&scope, at, "Include is not allowed in .htaccess".into());
                return Ok(());
            }
            Context::Text => {
                self.hide(
                    &scope,
                    at,
                    format!("Include {pattern} is not followed here"),
                );
                return Ok(());
            }
            Context::Server { .. } => {}
        }
        if depth >= MAX_INCLUDE_DEPTH {
            self.hide(&scope, at, format!("Include {pattern} nested too deeply"));
            return Ok(());
        }
        let (file, first, last) = place;
        let files = match self.source {
            IncludeSource::Apache(dump) => dump.included_at(file, first, last),
            IncludeSource::Disk | IncludeSource::Nginx(_) => {
                match expand_include(pattern, &self.root()) {
                    Ok(f) => f,
                    Err(e) => {
                        self.hide(&scope, at, format!("Include {pattern}: {e}"));
                        return Ok(());
                    }
                }
            }
        };
        for f in files {
            if self.out.includes.contains(&f) {
                continue;
            }
            match read_rules_file(&f) {
                Ok(text) => {
                    self.out.includes.push(f.clone());
                    self.read(&text, &f.display().to_string(), depth + 1)?;
                }
                Err(_) if optional && !f.exists() => {}
                Err(e) => self.hide(
                    &scope,
                    at,
                    format!("Include {}: {e}, so what it governs is hidden", f.display()),
                ),
            }
        }
        Ok(())
    }

    fn read(&mut self, text: &str, name: &str, depth: usize) -> Result<(), String> {
        for line in logical_lines(text) {
            let at = format!("{name}:{}", line.first);
            let (text, unknown) = substitute(&line.text, &self.defines);
            let text = text.trim();
            if text.starts_with("</") {
                self.close(text, &at)?;
                continue;
            }
            if text.starts_with('<') {
                self.section(text, &unknown, (name, line.first), at)?;
                continue;
            }
            let w = words(text);
            let Some(directive) = w.first() else { continue };
            let lower = directive.to_ascii_lowercase();
            let scope = self.scope();
            if let Some(var) = unknown.first()
                && !UNRESOLVED_HARMLESS.contains(&lower.as_str())
            {
                self.hide(
                    &scope,
                    &at,
                    format!("{directive} names ${{{var}}}, which is not defined"),
                );
                continue;
            }
            let args = &w[1..];
            match lower.as_str() {
                "include" | "includeoptional" => {
                    self.include(
                        &w,
                        lower == "includeoptional",
                        &at,
                        (name, line.first, line.last),
                        depth,
                    )?;
                    continue;
                }
                "define" => {
                    if let Some(n) = args.first() {
                        let value = args.get(1).cloned().unwrap_or_default();
                        self.defines.insert(n.clone(), value);
                    }
                }
                "undefine" => {
                    if let Some(n) = args.first() {
                        self.defines.remove(n);
                    }
                }
                "serverroot" => {
                    if let Some(r) = args.first() {
                        self.server_root = Some(PathBuf::from(r));
                    }
                }
                "accessfilename" => self.out.access_files.extend(args.iter().cloned()),
                // A local URL answers the error, or every URL no file answers: the request
                // goes on there.
                "errordocument" => {
                    if let Some(to) = args.get(1).filter(|t| t.starts_with('/')) {
                        self.moved(&scope, &at, format!("ErrorDocument {}", args.join(" ")), to);
                    }
                }
                "fallbackresource" => {
                    if let Some(to) = args.first().filter(|t| t.starts_with('/')) {
                        self.moved(&scope, &at, format!("FallbackResource {to}"), to);
                    }
                }
                "documentroot" | "servername" | "serveralias" => self.vhost_fact(&lower, args),
                "require" => {
                    let e = access::require(args, self.site.judge);
                    self.effect(&scope, &at, e);
                    continue;
                }
                "allow" => {
                    let e = access::allow(args, self.site.judge);
                    self.effect(&scope, &at, e);
                    continue;
                }
                "rewritecond" => {
                    if let Some(what) = access::rewrite_cond(args) {
                        self.pending_rewrite.get_or_insert(what);
                    }
                    continue;
                }
                "rewriterule" => {
                    self.rewrite_rule(&scope, &at, args);
                    continue;
                }
                _ => {}
            }
            self.by_kind(&w, &scope, &at);
        }
        Ok(())
    }

    /// A section's opening line: a section naming an undefined variable governs nothing and
    /// hides what it would have held.
    fn section(
        &mut self,
        text: &str,
        unknown: &[String],
        (name, first): (&str, usize),
        at: String,
    ) -> Result<(), String> {
        let Some((section, args)) = section_open(text) else {
            return Err(format!("{at}: {text} is not a section"));
        };
        if self.stack.len() > 32 {
            return Err(format!("{at}: sections nested too deeply"));
        }
        if let Some(var) = unknown.first() {
            let around = self.scope();
            self.hide(
                &around,
                &at,
                format!("<{section}> names ${{{var}}}, which is not defined"),
            );
            self.stack.push(Open {
                name: section.to_ascii_lowercase(),
                arg: args.join(" "),
                at,
                scope: Scope::Nowhere,
                vhost: None,
            });
            return Ok(());
        }
        self.open(&section, &args, name, first);
        Ok(())
    }

    /// A rewrite rule: to a local path without a redirect, the request goes on there; one that
    /// reads what depends on who asks hides what it governs.
    fn rewrite_rule(&mut self, scope: &Scope, at: &str, args: &[String]) {
        let why = self
            .pending_rewrite
            .take()
            .or_else(|| access::rewrite_rule(args));
        // To a local path without a redirect: the request goes on there
        // (`[PT]` through the URL's mapping, `[L]`, `[N]` or none alike).
        let redirect = args.get(2).is_some_and(|f| {
            f.trim_matches(['[', ']']).split(',').any(|f| {
                f.eq_ignore_ascii_case("R")
                    || f.to_ascii_lowercase().starts_with("r=")
                    || f.eq_ignore_ascii_case("redirect")
                    || f.to_ascii_lowercase().starts_with("redirect=")
            })
        });
        if let Some(to) = args.get(1).filter(|t| t.starts_with('/') && !redirect) {
            let from = self.rewrite_scope(scope, args);
            self.moved(&from, at, format!("RewriteRule {}", args.join(" ")), to);
        }
        if let Some(what) = why {
            let narrowed = self.rewrite_scope(scope, args);
            self.hide(
                &narrowed,
                at,
                format!(
                    "RewriteRule {} reads {what}, which depends on who asks",
                    args.join(" ")
                ),
            );
        }
    }

    /// Any other directive, by what it does with who asks.
    fn by_kind(&mut self, w: &[String], scope: &Scope, at: &str) {
        let Some(directive) = w.first() else { return };
        let lower = directive.to_ascii_lowercase();
        match directives::apache(directive, self.site.trusted) {
            Kind::Seen | Kind::Grants => {}
            Kind::Refuses => self.note(
                scope,
                at,
                format!(
                    "{} depends on who asks, and refuses the judge as it refuses a stranger",
                    w.join(" ")
                ),
            ),
            Kind::WhoAsks => {
                self.hide(scope, at, format!("{} depends on who asks", w.join(" ")))
            }
            Kind::Unknown => self.hide(
                scope,
                at,
                format!(
                    "directive {directive} is not understood (--trust-directive {lower} if it serves every client alike)"
                ),
            ),
        }
    }

    /// A rewrite rule in server context governs the URLs its pattern matches; in a directory
    /// (or when negated) all of its scope.
    fn rewrite_scope(&self, scope: &Scope, args: &[String]) -> Scope {
        let per_dir = self.stack.iter().any(|o| o.name.starts_with("directory"))
            || matches!(self.ctx, Context::Htaccess(_));
        match (scope, args.first()) {
            (Scope::Everything, Some(p)) if !per_dir && !p.starts_with('!') => {
                match regex(p, false) {
                    Ok(re) => Scope::Place(Matcher::UrlRegex(re)),
                    Err(_) => Scope::Everything,
                }
            }
            _ => scope.clone(),
        }
    }

    /// `DocumentRoot`, `ServerName`, `ServerAlias`: of the virtual host being read, or of
    /// the main server.
    fn vhost_fact(&mut self, directive: &str, args: &[String]) {
        let vhost = self.stack.iter().rev().find_map(|o| o.vhost);
        match (vhost, directive) {
            (Some(i), "documentroot") => {
                if let Some(v) = self.out.vhosts.get_mut(i) {
                    v.docroot = args.first().cloned();
                }
            }
            (Some(i), _) => {
                if let Some(v) = self.out.vhosts.get_mut(i) {
                    v.names.extend(args.iter().map(|a| a.to_ascii_lowercase()));
                }
            }
            (None, "documentroot") => self.out.main_docroot = args.first().cloned(),
            (None, _) => {}
        }
    }
}

/// Reads an Apache configuration or `.htaccess` for the places it hides from the judge.
pub(crate) fn read(
    text: &str,
    name: &str,
    ctx: Context,
    site: Site,
    source: IncludeSource,
) -> Result<Reading, String> {
    let mut r = Reader {
        ctx,
        site,
        source,
        stack: Vec::new(),
        out: Reading::default(),
        defines: site.defines.iter().cloned().collect(),
        server_root: None,
        pending_rewrite: None,
        if_chain: None,
        moves: Vec::new(),
    };
    r.read(text, name, 0)?;
    if let Some(o) = r.stack.last() {
        return Err(format!("{}: <{}> is not closed", o.at, o.name));
    }
    let site_place = (site.base_path, site.spellings);
    r.out.moves = super::moves::settle(&mut r.out.hidden, r.moves, site_place);
    Ok(r.out)
}

#[cfg(test)]
mod tests;

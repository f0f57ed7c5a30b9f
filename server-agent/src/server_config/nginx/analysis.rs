//! The places of the site an nginx configuration hides from the judge: those governed by an
//! `allow` that could let the judge in, by a decision the reader cannot see
//! (`auth_request`, code), by a variable that depends on who asks in anything but logs and
//! headers, or by anything not understood. Only the server blocks that answer the site are
//! read when the agent knows which they are.

use super::super::directives::{self, Kind, NGINX_OPAQUE_BLOCKS};
use super::super::grants::Grant;
use super::super::matcher::{Matcher, regex};
use super::super::moves::Move;
use super::super::{Hidden, Site, under_base};
use super::variables::{Variables, variables, variables_in};
use super::{Directive, Loaded, http_servers};
use std::collections::HashMap;

/// Where a directive's rules apply: a location, or everything the server serves.
#[derive(Clone)]
enum Scope {
    Everything,
    Location(Matcher),
    /// A named location, or one outside the site: nothing of the site's files.
    Nowhere,
}

struct Analysis<'a> {
    site: Site<'a>,
    vars: Variables,
    /// For each block being walked, the places below it that set their own `allow`/`deny`
    /// and are sure to be chosen for every URL they cover: an address rule of the block
    /// does not reach them (nginx's access rules are inherited only by a level with none).
    overrides: Vec<Vec<Matcher>>,
    /// When the agent does not know which server blocks answer the site: read only those
    /// naming its host (or catch-alls), or all when none does.
    servers_by_name: bool,
    hidden: Vec<Hidden>,
    notes: Vec<Hidden>,
    /// The named locations of the server block being walked whose rules would let the judge
    /// in, with why: a request that moves into one is judged by them.
    named: HashMap<String, String>,
    /// Internal moves to a URI (`error_page`, `try_files`, `rewrite ... last`), weighed once
    /// every place the server hides is known: where it starts, where read, what it says, and
    /// the URI.
    moves: Vec<Move>,
}

fn place(scope: &Scope) -> Option<Matcher> {
    match scope {
        Scope::Everything => Some(Matcher::UrlPrefix("/".into())),
        Scope::Location(m) => Some(m.clone()),
        Scope::Nowhere => None,
    }
}

impl Analysis<'_> {
    fn hide(&mut self, scope: &Scope, d: &Directive, why: String) {
        if let Some(matcher) = place(scope) {
            self.hidden.push(Hidden {
                matcher,
                source: format!("{}: {why}", d.at()),
            });
        }
    }

    fn note(&mut self, scope: &Scope, d: &Directive, why: String) {
        if let Some(matcher) = place(scope) {
            self.notes.push(Hidden {
                matcher,
                source: format!("{}: {why}", d.at()),
            });
        }
    }

    fn location(&mut self, d: &Directive, scope: &Scope) -> Scope {
        if matches!(scope, Scope::Nowhere) {
            return Scope::Nowhere;
        }
        let base = self.site.base_path;
        let m = match d.args.as_slice() {
            [m, path] if m == "=" => under_base(path, base).map(Matcher::UrlExact),
            [m, path] if m == "^~" => under_base(path, base).map(Matcher::UrlPrefix),
            [m, re] if m == "~" || m == "~*" => match regex(re, m == "~*") {
                Ok(r) => Some(Matcher::UrlRegex(r)),
                Err(e) => {
                    // What it matches is unknown: everything around it is hidden.
                    self.hide(scope, d, format!("location {e}"));
                    return Scope::Nowhere;
                }
            },
            [path] if path.starts_with('@') => return Scope::Nowhere,
            [path] => under_base(path, base).map(Matcher::UrlPrefix),
            _ => {
                self.hide(
                    scope,
                    d,
                    format!("location {:?} is not understood", d.args.join(" ")),
                );
                return Scope::Nowhere;
            }
        };
        m.map_or(Scope::Nowhere, Scope::Location)
    }

    /// Whether a `server` block is read.
    fn reads_server(&self, d: &Directive, block: &[Directive]) -> bool {
        match self.site.vhosts {
            Some(chosen) => chosen.iter().any(|(f, l)| **f == *d.file && *l == d.line),
            None => !self.servers_by_name || self.serves_site(block),
        }
    }

    /// Whether a `server` block names the site's host (or is a catch-all).
    fn serves_site(&self, block: &[Directive]) -> bool {
        let names: Vec<&String> = block
            .iter()
            .filter(|d| d.name == "server_name")
            .flat_map(|d| d.args.iter())
            .collect();
        let default = block.iter().any(|d| {
            d.name == "listen"
                && d.args
                    .iter()
                    .any(|a| a == "default_server" || a == "default")
        });
        names.is_empty() || default || super::super::names_match(&names, self.site.host)
    }

    /// Hides what `d` governs when its arguments read a variable that may differ between
    /// clients, unless the directive only logs or passes it on.
    fn reads_who_asks(&mut self, scope: &Scope, d: &Directive) -> bool {
        if directives::nginx_client_values_allowed(&d.name) {
            return false;
        }
        let reads: Vec<String> = d.args.iter().flat_map(|a| variables_in(a)).collect();
        if let Some(v) = reads.iter().find(|v| self.vars.depends(v)) {
            let what = if d.name == "if" {
                format!("if (${v} ...)")
            } else {
                format!("{} ${v}", d.name)
            };
            self.hide(scope, d, format!("{what} may depend on who asks"));
            return true;
        }
        false
    }

    /// Whether a block sets its own `allow`/`deny` for GET (and so inherits none).
    fn sets_access(block: &[Directive]) -> bool {
        block.iter().any(|d| d.name == "allow" || d.name == "deny")
    }

    /// The places below `block` that set their own access rules and that nginx is sure to
    /// choose for every URL they cover: exact locations, `^~` prefixes (but the longer
    /// prefixes inside them that set none), and whole server blocks read.
    fn own_access(&self, block: &[Directive]) -> Vec<Matcher> {
        let base = self.site.base_path;
        let prefixes: Vec<(String, bool)> = block
            .iter()
            .filter(|d| d.name == "location")
            .filter_map(|d| {
                let b = d.block.as_deref()?;
                match d.args.as_slice() {
                    [m, p] if m == "^~" => Some((p.clone(), Self::sets_access(b))),
                    [p] if !p.starts_with('@') => Some((p.clone(), Self::sets_access(b))),
                    _ => None,
                }
            })
            .collect();
        let mut out = Vec::new();
        for d in block {
            let Some(b) = d.block.as_deref() else {
                continue;
            };
            match (d.name.as_str(), d.args.as_slice()) {
                ("server", _) if self.reads_server(d, b) => {
                    if Self::sets_access(b) {
                        out.push(Matcher::UrlPrefix("/".into()));
                    } else {
                        out.extend(self.own_access(b));
                    }
                }
                ("location", [m, path]) if m == "=" && Self::sets_access(b) => {
                    out.extend(under_base(path, base).map(Matcher::UrlExact));
                }
                ("location", [m, path]) if m == "^~" && Self::sets_access(b) => {
                    let Some(p) = under_base(path, base) else {
                        continue;
                    };
                    let longer: Vec<Matcher> = prefixes
                        .iter()
                        .filter(|(q, own)| {
                            !own && q.len() > path.len() && q.starts_with(path.as_str())
                        })
                        .filter_map(|(q, _)| under_base(q, base).map(Matcher::UrlPrefix))
                        .collect();
                    out.push(Matcher::UrlPrefix(p).except(longer));
                }
                _ => {}
            }
        }
        out
    }

    fn walk(&mut self, block: &[Directive], scope: &Scope) {
        let own = self.own_access(block);
        self.overrides.push(own);
        self.walk_inner(block, scope);
        self.overrides.pop();
    }

    fn walk_inner(&mut self, block: &[Directive], scope: &Scope) {
        for d in block {
            if let Some(why) = &d.broken {
                self.hide(scope, d, format!("{why}, so what it governs is hidden"));
                continue;
            }
            let name = d.name.to_ascii_lowercase();
            match (name.as_str(), &d.block) {
                ("http", Some(b)) => self.walk(b, scope),
                ("server", Some(b)) => {
                    if self.reads_server(d, b) {
                        self.named = self.named_locations(b);
                        self.walk(b, &Scope::Everything);
                        self.named.clear();
                    }
                }
                ("location", Some(b)) => {
                    let inner = self.location(d, scope);
                    self.walk(b, &inner);
                }
                ("if", Some(b)) => {
                    self.reads_who_asks(scope, d);
                    self.walk(b, scope);
                }
                ("limit_except", Some(b)) => {
                    // Its rules apply to the other methods: a GET is not one of them.
                    if !d.args.iter().any(|m| m.eq_ignore_ascii_case("GET")) {
                        self.walk(b, scope);
                    }
                }
                (n, Some(_)) if NGINX_OPAQUE_BLOCKS.contains(&n) => {}
                (n, Some(_)) => {
                    self.hide(scope, d, format!("block {n} is not understood"));
                }
                (n, None) => self.directive(n, d, scope),
            }
        }
    }

    /// The named locations of a server block whose rules would let the judge in (each walked
    /// as if it served everything), with the first reason.
    fn named_locations(&mut self, server: &[Directive]) -> HashMap<String, String> {
        let mut out = HashMap::new();
        for d in server.iter().filter(|d| d.name == "location") {
            let (Some(b), [name]) = (d.block.as_deref(), d.args.as_slice()) else {
                continue;
            };
            if !name.starts_with('@') {
                continue;
            }
            let (hidden, notes) = (
                std::mem::take(&mut self.hidden),
                std::mem::take(&mut self.notes),
            );
            self.walk(b, &Scope::Everything);
            let found = std::mem::replace(&mut self.hidden, hidden);
            self.notes = notes;
            if let Some(h) = found.first() {
                out.insert(name.clone(), h.source.clone());
            }
        }
        out
    }

    /// A directive that moves the request inside the server (`error_page`, `try_files`,
    /// `rewrite ... last`): the place it starts in is judged by where it ends. A named
    /// location is weighed now; a URI once every hidden place is known.
    fn moves(&mut self, n: &str, d: &Directive, scope: &Scope) {
        let target = match n {
            "error_page" | "try_files" => d.args.last().cloned(),
            "rewrite" => match d.args.as_slice() {
                [_, to] => Some(to.clone()),
                [_, to, flag] if flag == "last" => Some(to.clone()),
                _ => None,
            },
            _ => None,
        };
        let Some(target) = target else {
            return;
        };
        let text = format!("{n} {}", d.args.join(" "));
        if target.starts_with('@') {
            if let Some(why) = self.named.get(&target).cloned() {
                self.hide(
                    scope,
                    d,
                    format!("{text}: the request ends in location {target}, where {why}"),
                );
            }
        } else if target.starts_with('/')
            && let Some(from) = place(scope)
        {
            self.moves.push(Move {
                from,
                at: d.at(),
                text,
                to: target,
            });
        }
    }

    fn directive(&mut self, n: &str, d: &Directive, scope: &Scope) {
        if self.reads_who_asks(scope, d) {
            return;
        }
        self.moves(n, d, scope);
        let first = d.args.first().map(|a| a.to_ascii_lowercase());
        match directives::nginx(n, self.site.trusted) {
            Kind::Seen => {}
            Kind::Grants => match self.site.judge.nginx_allow(first.as_deref().unwrap_or("")) {
                Ok(Grant::Everyone) => {}
                Ok(Grant::Judge(why)) => {
                    let own = self.overrides.last().cloned().unwrap_or_default();
                    let whole = own
                        .iter()
                        .any(|m| matches!(m, Matcher::UrlPrefix(p) if p == "/"));
                    let narrowed = match (scope, own.is_empty()) {
                        _ if whole => Scope::Nowhere,
                        (_, true) => scope.clone(),
                        (Scope::Nowhere, _) => Scope::Nowhere,
                        (s, false) => Scope::Location(
                            place(s).unwrap_or(Matcher::UrlPrefix("/".into())).except(own),
                        ),
                    };
                    self.hide(
                        &narrowed,
                        d,
                        format!("allow {} lets the judge in: {why}", d.args.join(" ")),
                    )
                }
                Ok(Grant::Others) => self.note(
                    scope,
                    d,
                    format!(
                        "allow {} names other networks: the judge is refused there as a stranger is",
                        d.args.join(" ")
                    ),
                ),
                Err(e) => self.hide(scope, d, e),
            },
            Kind::Refuses => {
                // `auth_basic off` asks no one; `deny all` treats everyone alike.
                let off = (n.starts_with("auth_") && first.as_deref() == Some("off"))
                    || (n == "deny" && first.as_deref() == Some("all"));
                if !off {
                    self.note(
                        scope,
                        d,
                        format!(
                            "{n} {} depends on who asks, and refuses the judge as it refuses a stranger",
                            d.args.join(" ")
                        ),
                    );
                }
            }
            Kind::WhoAsks => self.hide(
                scope,
                d,
                format!("{n} decides by something the agent cannot see, which may let the judge in"),
            ),
            Kind::Unknown => self.hide(
                scope,
                d,
                format!(
                    "directive {n} is not understood (--trust-directive {n} if it serves every client alike)"
                ),
            ),
        }
    }
}

/// The places of the site a loaded configuration hides from the judge, those governed by
/// rules that depend on who asks but refuse the judge as a stranger, and the internal moves
/// whose destination it does not hide (another file may).
pub(crate) fn hidden_places(loaded: &Loaded, site: Site) -> (Vec<Hidden>, Vec<Hidden>, Vec<Move>) {
    let servers = http_servers(&loaded.tree);
    let mut a = Analysis {
        site,
        vars: variables(&loaded.tree),
        overrides: Vec::new(),
        servers_by_name: false,
        hidden: Vec::new(),
        notes: Vec::new(),
        named: HashMap::new(),
        moves: Vec::new(),
    };
    // Only the server blocks that serve the site's host, when any does; all of them else.
    a.servers_by_name = servers
        .iter()
        .any(|d| d.block.as_deref().is_some_and(|b| a.serves_site(b)));
    a.walk(&loaded.tree, &Scope::Everything);
    let moves = std::mem::take(&mut a.moves);
    let left = super::super::moves::settle(&mut a.hidden, moves, (site.base_path, site.spellings));
    (a.hidden, a.notes, left)
}

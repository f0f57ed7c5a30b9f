//! `webcoop-agent check`: reads the agent's settings and the web server's configuration
//! (`--server-config`, nginx or Apache) and says in plain lines what is right and what to
//! change so that a crawler can use everything the agent publishes: the proxy of
//! `/.well-known/webcoop/`, media types of `.rdf` and `.atom`, compression of the listings,
//! the robots.txt lines that point crawlers at the agent, the locations kept out, and the state
//! directory's permissions.

use crate::config::Config;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Whether it is right as it is.
    pub ok: bool,
    /// What was looked at and found.
    pub what: String,
    /// What to change, when it is not right.
    pub fix: Option<String>,
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

/// An nginx directive: its name, arguments and block.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Directive {
    name: String,
    args: Vec<String>,
    block: Vec<Directive>,
}

/// Parses nginx's configuration syntax: directives ending in `;` or a `{ }` block, `#`
/// comments, quoted arguments.
fn nginx_parse(text: &str) -> Result<Vec<Directive>, String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            '#' => while chars.next().is_some_and(|c| c != '\n') {},
            c if c.is_whitespace() => {
                chars.next();
            }
            '{' | '}' | ';' => {
                tokens.push(c.to_string());
                chars.next();
            }
            '"' | '\'' => {
                chars.next();
                let mut t = String::new();
                for c2 in chars.by_ref() {
                    if c2 == c {
                        break;
                    }
                    t.push(c2);
                }
                tokens.push(format!("\u{0}{t}"));
            }
            _ => {
                let mut t = String::new();
                while let Some(&c2) = chars.peek() {
                    if c2.is_whitespace() || "{};".contains(c2) {
                        break;
                    }
                    t.push(c2);
                    chars.next();
                }
                tokens.push(t);
            }
        }
    }
    let mut pos = 0;
    nginx_block(&tokens, &mut pos, false)
}

fn nginx_block(tokens: &[String], pos: &mut usize, nested: bool) -> Result<Vec<Directive>, String> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    while *pos < tokens.len() {
        let t = &tokens[*pos];
        *pos += 1;
        match t.as_str() {
            ";" => {
                if !words.is_empty() {
                    let name = words.remove(0);
                    out.push(Directive {
                        name,
                        args: std::mem::take(&mut words),
                        block: Vec::new(),
                    });
                }
            }
            "{" => {
                let block = nginx_block(tokens, pos, true)?;
                let name = if words.is_empty() {
                    String::new()
                } else {
                    words.remove(0)
                };
                out.push(Directive {
                    name,
                    args: std::mem::take(&mut words),
                    block,
                });
            }
            "}" if nested => return Ok(out),
            "}" => return Err("a `}` without its `{`".into()),
            w => words.push(w.trim_start_matches('\u{0}').to_string()),
        }
    }
    if nested {
        return Err("a `{` without its `}`".into());
    }
    Ok(out)
}

/// Every directive, depth first.
fn all(ds: &[Directive]) -> Vec<&Directive> {
    let mut out = Vec::new();
    for d in ds {
        out.push(d);
        out.extend(all(&d.block));
    }
    out
}

/// The media types of robots.rdf, the changes feed and sitemaps, which compression must cover.
const LISTING_TYPES: [&str; 3] = [
    "application/rdf+xml",
    "application/atom+xml",
    "application/xml",
];

/// The agent's service address as the proxy must name it.
fn service_addr(config: &Config) -> Option<String> {
    config.service.as_ref().map(|s| s.listen.to_string())
}

fn check_nginx(config: &Config, file: &Path, text: &str, out: &mut Vec<Finding>) {
    let name = file.display();
    let ds = match nginx_parse(text) {
        Ok(d) => d,
        Err(e) => {
            out.push(Finding::fix(
                format!("{name}: cannot be read as nginx configuration"),
                e,
            ));
            return;
        }
    };
    let every = all(&ds);
    // Media types: a `types` block here, or the mime.types it includes.
    let mut types: Vec<(String, String)> = Vec::new();
    for d in &every {
        if d.name == "types" {
            for t in &d.block {
                for ext in &t.args {
                    types.push((ext.clone(), t.name.clone()));
                }
            }
        }
        if d.name == "include"
            && let Some(inc) = d.args.first()
            && inc.ends_with("mime.types")
            && let Ok(mt) = std::fs::read_to_string(inc)
            && let Ok(parsed) = nginx_parse(&mt)
        {
            for t in all(&parsed).into_iter().filter(|d| d.name == "types") {
                for entry in &t.block {
                    for ext in &entry.args {
                        types.push((ext.clone(), entry.name.clone()));
                    }
                }
            }
        }
    }
    for (ext, want) in [
        ("rdf", "application/rdf+xml"),
        ("atom", "application/atom+xml"),
    ] {
        match types.iter().find(|(e, _)| e == ext) {
            Some((_, t)) if t == want => {
                out.push(Finding::ok(format!("{name}: .{ext} is served as {want}")))
            }
            Some((_, t)) => out.push(Finding::fix(
                format!("{name}: .{ext} is served as {t}"),
                format!("map it to {want}: types {{ {want} {ext}; }}"),
            )),
            None => out.push(Finding::fix(
                format!("{name}: no media type for .{ext} (Debian's mime.types has none for .rdf)"),
                format!("add: types {{ {want} {ext}; }} before include mime.types"),
            )),
        }
    }
    // Compression of the listings.
    let gzip_on = every
        .iter()
        .any(|d| d.name == "gzip" && d.args.first().is_some_and(|a| a == "on"));
    let gzip_types: Vec<&String> = every
        .iter()
        .filter(|d| d.name == "gzip_types")
        .flat_map(|d| d.args.iter())
        .collect();
    let missing: Vec<&str> = LISTING_TYPES
        .into_iter()
        .filter(|t| !gzip_types.iter().any(|g| g == t || *g == "*"))
        .collect();
    if gzip_on && missing.is_empty() {
        out.push(Finding::ok(format!(
            "{name}: robots.rdf, the changes feed and sitemaps are gzip-compressed"
        )));
    } else {
        out.push(Finding::fix(
            format!(
                "{name}: the listings go out uncompressed ({})",
                if gzip_on {
                    format!("gzip_types lacks {}", missing.join(", "))
                } else {
                    "gzip is not on".to_string()
                }
            ),
            "add: gzip on; gzip_types application/rdf+xml application/atom+xml application/xml text/xml;",
        ));
    }
    // The proxy of the agent's service.
    if let Some(addr) = service_addr(config) {
        let proxies: Vec<&Directive> = every
            .iter()
            .filter(|d| {
                d.name == "location" && d.args.iter().any(|a| a.contains("/.well-known/webcoop"))
            })
            .flat_map(|d| d.block.iter().filter(|b| b.name == "proxy_pass"))
            .collect();
        let to: Vec<&str> = proxies
            .iter()
            .filter_map(|p| p.args.first().map(String::as_str))
            .collect();
        let right = to.iter().any(|t| {
            t.trim_end_matches('/')
                .strip_prefix("http://")
                .is_some_and(|h| h == addr)
        });
        if right {
            out.push(Finding::ok(format!(
                "{name}: /.well-known/webcoop/ is proxied to the agent at {addr}"
            )));
        } else {
            let found = if to.is_empty() {
                "not proxied".to_string()
            } else {
                format!("proxied to {}", to.join(", "))
            };
            out.push(Finding::fix(
                format!("{name}: /.well-known/webcoop/ is {found}, but the agent listens on {addr}"),
                format!("add: location ^~ /.well-known/webcoop/ {{ proxy_pass http://{addr}; proxy_set_header Host $host; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; }}"),
            ));
        }
    }
}

fn check_apache(config: &Config, file: &Path, text: &str, out: &mut Vec<Finding>) {
    let name = file.display();
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let lower: Vec<String> = lines.iter().map(|l| l.to_ascii_lowercase()).collect();
    for (ext, want) in [
        ("rdf", "application/rdf+xml"),
        ("atom", "application/atom+xml"),
    ] {
        let overridden = lower.iter().find(|l| {
            l.starts_with("addtype ")
                && l.split_whitespace()
                    .skip(2)
                    .any(|e| e.trim_start_matches('.') == ext)
        });
        match overridden {
            Some(l) if !l.contains(want) => out.push(Finding::fix(
                format!("{name}: .{ext} is mapped elsewhere ({l})"),
                format!("AddType {want} .{ext}"),
            )),
            _ => out.push(Finding::ok(format!(
                "{name}: .{ext} is served as {want} (Apache's mime.types)"
            ))),
        }
    }
    let deflate: Vec<&String> = lower
        .iter()
        .filter(|l| l.starts_with("addoutputfilterbytype") && l.contains("deflate"))
        .collect();
    let missing: Vec<&str> = LISTING_TYPES
        .into_iter()
        .filter(|t| {
            !deflate
                .iter()
                .any(|l| l.split_whitespace().any(|w| w == *t))
        })
        .collect();
    if missing.is_empty() {
        out.push(Finding::ok(format!(
            "{name}: robots.rdf, the changes feed and sitemaps are compressed (mod_deflate)"
        )));
    } else {
        out.push(Finding::fix(
            format!("{name}: the listings go out uncompressed (no DEFLATE for {})", missing.join(", ")),
            "add: AddOutputFilterByType DEFLATE application/rdf+xml application/atom+xml application/xml text/xml",
        ));
    }
    if let Some(addr) = service_addr(config) {
        let right = lower.iter().any(|l| {
            l.starts_with("proxypass ")
                && l.contains("/.well-known/webcoop/")
                && l.contains(&format!("http://{addr}/"))
        });
        if right {
            out.push(Finding::ok(format!(
                "{name}: /.well-known/webcoop/ is proxied to the agent at {addr}"
            )));
        } else {
            out.push(Finding::fix(
                format!("{name}: /.well-known/webcoop/ is not proxied to the agent at {addr}"),
                format!("add (with mod_proxy_http): ProxyPass /.well-known/webcoop/ http://{addr}/.well-known/webcoop/ and ProxyPreserveHost On"),
            ));
        }
    }
}

/// The robots.txt lines that point crawlers at the agent's documents.
pub fn robots_lines(config: &Config) -> [String; 2] {
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

/// Everything `check` looks at.
pub fn check(config: &Config) -> Vec<Finding> {
    let mut out = Vec::new();
    // The state directory: the agent's alone.
    match std::fs::metadata(&config.state) {
        Ok(m) if m.permissions().mode() & 0o002 != 0 => out.push(Finding::fix(
            format!(
                "state directory {} is writable by every user",
                config.state.display()
            ),
            format!("chmod o-w {}", config.state.display()),
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
    // The web server.
    if config.server_config.is_empty() {
        out.push(Finding::fix(
            "no web server configuration given: its proxy, media types, compression and protected locations are not checked",
            "give --server-config /etc/nginx/sites-enabled/SITE (or the Apache virtual host)",
        ));
    }
    for file in &config.server_config {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                out.push(Finding::fix(
                    format!("{}: {e}", file.display()),
                    "give a readable file",
                ));
                continue;
            }
        };
        if crate::access::looks_like_apache(&text) {
            check_apache(config, file, &text, &mut out);
        } else {
            check_nginx(config, file, &text, &mut out);
        }
        let mut rules = crate::access::AccessRules::none();
        match rules.add_server_config(file, &config.docroot, config.base_url.path()) {
            Ok(()) => {
                for p in rules.protected() {
                    out.push(Finding::ok(format!(
                        "kept out, as the server protects it: {p}"
                    )));
                }
            }
            Err(e) => out.push(Finding::fix(
                format!("{e}"),
                "the agent hides what it cannot read of the configuration; simplify that part",
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_configuration_is_read_into_directives() {
        let ds = nginx_parse(
            "server { listen 80; # comment\n location ^~ /.well-known/webcoop/ { proxy_pass \"http://127.0.0.1:8081\"; } types { application/rdf+xml rdf; } }",
        )
        .unwrap();
        let every = all(&ds);
        let pass = every.iter().find(|d| d.name == "proxy_pass").unwrap();
        assert_eq!(pass.args, ["http://127.0.0.1:8081"]);
        assert!(
            every
                .iter()
                .any(|d| d.name == "application/rdf+xml" && d.args == ["rdf"])
        );
        assert!(nginx_parse("server { }}").is_err());
        assert!(nginx_parse("server { listen 80;").is_err());
        assert!(nginx_parse("server { listen 80; }").is_ok());
    }
}

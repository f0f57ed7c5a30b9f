//! Where the web server itself refuses to show files: directories and files protected by
//! `.htaccess` (`Require`, `Deny`, `Auth*`), and the locations of an nginx or Apache
//! configuration (`auth_basic`, `deny all`, `internal`, `Require`, a `return` of 401/403/404).
//!
//! The agent must never publish what the server would keep to itself, so these rules err on the
//! safe side: a protected location also hides the more specific locations nested under it or
//! declared beside it, and a rule that cannot be understood (a regular expression the `regex`
//! crate does not accept) hides the whole directory of its `.htaccess`, or stops the agent with
//! a named error when it comes from `--server-config`.

// nginx and Apache use PCRE; fancy-regex adds the look-around and back-references PCRE
// configurations use (the shipped nginx block itself has `(?!well-known/)`) to the regex crate.
use fancy_regex::{Regex, RegexBuilder};
use std::fmt;
use std::path::{Path, PathBuf};

/// `.htaccess` files larger than this are not parsed; their directory is hidden instead.
const MAX_RULES_FILE: u64 = 1 << 20;

/// What a rule matches, on the docroot-relative path with a leading `/` (`/private/a.html`).
#[derive(Debug, Clone)]
enum Matcher {
    /// Everything under (or at) this path prefix, compared as nginx compares prefixes.
    Prefix(String),
    /// Exactly this path.
    Exact(String),
    /// A regular expression over the whole path.
    Path(Regex),
    /// Files whose name (last segment) matches, under a directory prefix (`""` for anywhere).
    FileName { under: String, name: Regex },
}

/// One protected place, with where it came from.
#[derive(Debug, Clone)]
pub struct Protected {
    matcher: Matcher,
    /// Where the rule was read, and why it protects (`site.conf:12: auth_basic`).
    pub source: String,
}

impl fmt::Display for Protected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.matcher {
            Matcher::Prefix(p) => write!(f, "{p}* ({})", self.source),
            Matcher::Exact(p) => write!(f, "{p} ({})", self.source),
            Matcher::Path(r) => write!(f, "~{} ({})", r.as_str(), self.source),
            Matcher::FileName { under, name } => {
                write!(f, "{under}/**/~{} ({})", name.as_str(), self.source)
            }
        }
    }
}

/// A configuration the agent cannot safely understand.
#[derive(Debug, thiserror::Error)]
#[error("--server-config {path}: {reason}")]
pub struct ServerConfigError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, with the line.
    pub reason: String,
}

/// Every protected place of a site.
#[derive(Debug, Clone, Default)]
pub struct AccessRules {
    rules: Vec<Protected>,
}

impl AccessRules {
    /// No rules.
    pub fn none() -> AccessRules {
        AccessRules::default()
    }

    /// The protected places, for the start-up log.
    pub fn protected(&self) -> &[Protected] {
        &self.rules
    }

    /// Whether a docroot-relative path (`private/a.html`) is protected; for a directory, whether
    /// the directory itself is (everything under it then is).
    pub fn protects(&self, rel: &str) -> Option<&Protected> {
        let path = format!("/{rel}");
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.rules.iter().find(|r| match &r.matcher {
            Matcher::Prefix(p) => path.starts_with(p.as_str()) || format!("{path}/") == *p,
            Matcher::Exact(p) => path == *p,
            Matcher::Path(re) => matches(re, &path),
            Matcher::FileName { under, name: re } => {
                (under.is_empty() || path.starts_with(&format!("{under}/"))) && matches(re, name)
            }
        })
    }

    /// Whether a directory may hold published files: refused only when it is wholly protected
    /// (rules on file names are checked per file).
    pub fn protects_dir(&self, rel: &str) -> Option<&Protected> {
        let path = format!("/{rel}/");
        self.rules.iter().find(|r| match &r.matcher {
            Matcher::Prefix(p) => path.starts_with(p.as_str()),
            _ => false,
        })
    }

    /// Adds the rules of every `.htaccess` under `docroot` (symlinks are not followed: the
    /// agent never publishes through a link that leaves the docroot anyway).
    pub fn add_htaccess_files(&mut self, docroot: &Path) {
        let walk = walkdir::WalkDir::new(docroot)
            .follow_links(false)
            .into_iter();
        for entry in walk.filter_map(Result::ok) {
            if entry.file_type().is_file() && entry.file_name() == ".htaccess" {
                let dir = entry.path().parent().unwrap_or(docroot);
                let rel_dir = dir
                    .strip_prefix(docroot)
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
                self.add_htaccess(entry.path(), &rel_dir);
            }
        }
    }

    /// Adds one `.htaccess` governing the directory `rel_dir` (`""` for the docroot, else
    /// `/sub/dir`).
    pub fn add_htaccess(&mut self, file: &Path, rel_dir: &str) {
        let source = |why: &str| format!("{}: {why}", file.display());
        let whole_dir = |why: String| Protected {
            matcher: Matcher::Prefix(format!("{rel_dir}/")),
            source: why,
        };
        let text = match std::fs::metadata(file) {
            Ok(m) if m.len() > MAX_RULES_FILE => {
                self.rules
                    .push(whole_dir(source("too large to read, so hidden whole")));
                return;
            }
            Ok(_) => match std::fs::read(file) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => {
                    self.rules.push(whole_dir(source(&format!(
                        "unreadable ({e}), so hidden whole"
                    ))));
                    return;
                }
            },
            Err(_) => return,
        };
        match apache_rules(
            &text,
            &file.display().to_string(),
            ApacheContext::Htaccess(rel_dir),
        ) {
            Ok(rules) => self.rules.extend(rules),
            Err(reason) => self
                .rules
                .push(whole_dir(source(&format!("{reason}; hidden whole")))),
        }
    }

    /// Adds the protected locations of an nginx or Apache configuration file. `docroot` maps
    /// `<Directory>` paths; `base_path` (the base URL's path, `/` usually) maps URL locations.
    pub fn add_server_config(
        &mut self,
        file: &Path,
        docroot: &Path,
        base_path: &str,
    ) -> Result<(), ServerConfigError> {
        let err = |reason: String| ServerConfigError {
            path: file.to_path_buf(),
            reason,
        };
        let text = std::fs::read_to_string(file).map_err(|e| err(e.to_string()))?;
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rules = if looks_like_apache(&text) {
            apache_rules(&text, &name, ApacheContext::Server { docroot, base_path })
        } else {
            nginx_rules(&text, &name, base_path)
        }
        .map_err(err)?;
        self.rules.extend(rules);
        Ok(())
    }
}

pub(crate) fn looks_like_apache(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim_start().to_ascii_lowercase();
        t.starts_with("<directory")
            || t.starts_with("<location")
            || t.starts_with("<files")
            || t.starts_with("<virtualhost")
            || t.starts_with("documentroot")
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

fn regex(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .delegate_size_limit(1 << 20)
        .backtrack_limit(100_000)
        .build()
        .map_err(|e| format!("regular expression {pattern:?} is not understood ({e})"))
}

/// Whether `re` matches `text`; a match that runs past the backtracking limit counts as a
/// match (the safe side: hidden, not published).
fn matches(re: &Regex, text: &str) -> bool {
    re.is_match(text).unwrap_or(true)
}

/// A shell wildcard (`*.inc`, `wp-config.php`) as a whole-name regex, as Apache's `<Files>`.
fn wildcard(pattern: &str) -> Result<Regex, String> {
    let mut re = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&fancy_regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex(&re, false)
}

// ---------------------------------------------------------------------------------------------
// nginx

/// One directive of an nginx configuration, with its block if it has one.
#[derive(Debug)]
struct NginxDirective {
    name: String,
    args: Vec<String>,
    line: usize,
    block: Option<Vec<NginxDirective>>,
}

fn nginx_tokens(text: &str) -> Result<Vec<(String, usize)>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '#' => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            '{' | '}' | ';' => out.push((c.to_string(), line)),
            '"' | '\'' => {
                let mut s = String::new();
                let start = line;
                loop {
                    match chars.next() {
                        None => return Err(format!("line {start}: unterminated quoted string")),
                        Some('\\') => {
                            if let Some(n) = chars.next() {
                                s.push(n);
                            }
                        }
                        Some(q) if q == c => break,
                        Some(n) => {
                            if n == '\n' {
                                line += 1;
                            }
                            s.push(n);
                        }
                    }
                }
                out.push((s, start));
            }
            c => {
                let mut s = String::from(c);
                while let Some(&n) = chars.peek() {
                    if n.is_whitespace() || matches!(n, '{' | '}' | ';') {
                        break;
                    }
                    s.push(n);
                    chars.next();
                }
                out.push((s, line));
            }
        }
    }
    Ok(out)
}

fn nginx_parse(
    tokens: &[(String, usize)],
    pos: &mut usize,
    depth: usize,
) -> Result<Vec<NginxDirective>, String> {
    if depth > 32 {
        return Err("blocks nested too deeply".into());
    }
    let mut out = Vec::new();
    while *pos < tokens.len() {
        let (tok, line) = &tokens[*pos];
        *pos += 1;
        if tok == "}" {
            return if depth == 0 {
                Err(format!("line {line}: unexpected }}"))
            } else {
                Ok(out)
            };
        }
        if tok == ";" || tok == "{" {
            return Err(format!("line {line}: unexpected {tok}"));
        }
        let mut d = NginxDirective {
            name: tok.clone(),
            args: Vec::new(),
            line: *line,
            block: None,
        };
        loop {
            let Some((t, _)) = tokens.get(*pos) else {
                return Err(format!("line {line}: {} is not terminated", d.name));
            };
            *pos += 1;
            match t.as_str() {
                ";" => break,
                "{" => {
                    d.block = Some(nginx_parse(tokens, pos, depth + 1)?);
                    break;
                }
                "}" => return Err(format!("line {line}: {} is not terminated", d.name)),
                _ => d.args.push(t.clone()),
            }
        }
        out.push(d);
    }
    if depth > 0 {
        return Err("a block is not closed".into());
    }
    Ok(out)
}

/// Why an nginx block keeps its content from anyone, if it does (its own directives only:
/// nested blocks are judged on their own).
fn nginx_protects(block: &[NginxDirective]) -> Option<String> {
    block.iter().filter(|d| d.block.is_none()).find_map(|d| {
        let arg = |i: usize| d.args.get(i).map(|s| s.to_ascii_lowercase());
        match d.name.as_str() {
            "auth_basic" | "auth_request" | "auth_jwt" if arg(0).as_deref() != Some("off") => {
                Some(d.name.clone())
            }
            "deny" if arg(0).as_deref() == Some("all") => Some("deny all".into()),
            "internal" => Some("internal".into()),
            "return"
                if arg(0)
                    .and_then(|s| s.parse::<u16>().ok())
                    .is_some_and(|s| matches!(s, 401 | 403 | 404 | 410 | 444)) =>
            {
                Some(format!("return {}", d.args[0]))
            }
            _ => None,
        }
    })
}

fn nginx_rules(text: &str, name: &str, base_path: &str) -> Result<Vec<Protected>, String> {
    let tokens = nginx_tokens(text)?;
    let tree = nginx_parse(&tokens, &mut 0, 0)?;
    let mut out = Vec::new();
    nginx_walk(&tree, name, base_path, &mut out)?;
    Ok(out)
}

fn nginx_walk(
    block: &[NginxDirective],
    name: &str,
    base_path: &str,
    out: &mut Vec<Protected>,
) -> Result<(), String> {
    for d in block {
        let Some(children) = &d.block else { continue };
        if d.name == "location" {
            if let Some(why) = nginx_protects(children) {
                let source = format!("{name}:{}: location with {why}", d.line);
                let matcher = match d.args.as_slice() {
                    [m, path] if m == "=" => under_base(path, base_path).map(Matcher::Exact),
                    [m, path] if m == "^~" => under_base(path, base_path).map(Matcher::Prefix),
                    [m, re] if m == "~" => Some(Matcher::Path(
                        regex(re, false).map_err(|e| format!("line {}: {e}", d.line))?,
                    )),
                    [m, re] if m == "~*" => Some(Matcher::Path(
                        regex(re, true).map_err(|e| format!("line {}: {e}", d.line))?,
                    )),
                    [path] if path.starts_with('@') => None,
                    [path] => under_base(path, base_path).map(Matcher::Prefix),
                    _ => {
                        return Err(format!(
                            "line {}: location {:?} is not understood",
                            d.line, d.args
                        ));
                    }
                };
                if let Some(matcher) = matcher {
                    out.push(Protected { matcher, source });
                }
                // Everything nested is covered by this location already.
                continue;
            }
        } else if matches!(d.name.as_str(), "server" | "http")
            && let Some(why) = nginx_protects(children)
        {
            out.push(Protected {
                matcher: Matcher::Prefix("/".into()),
                source: format!("{name}:{}: {} block with {why}", d.line, d.name),
            });
            continue;
        }
        nginx_walk(children, name, base_path, out)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Apache (configuration files and .htaccess)

enum ApacheContext<'a> {
    /// A `.htaccess` in this docroot-relative directory (`""` or `/sub`).
    Htaccess(&'a str),
    /// A server configuration.
    Server {
        docroot: &'a Path,
        base_path: &'a str,
    },
}

/// Why an Apache directive denies access, if it does.
fn apache_denies(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let name = words.next()?.to_ascii_lowercase();
    let rest: Vec<String> = words.map(str::to_ascii_lowercase).collect();
    let rest_is = |w: &[&str]| rest.iter().map(String::as_str).eq(w.iter().copied());
    match name.as_str() {
        "require" if rest_is(&["all", "granted"]) => None,
        "require" => Some(format!("Require {}", rest.join(" "))),
        "deny" => Some("Deny".into()),
        "authtype" | "authuserfile" | "authgroupfile" | "authname" | "authbasicprovider"
        | "authdigestprovider" => Some(name.to_string()),
        _ => None,
    }
}

/// A section's opening tag (`<Files "x">`): its lowercased name and its argument.
fn section_open(line: &str) -> Option<(String, String)> {
    let inner = line.strip_prefix('<')?.strip_suffix('>')?;
    if inner.starts_with('/') {
        return None;
    }
    let (name, arg) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
    let arg = arg.trim().trim_matches('"').trim_matches('\'').to_string();
    Some((name.to_ascii_lowercase(), arg))
}

fn apache_rules(text: &str, name: &str, ctx: ApacheContext) -> Result<Vec<Protected>, String> {
    // A stack of open sections: (name, argument, line, reason it protects).
    let mut stack: Vec<(String, String, usize, Option<String>)> = Vec::new();
    let mut out = Vec::new();
    let mut logical = String::new();
    let mut start_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let piece = raw.trim();
        if logical.is_empty() {
            start_line = line_no;
        }
        if let Some(cont) = piece.strip_suffix('\\') {
            logical.push_str(cont);
            logical.push(' ');
            continue;
        }
        logical.push_str(piece);
        let line = std::mem::take(&mut logical);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("</") {
            let Some((sname, arg, open_line, why)) = stack.pop() else {
                return Err(format!("line {start_line}: {line} closes nothing"));
            };
            if let Some(why) = why {
                let source = format!("{name}:{open_line}: <{sname}> with {why}");
                let scope = stack_scope(&stack, &ctx);
                if let Some(m) = apache_section_matcher(&sname, &arg, scope.as_deref(), &ctx)
                    .map_err(|e| format!("line {open_line}: {e}"))?
                {
                    out.push(Protected { matcher: m, source });
                }
            }
            continue;
        }
        if let Some((sname, arg)) = section_open(line) {
            if stack.len() > 32 {
                return Err(format!("line {start_line}: sections nested too deeply"));
            }
            stack.push((sname, arg, start_line, None));
            continue;
        }
        let Some(why) = apache_denies(line) else {
            continue;
        };
        match stack.last_mut() {
            Some(top) => {
                top.3.get_or_insert(why);
            }
            None => match &ctx {
                ApacheContext::Htaccess(dir) => out.push(Protected {
                    matcher: Matcher::Prefix(format!("{dir}/")),
                    source: format!("{name}:{start_line}: {why}"),
                }),
                // Server-wide access rules outside any section apply to everything served.
                ApacheContext::Server { .. } => out.push(Protected {
                    matcher: Matcher::Prefix("/".into()),
                    source: format!("{name}:{start_line}: {why} outside any section"),
                }),
            },
        }
    }
    if let Some((sname, _, l, _)) = stack.last() {
        return Err(format!("line {l}: <{sname}> is not closed"));
    }
    Ok(out)
}

/// The directory a `<Files>` section is limited to by the `<Directory>` around it, if any.
fn stack_scope(
    stack: &[(String, String, usize, Option<String>)],
    ctx: &ApacheContext,
) -> Option<String> {
    match ctx {
        ApacheContext::Htaccess(dir) => Some(dir.to_string()),
        ApacheContext::Server { docroot, .. } => stack
            .iter()
            .rev()
            .find(|(n, ..)| n == "directory")
            .and_then(|(_, arg, ..)| directory_under(arg, docroot)),
    }
}

/// A `<Directory>` path as a docroot-relative directory (`""` or `/sub`), if it is inside.
fn directory_under(dir: &str, docroot: &Path) -> Option<String> {
    let dir = Path::new(dir.trim_end_matches('/'));
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for d in [dir, canonical.as_path()] {
        if let Ok(rel) = d.strip_prefix(docroot) {
            let s = rel.to_str()?;
            return Some(if s.is_empty() {
                String::new()
            } else {
                format!("/{s}")
            });
        }
        // A directory above the docroot governs all of it.
        if docroot.starts_with(d) {
            return Some(String::new());
        }
    }
    None
}

fn apache_section_matcher(
    section: &str,
    arg: &str,
    scope: Option<&str>,
    ctx: &ApacheContext,
) -> Result<Option<Matcher>, String> {
    let base_path = match ctx {
        ApacheContext::Server { base_path, .. } => base_path,
        ApacheContext::Htaccess(_) => "/",
    };
    Ok(match section {
        "files" => Some(Matcher::FileName {
            under: scope.unwrap_or_default().to_string(),
            name: wildcard(arg)?,
        }),
        "filesmatch" => Some(Matcher::FileName {
            under: scope.unwrap_or_default().to_string(),
            name: regex(arg, false)?,
        }),
        "directory" => match ctx {
            ApacheContext::Server { docroot, .. } => {
                directory_under(arg, docroot).map(|d| Matcher::Prefix(format!("{d}/")))
            }
            ApacheContext::Htaccess(_) => None,
        },
        "directorymatch" => Some(Matcher::Path(regex(arg, false)?)),
        "location" => under_base(arg, base_path).map(Matcher::Prefix),
        "locationmatch" => Some(Matcher::Path(regex(arg, false)?)),
        // <Limit GET> and <RequireAll> inside a section: the section they sit in protects.
        "limit" | "limitexcept" | "requireall" | "requireany" | "requirenone" | "ifmodule"
        | "ifdefine" | "ifversion" | "if" | "else" | "elseif" | "virtualhost" => match ctx {
            ApacheContext::Htaccess(dir) => Some(Matcher::Prefix(format!("{dir}/"))),
            ApacheContext::Server { .. } => Some(Matcher::Prefix(
                scope.map_or_else(|| "/".to_string(), |s| format!("{s}/")),
            )),
        },
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nginx(conf: &str) -> AccessRules {
        AccessRules {
            rules: nginx_rules(conf, "site.conf", "/").unwrap(),
        }
    }

    #[test]
    fn nginx_locations_with_auth_deny_internal_or_refusals_are_protected() {
        let r = nginx(
            r#"server {
                listen 80; root /var/www;
                location / { try_files $uri =404; }
                location /private/ { auth_basic "staff"; auth_basic_user_file /etc/htpasswd; }
                location = /admin.html { deny all; }
                location ^~ /internal/ { internal; }
                location ~* \.(sql|bak)$ { return 404; }
                location /open/ { auth_basic off; }
                location /nested/ { location /nested/secret/ { deny all; } }
            }"#,
        );
        for p in [
            "private/notes.html",
            "admin.html",
            "internal/x.css",
            "dump.SQL",
            "nested/secret/a.html",
        ] {
            assert!(r.protects(p).is_some(), "{p}");
        }
        for p in [
            "index.html",
            "admin.html.txt",
            "open/a.html",
            "nested/a.html",
        ] {
            assert!(r.protects(p).is_none(), "{p}");
        }
        assert!(r.protects_dir("private").is_some());
        assert!(r.protects_dir("open").is_none());
        assert!(r.protected()[0].to_string().contains("site.conf:4"));
    }

    #[test]
    fn apache_sections_and_htaccess_rules_are_protected() {
        let tmp = tempfile::tempdir().unwrap();
        let docroot = tmp.path().join("www");
        std::fs::create_dir_all(docroot.join("members")).unwrap();
        std::fs::create_dir_all(docroot.join("blog")).unwrap();
        let conf = tmp.path().join("site.conf");
        std::fs::write(
            &conf,
            format!(
                "<VirtualHost *:80>\n  DocumentRoot {d}\n  <Directory {d}/members>\n    AuthType Basic\n    \
                 Require valid-user\n  </Directory>\n  <Directory {d}>\n    Require all granted\n  </Directory>\n  \
                 <Location /status>\n    Require ip 10.0.0.0/8\n  </Location>\n  <FilesMatch \"\\.(inc|ini)$\">\n    \
                 Require all denied\n  </FilesMatch>\n</VirtualHost>\n",
                d = docroot.display()
            ),
        )
        .unwrap();
        std::fs::write(
            docroot.join("blog/.htaccess"),
            "RewriteEngine On\n<Files wp-config.php>\n  Order allow,deny\n  Deny from all\n</Files>\n",
        )
        .unwrap();
        let mut r = AccessRules::none();
        r.add_server_config(&conf, &docroot, "/").unwrap();
        r.add_htaccess_files(&docroot);
        for p in [
            "members/a.html",
            "status",
            "status/x",
            "lib/db.inc",
            "blog/wp-config.php",
            "blog/sub/wp-config.php",
        ] {
            assert!(r.protects(p).is_some(), "{p}");
        }
        for p in [
            "index.html",
            "blog/index.html",
            "wp-config.php",
            "stat.html",
        ] {
            assert!(r.protects(p).is_none(), "{p}: {:?}", r.protects(p));
        }
        // A whole-directory .htaccess.
        std::fs::write(
            docroot.join("members/.htaccess"),
            "AuthType Basic\nRequire valid-user\n",
        )
        .unwrap();
        let mut h = AccessRules::none();
        h.add_htaccess_files(&docroot);
        assert!(h.protects_dir("members").is_some());
        assert!(h.protects("members/x.html").is_some());
        assert!(h.protects("membersx.html").is_none());
    }

    #[test]
    fn what_cannot_be_understood_is_refused_or_hidden() {
        let tmp = tempfile::tempdir().unwrap();
        let conf = tmp.path().join("bad.conf");
        std::fs::write(&conf, "server { location /a { deny all; }").unwrap();
        let e = AccessRules::none()
            .add_server_config(&conf, tmp.path(), "/")
            .unwrap_err();
        assert!(
            e.to_string().contains("bad.conf") && e.to_string().contains("not closed"),
            "{e}"
        );
        std::fs::write(&conf, "server { location ~ (unclosed { deny all; } }").unwrap();
        let e = AccessRules::none()
            .add_server_config(&conf, tmp.path(), "/")
            .unwrap_err();
        assert!(e.to_string().contains("line 1"), "{e}");
        // An .htaccess the agent cannot understand hides its directory.
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(
            tmp.path().join("d/.htaccess"),
            "<FilesMatch \"(unclosed\">\nRequire all denied\n</FilesMatch>\n",
        )
        .unwrap();
        let mut r = AccessRules::none();
        r.add_htaccess_files(tmp.path());
        assert!(r.protects_dir("d").is_some());
    }

    #[test]
    fn the_shipped_nginx_block_is_understood() {
        let conf = include_str!("../../examples/nginx/site.conf");
        let r = nginx(conf);
        assert!(r.protects(".git/config").is_some());
        assert!(r.protects("a/.htpasswd").is_some());
        assert!(r.protects("index.html~").is_some());
        assert!(r.protects(".well-known/webcoop/changes.atom").is_none());
        assert!(r.protects("index.html").is_none());
    }

    #[test]
    fn locations_are_taken_relative_to_the_base_path() {
        let r = AccessRules {
            rules: nginx_rules("location /site/private/ { deny all; }", "x", "/site/").unwrap(),
        };
        assert!(r.protects("private/a.html").is_some());
        assert!(r.protects("site/private/a.html").is_none());
    }
}

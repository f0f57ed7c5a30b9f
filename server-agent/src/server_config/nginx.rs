//! nginx's configuration: its syntax (directives ending in `;` or a `{ }` block, `#`
//! comments, quoted arguments), its `include`s spliced in place, and the places where the
//! judge cannot see what others get.

use super::directives::{self, Kind, NGINX_OPAQUE_BLOCKS};
use super::{Hidden, Matcher, Site, expand_include, read_rules_file, regex, under_base};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Includes followed within includes, at most.
const MAX_INCLUDE_DEPTH: usize = 16;

/// One directive, with its block if it has one, and where it was read.
#[derive(Debug, Clone)]
pub(crate) struct Directive {
    /// Its name.
    pub(crate) name: String,
    /// Its arguments, unquoted.
    pub(crate) args: Vec<String>,
    /// The file it was read from.
    pub(crate) file: Arc<str>,
    /// Its line there.
    pub(crate) line: usize,
    /// Its block, when it has one.
    pub(crate) block: Option<Vec<Directive>>,
    /// For an `include` that could not be read: why.
    pub(crate) broken: Option<String>,
}

impl Directive {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

fn tokens(text: &str) -> Result<Vec<(String, usize)>, String> {
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

fn block(
    tokens: &[(String, usize)],
    pos: &mut usize,
    depth: usize,
    file: &Arc<str>,
) -> Result<Vec<Directive>, String> {
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
        let mut d = Directive {
            name: tok.clone(),
            args: Vec::new(),
            file: file.clone(),
            line: *line,
            block: None,
            broken: None,
        };
        loop {
            let Some((t, _)) = tokens.get(*pos) else {
                return Err(format!("line {line}: {} is not terminated", d.name));
            };
            *pos += 1;
            match t.as_str() {
                ";" => break,
                "{" => {
                    d.block = Some(block(tokens, pos, depth + 1, file)?);
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

/// Parses nginx's configuration syntax; `file` names it in messages.
pub(crate) fn parse(text: &str, file: &str) -> Result<Vec<Directive>, String> {
    let file: Arc<str> = Arc::from(file);
    block(&tokens(text)?, &mut 0, 0, &file)
}

/// A configuration with its includes spliced in, and the files they came from.
pub(crate) struct Loaded {
    /// The directives.
    pub(crate) tree: Vec<Directive>,
    /// The included files read.
    pub(crate) includes: Vec<PathBuf>,
}

/// Where relative includes start: nginx's configuration prefix, the directory of the
/// `nginx.conf` above the file (`/etc/nginx` for `/etc/nginx/sites-enabled/x`), or the file's
/// own directory.
fn prefix_of(file: &Path) -> PathBuf {
    let start = file.parent().unwrap_or(Path::new("/"));
    start
        .ancestors()
        .find(|d| d.join("nginx.conf").is_file())
        .unwrap_or(start)
        .to_path_buf()
}

/// Reads `file` with every `include` spliced in place. An include that cannot be read stays
/// as a directive marked broken: what it would govern is hidden.
pub(crate) fn load(file: &Path) -> Result<Loaded, String> {
    let text = read_rules_file(file)?;
    let name = file.display().to_string();
    let mut tree = parse(&text, &name)?;
    let prefix = prefix_of(file);
    let mut includes = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::from([file.to_path_buf()]);
    splice(&mut tree, &prefix, 0, &mut includes, &mut seen);
    Ok(Loaded { tree, includes })
}

fn splice(
    tree: &mut Vec<Directive>,
    prefix: &Path,
    depth: usize,
    includes: &mut Vec<PathBuf>,
    seen: &mut HashSet<PathBuf>,
) {
    let mut out = Vec::with_capacity(tree.len());
    for mut d in std::mem::take(tree) {
        if let Some(b) = d.block.as_mut() {
            splice(b, prefix, depth, includes, seen);
            out.push(d);
            continue;
        }
        if d.name != "include" {
            out.push(d);
            continue;
        }
        let Some(pattern) = d.args.first().cloned() else {
            d.broken = Some("include without a file".into());
            out.push(d);
            continue;
        };
        if depth >= MAX_INCLUDE_DEPTH {
            d.broken = Some(format!("include {pattern} nested too deeply"));
            out.push(d);
            continue;
        }
        let files = match expand_include(&pattern, prefix) {
            Ok(f) => f,
            Err(e) => {
                d.broken = Some(format!("include {pattern}: {e}"));
                out.push(d);
                continue;
            }
        };
        for f in files {
            if !seen.insert(f.clone()) {
                continue;
            }
            includes.push(f.clone());
            let parsed =
                read_rules_file(&f).and_then(|text| parse(&text, &f.display().to_string()));
            match parsed {
                Ok(mut inner) => {
                    splice(&mut inner, prefix, depth + 1, includes, seen);
                    out.extend(inner);
                }
                Err(e) => {
                    let mut broken = d.clone();
                    broken.broken = Some(format!("include {}: {e}", f.display()));
                    out.push(broken);
                }
            }
        }
    }
    *tree = out;
}

/// Every directive, depth first.
pub(crate) fn all(ds: &[Directive]) -> Vec<&Directive> {
    let mut out = Vec::new();
    for d in ds {
        out.push(d);
        if let Some(b) = &d.block {
            out.extend(all(b));
        }
    }
    out
}

/// What the configuration's own variables (`set`, `map`, `geo`, `split_clients`, named
/// captures) are: those whose value may depend on who asks, and every one it defines.
struct Variables {
    who_asks: HashSet<String>,
    defined: HashSet<String>,
}

impl Variables {
    /// Whether reading `v` may give another value to another client.
    fn depends(&self, v: &str) -> bool {
        self.who_asks.contains(v)
            || (!self.defined.contains(v) && !directives::nginx_variable_same_for_all(v))
    }
}

fn variables(tree: &[Directive]) -> Variables {
    // Each defined variable, with the variables its definitions read (None: always depends).
    let mut defs: HashMap<String, Option<HashSet<String>>> = HashMap::new();
    let mut reads = |var: &str, from: Option<HashSet<String>>| {
        let entry = defs.entry(var.trim_start_matches('$').to_ascii_lowercase());
        match (entry, from) {
            (std::collections::hash_map::Entry::Occupied(mut o), Some(f)) => {
                if let Some(s) = o.get_mut() {
                    s.extend(f);
                }
            }
            (std::collections::hash_map::Entry::Occupied(mut o), None) => {
                o.insert(None);
            }
            (std::collections::hash_map::Entry::Vacant(v), f) => {
                v.insert(f);
            }
        }
    };
    for d in all(tree) {
        let words = |ws: &[String]| -> HashSet<String> {
            ws.iter().flat_map(|w| variables_in(w)).collect()
        };
        match (d.name.as_str(), d.args.as_slice()) {
            ("set", [var, value, ..]) => {
                reads(var, Some(variables_in(value).into_iter().collect()))
            }
            ("map", [source, var, ..]) => {
                let mut from: HashSet<String> = variables_in(source).into_iter().collect();
                for entry in d.block.iter().flatten() {
                    from.extend(words(&entry.args));
                    from.extend(variables_in(&entry.name));
                }
                reads(var, Some(from));
            }
            ("split_clients", [source, var, ..]) => {
                reads(var, Some(variables_in(source).into_iter().collect()))
            }
            // The client's address, always (whatever source it is given).
            ("geo", args) | ("geoip2", args) => {
                if let Some(var) = args.last() {
                    reads(var, None);
                }
            }
            ("auth_request_set", [var, ..]) | ("secure_link", [var, ..]) => reads(var, None),
            _ => {}
        }
    }
    // Named captures of regular expressions read the URI: the same for everyone.
    let named: HashSet<String> = all(tree)
        .iter()
        .filter(|d| d.name == "location" || d.name == "if" || d.name == "rewrite")
        .flat_map(|d| d.args.iter().flat_map(|a| named_captures(a)))
        .collect();
    let mut who: HashSet<String> = HashSet::new();
    loop {
        let before = who.len();
        for (var, from) in &defs {
            let depends = match from {
                None => true,
                Some(f) => f.iter().any(|v| variable_depends(v, &defs, &who, &named)),
            };
            if depends {
                who.insert(var.clone());
            }
        }
        if who.len() == before {
            let mut defined: HashSet<String> = defs.into_keys().collect();
            defined.extend(named);
            return Variables {
                who_asks: who,
                defined,
            };
        }
    }
}

/// Whether a variable read depends on who asks, given what is known of the defined ones.
fn variable_depends(
    v: &str,
    defs: &HashMap<String, Option<HashSet<String>>>,
    who: &HashSet<String>,
    named: &HashSet<String>,
) -> bool {
    if who.contains(v) {
        return true;
    }
    if defs.contains_key(v) || named.contains(v) {
        return false;
    }
    !directives::nginx_variable_same_for_all(v)
}

/// The variables a word reads (`$remote_addr`, `${host}`), lower case, without `$`.
fn variables_in(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = word.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' {
            let braced = bytes.get(i + 1) == Some(&b'{');
            let start = i + 1 + usize::from(braced);
            let mut end = start;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            if end > start {
                out.push(word[start..end].to_ascii_lowercase());
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// The names of `(?<name>...)` and `(?P<name>...)` groups in a regular expression.
fn named_captures(re: &str) -> Vec<String> {
    let mut out = Vec::new();
    for marker in ["(?<", "(?P<"] {
        let mut rest = re;
        while let Some(i) = rest.find(marker) {
            let after = &rest[i + marker.len()..];
            if let Some(end) = after.find('>') {
                out.push(after[..end].to_ascii_lowercase());
            }
            rest = after;
        }
    }
    out
}

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
    /// The server blocks to read: those serving the site's host, or all when none says so.
    servers_by_name: bool,
    out: Vec<Hidden>,
}

impl Analysis<'_> {
    fn hide(&mut self, scope: &Scope, d: &Directive, why: String) {
        let matcher = match scope {
            Scope::Everything => Matcher::Prefix("/".into()),
            Scope::Location(m) => m.clone(),
            Scope::Nowhere => return,
        };
        self.out.push(Hidden {
            matcher,
            source: format!("{}: {why}", d.at()),
        });
    }

    fn location(&mut self, d: &Directive, scope: &Scope) -> Scope {
        if matches!(scope, Scope::Nowhere) {
            return Scope::Nowhere;
        }
        let base = self.site.base_path;
        let m = match d.args.as_slice() {
            [m, path] if m == "=" => under_base(path, base).map(Matcher::Exact),
            [m, path] if m == "^~" => under_base(path, base).map(Matcher::Prefix),
            [m, re] if m == "~" || m == "~*" => match regex(re, m == "~*") {
                Ok(r) => Some(Matcher::Path(r)),
                Err(e) => {
                    // What it matches is unknown: everything around it is hidden.
                    self.hide(scope, d, format!("location {e}"));
                    return Scope::Nowhere;
                }
            },
            [path] if path.starts_with('@') => return Scope::Nowhere,
            [path] => under_base(path, base).map(Matcher::Prefix),
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

    /// Whether a `server` block serves the site's host (or is a catch-all).
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
        if names.is_empty() || default {
            return true;
        }
        let host = self.site.host.to_ascii_lowercase();
        names.iter().any(|n| {
            let n = n.to_ascii_lowercase();
            if let Some(re) = n.strip_prefix('~') {
                return regex(re, true).is_ok_and(|r| r.is_match(&host).unwrap_or(true));
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

    fn walk(&mut self, block: &[Directive], scope: &Scope) {
        for d in block {
            if let Some(why) = &d.broken {
                self.hide(scope, d, format!("{why}, so what it governs is hidden"));
                continue;
            }
            let name = d.name.to_ascii_lowercase();
            match (name.as_str(), &d.block) {
                ("http", Some(b)) => self.walk(b, scope),
                ("server", Some(b)) => {
                    if !self.servers_by_name || self.serves_site(b) {
                        self.walk(b, &Scope::Everything);
                    }
                }
                ("location", Some(b)) => {
                    let inner = self.location(d, scope);
                    self.walk(b, &inner);
                }
                ("if", Some(b)) => {
                    let reads: Vec<String> = d.args.iter().flat_map(|a| variables_in(a)).collect();
                    if let Some(v) = reads.iter().find(|v| self.vars.depends(v)) {
                        self.hide(scope, d, format!("if (${v} ...) may depend on who asks"));
                    }
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
                (n, None) => {
                    let first = d.args.first().map(|a| a.to_ascii_lowercase());
                    // `auth_basic off` asks no one; `deny all` and `allow all` treat everyone
                    // alike, and the judge sees what they do.
                    let off = (n.starts_with("auth_") && first.as_deref() == Some("off"))
                        || (matches!(n, "allow" | "deny") && first.as_deref() == Some("all"));
                    match directives::nginx(n, self.site.trusted) {
                        Kind::Seen => {}
                        Kind::WhoAsks if off => {}
                        Kind::WhoAsks => {
                            self.hide(scope, d, format!("{n} depends on who asks"))
                        }
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
        }
    }
}

/// The places of the site a loaded configuration hides from the judge.
pub(crate) fn hidden_places(loaded: &Loaded, site: Site) -> Vec<Hidden> {
    let servers: Vec<&Directive> = all(&loaded.tree)
        .into_iter()
        .filter(|d| d.name == "server" && d.block.is_some())
        .collect();
    let mut a = Analysis {
        site,
        vars: variables(&loaded.tree),
        servers_by_name: false,
        out: Vec::new(),
    };
    // Only the server blocks that serve the site's host, when any does; all of them else.
    a.servers_by_name = servers
        .iter()
        .any(|d| d.block.as_deref().is_some_and(|b| a.serves_site(b)));
    a.walk(&loaded.tree, &Scope::Everything);
    a.out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_hides, assert_hides_nothing, site};

    fn hidden(conf: &str) -> super::super::ServerRules {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("site.conf");
        std::fs::write(&file, conf).unwrap();
        let mut rules = super::super::ServerRules::none();
        rules.add_server_config(&file, site(tmp.path())).unwrap();
        rules
    }

    #[test]
    fn what_depends_on_who_asks_is_hidden_and_what_the_judge_sees_is_not() {
        let r = hidden(
            r#"server {
                listen 80; root /var/www; server_name www.example.org;
                location / { try_files $uri $uri/ =404; }
                location /private/ { auth_basic "staff"; auth_basic_user_file /etc/htpasswd; }
                location = /admin.html { allow 10.0.0.0/8; deny all; }
                location ^~ /internal/ { internal; }
                location ~* \.(sql|bak)$ { return 404; }
                location /open/ { auth_basic off; }
                location /office/ { if ($remote_addr !~ ^10\.) { return 403; } }
                location /moved/ { return 302 /elsewhere/; }
                location /app/ { proxy_pass http://127.0.0.1:9000; }
                location ~ \.html$ { fastcgi_pass 127.0.0.1:9001; include /dev/null; }
                location /nested/ { location /nested/secret/ { satisfy any; } }
                location /js/ { js_content app.handler; }
                location /methods/ { limit_except GET { deny all; } }
                location /posts/ { limit_except POST { allow 10.0.0.1; deny all; } }
            }"#,
        );
        assert_hides(
            &r,
            &[
                "private/notes.html",
                "admin.html",
                "office/a.html",
                "nested/secret/a.html",
                "js/x.css",
                "posts/a.html",
            ],
            &[
                "index.html",
                "internal/x.css",
                "dump.SQL",
                "open/a.html",
                "moved/a.css",
                "app/a.css",
                "nested/a.css",
                "methods/a.css",
            ],
        );
        let why = r.hides("js/x.css").unwrap().to_string();
        assert!(
            why.contains("js_content is not understood") && why.contains("--trust-directive"),
            "{why}"
        );
        assert!(
            r.hides("admin.html")
                .unwrap()
                .to_string()
                .contains("site.conf:5")
        );
    }

    #[test]
    fn variables_are_traced_through_set_map_and_geo() {
        let r = hidden(
            r#"map $http_user_agent $bot { default 0; ~bot 1; }
            map $uri $section { default main; ~^/docs docs; }
            geo $office { default 0; 10.0.0.0/8 1; }
            server {
                set $copy $office;
                location /a/ { if ($bot) { return 403; } }
                location /b/ { if ($section = docs) { return 404; } }
                location /c/ { if ($copy) { return 403; } }
                location /d/ { if (-f $request_filename) { break; } }
                location ~ ^/e/(?<page>.+)$ { if ($page = x) { return 404; } }
                location /f/ { if ($arg_debug) { return 200 "debug"; } }
                location /g/ { if ($http_host != "www.example.org") { return 444; } }
            }"#,
        );
        assert_hides(&r, &["a/x", "c/x", "f/x"], &["b/x", "d/x", "e/x", "g/x"]);
    }

    #[test]
    fn includes_are_followed_and_an_unreadable_one_hides_what_it_governs() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("nginx.conf"), "").unwrap();
        std::fs::create_dir(tmp.path().join("snippets")).unwrap();
        std::fs::write(
            tmp.path().join("snippets/deny.conf"),
            "allow 127.0.0.1; deny all;",
        )
        .unwrap();
        std::fs::create_dir(tmp.path().join("sites")).unwrap();
        let file = tmp.path().join("sites/site.conf");
        std::fs::write(
            &file,
            "server { location /admin/ { include snippets/deny.conf; }              location /lost/ { include snippets/missing.conf; }              location /glob/ { include snippets/none-*.conf; } }",
        )
        .unwrap();
        let mut rules = super::super::ServerRules::none();
        rules.add_server_config(&file, site(tmp.path())).unwrap();
        let admin = rules.hides("admin/x.html").unwrap().to_string();
        assert!(
            admin.contains("deny.conf:1") && admin.contains("allow"),
            "{admin}"
        );
        let lost = rules.hides("lost/x.html").unwrap().to_string();
        assert!(lost.contains("missing.conf"), "{lost}");
        assert!(rules.hides("glob/x.html").is_none());
        assert!(rules.hides("index.html").is_none());
        assert!(
            rules
                .sources()
                .contains(&tmp.path().join("snippets/deny.conf"))
        );
    }

    #[test]
    fn only_the_server_blocks_of_the_site_are_read() {
        let r = hidden(
            "server { server_name admin.example.org; allow 10.0.0.0/8; deny all; }
             server { server_name www.example.org; location / { try_files $uri =404; } }",
        );
        assert!(r.hides("index.html").is_none());
        // None serving the site by name: all of them count.
        let r = hidden("server { server_name admin.example.org; allow 10.0.0.0/8; deny all; }");
        assert!(r.hides("index.html").is_some());
    }

    #[test]
    fn debians_default_site_and_the_shipped_block_hide_nothing() {
        // Its mime.types include, wherever nginx is installed or not.
        let tmp = tempfile::tempdir().unwrap();
        let types = tmp.path().join("mime.types");
        std::fs::write(&types, "types { text/html html; }").unwrap();
        let shipped = include_str!("../../../examples/nginx/site.conf")
            .replace("/etc/nginx/mime.types", &types.display().to_string());
        let r = hidden(&shipped);
        assert_hides_nothing(&r);
        let debian = "server {
 listen 80 default_server;
 listen [::]:80 default_server;
 root /var/www/html;
 index index.html index.htm index.nginx-debian.html;
 server_name _;
 location / {
 try_files $uri $uri/ =404;
 }
}
";
        assert_hides_nothing(&hidden(debian));
    }
}

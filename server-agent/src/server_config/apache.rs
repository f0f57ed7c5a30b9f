//! Apache's configuration and `.htaccess` files: logical lines (a trailing `\` continues one),
//! sections (`<Directory>`, `<Files>`, `<Location>`, `<If>`...), `Include` and
//! `IncludeOptional` followed in place, and the places where the judge cannot see what others
//! get.

use super::directives::{self, Kind, Section};
use super::{Hidden, Matcher, Site, expand_include, read_rules_file, regex, under_base, wildcard};
use std::path::{Path, PathBuf};

/// Includes followed within includes, at most.
const MAX_INCLUDE_DEPTH: usize = 16;

/// Where the rules are read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Context<'a> {
    /// A `.htaccess` in this docroot-relative directory (`""` or `/sub`).
    Htaccess(&'a str),
    /// A server configuration file.
    Server {
        /// The file (its includes are relative to the server root above it).
        file: &'a Path,
    },
    /// A server configuration given as text, whose includes are not followed (each hides
    /// what it governs).
    Text,
}

/// Where a directive's rules apply.
#[derive(Debug, Clone)]
enum Scope {
    /// All the site (a server-wide rule).
    Everything,
    /// A place of the site.
    Place(Matcher),
    /// Not the site's files (another directory, another method, a proxy).
    Nowhere,
}

/// An open section: its name, argument, where it opened, and the scope of what it holds.
struct Open {
    name: String,
    arg: String,
    at: String,
    scope: Scope,
    /// For `<Directory>`: the docroot-relative directory (for the `<Files>` inside).
    dir: Option<String>,
}

struct Reader<'a> {
    ctx: Context<'a>,
    site: Site<'a>,
    stack: Vec<Open>,
    out: Vec<Hidden>,
    includes: Vec<PathBuf>,
    server_root: Option<PathBuf>,
}

/// Splits a directive line into words, honouring double and single quotes.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if started || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A section's opening tag (`<Files "x">`): its name and its arguments.
fn section_open(line: &str) -> Option<(String, Vec<String>)> {
    let inner = line.strip_prefix('<')?.strip_suffix('>')?;
    if inner.starts_with('/') {
        return None;
    }
    let mut w = words(inner);
    if w.is_empty() {
        return None;
    }
    let name = w.remove(0);
    Some((name, w))
}

/// A `<Directory>` path as a docroot-relative directory (`""` or `/sub`); `Some("")` also for
/// a directory above the docroot, which governs all of it.
fn directory_under(dir: &str, docroot: &Path) -> Option<String> {
    let dir = Path::new(dir.trim_end_matches('/'));
    let dir = if dir.as_os_str().is_empty() {
        Path::new("/")
    } else {
        dir
    };
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
        if docroot.starts_with(d) {
            return Some(String::new());
        }
    }
    None
}

impl Reader<'_> {
    fn scope(&self) -> Scope {
        match self.stack.last() {
            Some(o) => o.scope.clone(),
            None => match self.ctx {
                Context::Htaccess(dir) => Scope::Place(Matcher::Prefix(format!("{dir}/"))),
                Context::Server { .. } | Context::Text => Scope::Everything,
            },
        }
    }

    /// The directory the innermost `<Directory>` (or the `.htaccess`) stands for.
    fn directory(&self) -> String {
        self.stack
            .iter()
            .rev()
            .find_map(|o| o.dir.clone())
            .unwrap_or_else(|| match self.ctx {
                Context::Htaccess(dir) => dir.to_string(),
                Context::Server { .. } | Context::Text => String::new(),
            })
    }

    fn hide(&mut self, scope: &Scope, at: &str, why: String) {
        let matcher = match scope {
            Scope::Everything => Matcher::Prefix("/".into()),
            Scope::Place(m) => m.clone(),
            Scope::Nowhere => return,
        };
        self.out.push(Hidden {
            matcher,
            source: format!("{at}: {why}"),
        });
    }

    /// Opens a section; a place outside the site, a method other than GET or a proxy reads
    /// as nowhere, a condition on the request hides what is around it.
    fn open(&mut self, name: &str, args: &[String], at: String) {
        let around = self.scope();
        let lower = name.to_ascii_lowercase();
        let mut dir = None;
        let scope = if matches!(around, Scope::Nowhere) {
            Scope::Nowhere
        } else {
            match directives::apache_section(&lower) {
                Section::Transparent => around,
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
                    self.hide(
                        &around,
                        &at,
                        format!("<{name}> tests the request, which may depend on who asks"),
                    );
                    around
                }
                Section::Unknown => {
                    self.hide(&around, &at, format!("section <{name}> is not understood"));
                    Scope::Nowhere
                }
                Section::Place => match self.place(&lower, args, &mut dir) {
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
            dir,
        });
    }

    /// What a place section governs, if it is in the site.
    fn place(
        &self,
        section: &str,
        args: &[String],
        dir: &mut Option<String>,
    ) -> Result<Option<Matcher>, String> {
        // `<Files ~ "re">` is `<FilesMatch "re">`, and so for the others.
        let (section, arg) = match args {
            [tilde, re] if tilde == "~" => (format!("{section}match"), re.clone()),
            [arg] => (section.to_string(), arg.clone()),
            _ => return Err(format!("arguments {args:?} are not understood")),
        };
        let htaccess = matches!(self.ctx, Context::Htaccess(_));
        Ok(match section.as_str() {
            "files" => Some(Matcher::FileName {
                under: self.directory(),
                name: wildcard(&arg)?,
            }),
            "filesmatch" => Some(Matcher::FileName {
                under: self.directory(),
                name: regex(&arg, false)?,
            }),
            _ if htaccess => return Err("not allowed in .htaccess".into()),
            "directory" => match directory_under(&arg, self.site.docroot) {
                Some(d) => {
                    *dir = Some(d.clone());
                    Some(Matcher::Prefix(format!("{d}/")))
                }
                None => None,
            },
            "directorymatch" => Some(Matcher::Path(regex(&arg, false)?)),
            "location" => under_base(&arg, self.site.base_path).map(Matcher::Prefix),
            "locationmatch" => Some(Matcher::Path(regex(&arg, false)?)),
            other => return Err(format!("section {other} is not understood")),
        })
    }

    fn close(&mut self, line: &str, at: &str) -> Result<(), String> {
        let name = line
            .trim_start_matches("</")
            .trim_end_matches('>')
            .trim()
            .to_ascii_lowercase();
        match self.stack.pop() {
            Some(o) if o.name == name => Ok(()),
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
        if pattern.contains("${") {
            self.hide(
                &scope,
                at,
                format!("Include {pattern} names a variable the agent cannot resolve"),
            );
            return Ok(());
        }
        if depth >= MAX_INCLUDE_DEPTH {
            self.hide(&scope, at, format!("Include {pattern} nested too deeply"));
            return Ok(());
        }
        let files = match expand_include(pattern, &self.root()) {
            Ok(f) => f,
            Err(e) => {
                self.hide(&scope, at, format!("Include {pattern}: {e}"));
                return Ok(());
            }
        };
        for f in files {
            if self.includes.contains(&f) {
                continue;
            }
            match read_rules_file(&f) {
                Ok(text) => {
                    self.includes.push(f.clone());
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
        let mut logical = String::new();
        let mut start_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let piece = raw.trim();
            if logical.is_empty() {
                start_line = i + 1;
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
            let at = format!("{name}:{start_line}");
            if line.starts_with("</") {
                self.close(line, &at)?;
                continue;
            }
            if line.starts_with('<') {
                let Some((section, args)) = section_open(line) else {
                    return Err(format!("{at}: {line} is not a section"));
                };
                if self.stack.len() > 32 {
                    return Err(format!("{at}: sections nested too deeply"));
                }
                self.open(&section, &args, at);
                continue;
            }
            let w = words(line);
            let Some(directive) = w.first() else { continue };
            let lower = directive.to_ascii_lowercase();
            match lower.as_str() {
                "include" | "includeoptional" => {
                    self.include(&w, lower == "includeoptional", &at, depth)?;
                    continue;
                }
                "serverroot" => {
                    if let Some(r) = w.get(1) {
                        self.server_root = Some(PathBuf::from(r));
                    }
                }
                _ => {}
            }
            let args: Vec<&str> = w[1..].iter().map(String::as_str).collect();
            let scope = self.scope();
            match directives::apache(directive, &args, self.site.trusted) {
                Kind::Seen => {}
                Kind::WhoAsks => self.hide(
                    &scope,
                    &at,
                    format!("{} depends on who asks", w.join(" ")),
                ),
                Kind::Unknown => self.hide(
                    &scope,
                    &at,
                    format!(
                        "directive {directive} is not understood (--trust-directive {lower} if it serves every client alike)"
                    ),
                ),
            }
        }
        Ok(())
    }
}

/// The places of the site an Apache configuration or `.htaccess` hides from the judge, and
/// the files it included.
pub(crate) fn hidden_places(
    text: &str,
    name: &str,
    ctx: Context,
    site: Site,
) -> Result<(Vec<Hidden>, Vec<PathBuf>), String> {
    let mut r = Reader {
        ctx,
        site,
        stack: Vec::new(),
        out: Vec::new(),
        includes: Vec::new(),
        server_root: None,
    };
    r.read(text, name, 0)?;
    if let Some(o) = r.stack.last() {
        return Err(format!("{}: <{}> is not closed", o.at, o.name));
    }
    Ok((r.out, r.includes))
}

#[cfg(test)]
mod tests {
    use super::super::ServerRules;
    use super::super::testing::{assert_hides, assert_hides_nothing, site};
    use super::*;

    #[test]
    fn words_honour_quotes() {
        assert_eq!(
            words(r#"Header set X "a b" 'c d' e"#),
            ["Header", "set", "X", "a b", "c d", "e"]
        );
        assert_eq!(words(r#"Require "" x"#), ["Require", "", "x"]);
    }

    #[test]
    fn who_asks_rules_and_what_is_not_understood_are_hidden() {
        let tmp = tempfile::tempdir().unwrap();
        let docroot = tmp.path().join("www");
        for d in ["members", "blog", "office", "status", "open"] {
            std::fs::create_dir_all(docroot.join(d)).unwrap();
        }
        let conf = tmp.path().join("site.conf");
        std::fs::write(
            &conf,
            format!(
                "<VirtualHost *:80>\n  DocumentRoot {d}\n  <Directory {d}/members>\n    AuthType Basic\n    \
                 Require valid-user\n  </Directory>\n  <Directory {d}>\n    Require all granted\n  </Directory>\n  \
                 <Location /status>\n    Require ip 10.0.0.0/8\n  </Location>\n  <FilesMatch \"\\.(inc|ini)$\">\n    \
                 Require all denied\n  </FilesMatch>\n  <Directory {d}/office>\n    <If \"%{{REMOTE_ADDR}} != '10.0.0.1'\">\n      \
                 Require all denied\n    </If>\n  </Directory>\n  <Directory {d}/open>\n    <LimitExcept GET>\n      Require valid-user\n    \
                 </LimitExcept>\n  </Directory>\n  <Directory /usr/share>\n    Require ip 127.0.0.1\n  </Directory>\n  \
                 <Directory {d}/blog>\n    ModSecurityEngine On\n  </Directory>\n</VirtualHost>\n",
                d = docroot.display()
            ),
        )
        .unwrap();
        let mut r = ServerRules::none();
        r.add_server_config(&conf, site(&docroot)).unwrap();
        assert_hides(
            &r,
            &[
                "members/a.html",
                "status",
                "status/x",
                "office/a.html",
                "blog/a.html",
            ],
            &["index.html", "lib/db.inc", "open/a.html", "stat.html"],
        );
        let why = r.hides("blog/a.html").unwrap().to_string();
        assert!(
            why.contains("ModSecurityEngine") && why.contains("--trust-directive"),
            "{why}"
        );
    }

    #[test]
    fn htaccess_rules_the_judge_sees_are_left_to_it() {
        let tmp = tempfile::tempdir().unwrap();
        let docroot = tmp.path().to_path_buf();
        std::fs::create_dir_all(docroot.join("a")).unwrap();
        std::fs::write(
            docroot.join("a/.htaccess"),
            "RewriteEngine On\nRewriteRule ^ - [F]\nRedirectMatch 404 \\.bak$\n\
             AddType application/x-httpd-php .html\n<Files ~ \"^secret\">\n  Require ip 10.0.0.1\n</Files>\n\
             RewriteCond %{HTTP_COOKIE} !admin\nRewriteRule ^admin - [F]\n",
        )
        .unwrap();
        let mut r = ServerRules::none();
        r.add_htaccess_files(site(&docroot));
        // The cookie condition and the address rule: hidden; the rest the judge sees.
        assert!(r.hides("a/secret-plans.html").is_some());
        assert!(
            r.hides("a/x.html").is_some(),
            "the cookie rule governs the directory"
        );
        std::fs::write(
            docroot.join("a/.htaccess"),
            "RewriteEngine On\nRewriteRule ^ - [F]\n<Files ~ \"^secret\">\n  Require ip 10.0.0.1\n</Files>\n",
        )
        .unwrap();
        let mut r = ServerRules::none();
        r.add_htaccess_files(site(&docroot));
        assert!(r.hides("a/secret-plans.html").is_some());
        assert!(r.hides("a/x.html").is_none());
        assert!(
            r.hides("a/sub/secret").is_some(),
            "<Files> applies below too"
        );
    }

    #[test]
    fn includes_are_followed_from_the_server_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join("apache2.conf"), "").unwrap();
        std::fs::create_dir_all(root.join("conf-enabled")).unwrap();
        std::fs::create_dir_all(root.join("sites-enabled")).unwrap();
        std::fs::write(
            root.join("conf-enabled/office.conf"),
            "<Location /office>\n  Require ip 10.0.0.0/8\n</Location>\n",
        )
        .unwrap();
        let site_conf = root.join("sites-enabled/site.conf");
        std::fs::write(
            &site_conf,
            "<VirtualHost *:80>\n  IncludeOptional conf-enabled/*.conf\n  IncludeOptional nothing/*.conf\n  \
             <Location /gone>\n    Include missing.conf\n  </Location>\n</VirtualHost>\n",
        )
        .unwrap();
        let mut r = ServerRules::none();
        r.add_server_config(&site_conf, site(root)).unwrap();
        assert!(r.hides("office/a.html").is_some());
        assert!(r.hides("gone/a.html").is_some());
        assert!(r.hides("index.html").is_none());
        assert!(r.sources().contains(&root.join("conf-enabled/office.conf")));
    }

    #[test]
    fn debians_own_configuration_hides_nothing_of_the_docroot() {
        // The global rules of Debian's apache2.conf: `<Directory />` denies all, and
        // `<Directory /var/www/>` grants: both the same for everyone.
        let tmp = tempfile::tempdir().unwrap();
        let conf = tmp.path().join("apache2.conf");
        std::fs::write(
            &conf,
            "Timeout 300\nKeepAlive On\nHostnameLookups Off\nLogLevel warn\n<Directory />\n\tOptions FollowSymLinks\n\
             \tAllowOverride None\n\tRequire all denied\n</Directory>\n<Directory /var/www/>\n\tOptions Indexes FollowSymLinks\n\
             \tAllowOverride None\n\tRequire all granted\n</Directory>\nAccessFileName .htaccess\n<FilesMatch \"^\\.ht\">\n\
             \tRequire all denied\n</FilesMatch>\nLogFormat \"%h %l %u %t \\\"%r\\\" %>s %O\" common\n\
             <VirtualHost *:80>\n\tServerAdmin webmaster@localhost\n\tDocumentRoot /var/www/html\n\
             \tErrorLog ${APACHE_LOG_DIR}/error.log\n\tCustomLog ${APACHE_LOG_DIR}/access.log combined\n</VirtualHost>\n",
        )
        .unwrap();
        let mut r = ServerRules::none();
        r.add_server_config(&conf, site(Path::new("/var/www/html")))
            .unwrap();
        assert_hides_nothing(&r);
        let shipped = include_str!("../../../examples/apache/site.conf");
        let file = tmp.path().join("site.conf");
        std::fs::write(&file, shipped).unwrap();
        let mut r = ServerRules::none();
        r.add_server_config(&file, site(Path::new("/var/www/example")))
            .unwrap();
        assert_hides_nothing(&r);
    }
}

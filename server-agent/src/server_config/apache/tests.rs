use super::super::ServerRules;
use super::super::testing::{TestSite, assert_hides, assert_hides_nothing};
use std::path::Path;

fn read_conf(docroot: &Path, conf: &str, more: &[&str]) -> ServerRules {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("site.conf");
    std::fs::write(&file, conf).unwrap();
    let t = TestSite::new(docroot, more);
    let mut r = t.rules();
    r.add_server_config(&file, t.site()).unwrap();
    r
}

#[test]
fn only_what_could_let_the_judge_in_is_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("www");
    std::fs::create_dir_all(&d).unwrap();
    let d = d.display();
    let r = read_conf(
        tmp.path().join("www").as_path(),
        &format!(
            "<VirtualHost *:80>\n  DocumentRoot {d}\n  <Directory {d}/members>\n    AuthType Basic\n    \
             Require valid-user\n  </Directory>\n  <Directory {d}>\n    Require all granted\n  </Directory>\n  \
             <Location /status>\n    Require local\n  </Location>\n  <Location /office>\n    Require ip 10.0.0.0/8\n  \
             </Location>\n  <FilesMatch \"\\.(inc|ini)$\">\n    Require all denied\n  </FilesMatch>\n  \
             <Directory {d}/cond>\n    <If \"%{{REMOTE_ADDR}} != '127.0.0.1'\">\n      Require all denied\n    </If>\n  \
             </Directory>\n  <Directory {d}/open>\n    <LimitExcept GET>\n      Require local\n    </LimitExcept>\n  \
             </Directory>\n  <Directory /usr/share>\n    Require ip 127.0.0.1\n  </Directory>\n  \
             <Directory {d}/blog>\n    ModSecurityEngine On\n  </Directory>\n  <Directory {d}/expr>\n    \
             RewriteEngine On\n    RewriteCond expr \"-R '127.0.0.0/8'\"\n    RewriteRule ^ - [L]\n  </Directory>\n\
             <Directory {d}/compat>\n    Order deny,allow\n    Deny from all\n    Allow from 127.0.0.1\n  </Directory>\n\
             </VirtualHost>\n"
        ),
        &[],
    );
    assert_hides(
        &r,
        &[
            "status",
            "status/x",
            "cond/a.html",
            "blog/a.html",
            "expr/a.html",
            "compat/a.html",
        ],
        &[
            "index.html",
            "members/a.html",
            "office/a.html",
            "lib/db.inc",
            "open/a.html",
            "stat.html",
        ],
    );
    let why = r.hides("blog/a.html").unwrap().to_string();
    assert!(
        why.contains("ModSecurityEngine") && why.contains("--trust-directive"),
        "{why}"
    );
    assert!(r.noted("members/a.html").is_some());
    assert!(r.noted("office/a.html").is_some());
}

#[test]
fn sections_match_as_apache_matches_them() {
    let tmp = tempfile::tempdir().unwrap();
    let releases = tmp.path().join("releases/42");
    std::fs::create_dir_all(&releases).unwrap();
    // The server names the docroot through a symlink, and a directory appears only later.
    let current = tmp.path().join("current");
    std::os::unix::fs::symlink(&releases, &current).unwrap();
    let c = current.display();
    let conf = format!(
        "Define SITE {c}\n<Directory ${{SITE}}/late>\n  Require local\n</Directory>\n\
         <Directory \"{c}/[0-9][0-9]*\">\n  Require ip 127.0.0.1\n</Directory>\n\
         <DirectoryMatch \"^{c}/(staff|hr)/\">\n  Require host intranet\n</DirectoryMatch>\n\
         <Files \"secret[0-9].html\">\n  Require local\n</Files>\n\
         <Directory {c}/docs>\n  <Files \"*.txt\">\n    Require local\n  </Files>\n</Directory>\n\
         <LocationMatch \"^/api/\">\n  Require env internal\n</LocationMatch>\n\
         <Location /pre*>\n  Require local\n</Location>\n"
    );
    let r = read_conf(&releases, &conf, &[&current.display().to_string()]);
    assert_hides(
        &r,
        &[
            "late/new.html",
            "2024/report.html",
            "staff/list.html",
            "hr/x/y.html",
            "a/secret7.html",
            "docs/notes.txt",
            "api/v1",
            "preview/x.html",
        ],
        &[
            "index.html",
            "x2024/a.html",
            "staffing/a.html",
            "a/secretx.html",
            "notes.txt",
            "docs/notes.html",
            "apis",
        ],
    );
}

#[test]
fn an_undefined_variable_hides_what_it_governs() {
    let tmp = tempfile::tempdir().unwrap();
    let r = read_conf(
        tmp.path(),
        "ErrorLog ${APACHE_LOG_DIR}/error.log\n<Directory ${NOPE}>\n  Require local\n</Directory>\n",
        &[],
    );
    let why = r.hides("a.html").unwrap().to_string();
    assert!(why.contains("${NOPE}"), "{why}");
}

#[test]
fn browsermatch_alone_hides_nothing_but_a_rule_reading_its_variable_does() {
    let tmp = tempfile::tempdir().unwrap();
    let stock = "BrowserMatch \"Mozilla/2\" nokeepalive\nBrowserMatch \"MSIE 4\\.0b2;\" nokeepalive downgrade-1.0 force-response-1.0\n\
                 SetEnvIf Remote_Addr \"^127\\.\" from_here\n";
    assert_hides_nothing(&read_conf(tmp.path(), stock, &[]));
    let r = read_conf(
        tmp.path(),
        &format!("{stock}<Location /staff>\n  Require env from_here\n</Location>\n"),
        &[],
    );
    assert_hides(&r, &["staff/a.html"], &["index.html"]);
}

#[test]
fn htaccess_files_and_access_file_names() {
    let tmp = tempfile::tempdir().unwrap();
    let docroot = tmp.path().join("site/www");
    std::fs::create_dir_all(docroot.join("a")).unwrap();
    std::fs::write(
        docroot.join("a/.htaccess"),
        "RewriteEngine On\nRewriteRule ^ - [F]\nRedirectMatch 404 \\.bak$\n\
         AddType application/x-httpd-php .html\n<Files ~ \"^secret\">\n  Require ip 127.0.0.1\n</Files>\n",
    )
    .unwrap();
    // Above the docroot: it governs all of the site.
    std::fs::write(
        tmp.path().join("site/.htaccess"),
        "<Files \"*.pdf\">\nRequire local\n</Files>\n",
    )
    .unwrap();
    let conf = tmp.path().join("site.conf");
    std::fs::write(&conf, "AccessFileName .htaccess .acl\n").unwrap();
    std::fs::write(docroot.join(".acl"), "Require local\n").unwrap();
    let t = TestSite::new(&docroot, &[]);
    let mut r = t.rules();
    r.add_server_config(&conf, t.site()).unwrap();
    r.add_htaccess_files(t.site(), false);
    assert!(r.hides("a/secret-plans.html").is_some());
    assert!(
        r.hides("a/sub/secret").is_some(),
        "<Files> applies below too"
    );
    assert!(
        r.hides("b/secret").is_some(),
        ".acl at the top hides everything"
    );
    assert!(r.hides("x/y.pdf").is_some());
    let mut only_htaccess = t.rules();
    only_htaccess.add_htaccess_files(t.site(), false);
    assert!(only_htaccess.hides("a/x.html").is_none());
    assert!(only_htaccess.hides("a/secret").is_some());
    assert!(only_htaccess.hides("report.pdf").is_some());
    // A server that ignores them (nginx) serves what they protect: every place is hidden.
    let mut ignored = t.rules();
    ignored.add_htaccess_files(t.site(), true);
    assert!(
        ignored
            .hides("a/secret")
            .unwrap()
            .to_string()
            .contains("ignores .htaccess")
    );
    assert!(ignored.hides("a/x.html").is_none());
}

#[test]
fn includes_are_followed_from_the_server_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(
        root.join("apache2.conf"),
        "IncludeOptional conf-enabled/*.conf\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("conf-enabled")).unwrap();
    std::fs::create_dir_all(root.join("sites-enabled")).unwrap();
    std::fs::write(
        root.join("conf-enabled/office.conf"),
        "<Location /office>\n  Require ip 127.0.0.1\n</Location>\n",
    )
    .unwrap();
    let site_conf = root.join("sites-enabled/site.conf");
    std::fs::write(
        &site_conf,
        "<VirtualHost *:80>\n  IncludeOptional nothing/*.conf\n  \
         <Location /gone>\n    Include missing.conf\n  </Location>\n</VirtualHost>\n",
    )
    .unwrap();
    let t = TestSite::new(root, &[]);
    let mut r = t.rules();
    // Only the site's file is named: the main file above it is read too.
    let survey = r.add_server_config(&site_conf, t.site()).unwrap();
    assert_eq!(survey.main_found, Some(root.join("apache2.conf")));
    assert!(r.hides("office/a.html").is_some());
    assert!(r.hides("gone/a.html").is_some());
    assert!(r.hides("index.html").is_none());
    assert!(r.sources().contains(&root.join("conf-enabled/office.conf")));
    assert_eq!(survey.vhosts.len(), 1);
}

#[test]
fn only_the_virtual_host_that_answers_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("site.conf");
    let d = tmp.path().display();
    std::fs::write(
        &conf,
        format!(
            "<VirtualHost 127.0.0.1:80>\n  DocumentRoot {d}\n  <Directory {d}>\n    Require local\n  </Directory>\n</VirtualHost>\n\
             <VirtualHost *:80>\n  ServerName www.example.org\n  DocumentRoot {d}\n</VirtualHost>\n"
        ),
    )
    .unwrap();
    let t = TestSite::new(tmp.path(), &[]);
    let mut all = t.rules();
    all.add_server_config(&conf, t.site()).unwrap();
    assert!(all.hides("a.html").is_some(), "every host read: hidden");
    let chosen = [(conf.display().to_string(), 7)];
    let mut site = t.site();
    site.vhosts = Some(&chosen);
    let mut ours = t.rules();
    let survey = ours.add_server_config(&conf, site).unwrap();
    assert_hides_nothing(&ours);
    assert_eq!(survey.vhosts[1].names, ["www.example.org"]);
    assert_eq!(survey.vhosts[0].listens, ["127.0.0.1:80"]);
}

#[test]
fn debians_own_configuration_hides_nothing_of_the_docroot() {
    // The global rules of Debian's apache2.conf: `<Directory />` denies all, and
    // `<Directory /var/www/>` grants: both the same for everyone.
    let tmp = tempfile::tempdir().unwrap();
    let conf = "Timeout 300\nKeepAlive On\nHostnameLookups Off\nLogLevel warn\n<Directory />\n\tOptions FollowSymLinks\n\
         \tAllowOverride None\n\tRequire all denied\n</Directory>\n<Directory /var/www/>\n\tOptions Indexes FollowSymLinks\n\
         \tAllowOverride None\n\tRequire all granted\n</Directory>\nAccessFileName .htaccess\n<FilesMatch \"^\\.ht\">\n\
         \tRequire all denied\n</FilesMatch>\nLogFormat \"%h %l %u %t \\\"%r\\\" %>s %O\" common\n\
         <VirtualHost *:80>\n\tServerAdmin webmaster@localhost\n\tDocumentRoot /var/www/html\n\
         \tErrorLog ${APACHE_LOG_DIR}/error.log\n\tCustomLog ${APACHE_LOG_DIR}/access.log combined\n</VirtualHost>\n";
    assert_hides_nothing(&read_conf(Path::new("/var/www/html"), conf, &[]));
    let _ = tmp;
    let shipped = include_str!("../../../../examples/apache/site.conf");
    assert_hides_nothing(&read_conf(Path::new("/var/www/example"), shipped, &[]));
}

#[test]
fn a_request_moved_inside_apache_is_judged_where_it_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("www");
    std::fs::create_dir_all(&d).unwrap();
    let d = d.display();
    let r = read_conf(
        tmp.path().join("www").as_path(),
        &format!(
            "<VirtualHost *:80>\n  DocumentRoot {d}\n  RewriteEngine On\n  \
             RewriteRule ^/reports/(.*)$ /inner/$1 [PT,L]\n  \
             RewriteRule ^/open/(.*)$ /pub/$1 [PT]\n  \
             RewriteRule ^/away/(.*)$ /inner/$1 [R=302,L]\n  \
             Alias /inner {d}\n  <Location /inner>\n    Require local\n  </Location>\n  \
             <Location /pub>\n    Require all granted\n  </Location>\n  \
             <Location /denied>\n    Require all denied\n    ErrorDocument 403 /inner/sorry.html\n  </Location>\n  \
             <Location /quiet>\n    Require all denied\n    ErrorDocument 403 /pub/sorry.html\n  </Location>\n  \
             <Directory {d}/app>\n    FallbackResource /inner/index.php\n  </Directory>\n\
             </VirtualHost>\n"
        ),
        &[],
    );
    assert_hides(
        &r,
        &[
            "inner/a.html",
            "reports/a.html",
            "denied/a.html",
            "app/a.html",
        ],
        // The twins: a move into a place that grants nobody, and a redirect the client
        // follows as itself, hide nothing.
        &["open/a.html", "away/a.html", "quiet/a.html", "index.html"],
    );
    let why = r.hides("reports/a.html").unwrap().to_string();
    assert!(
        why.contains("RewriteRule ^/reports/(.*)$ /inner/$1 [PT,L]")
            && why.contains("the request ends where"),
        "{why}"
    );
}

#[test]
fn an_htaccess_rewrite_into_a_place_the_configuration_hides_is_judged_there() {
    let tmp = tempfile::tempdir().unwrap();
    let docroot = tmp.path().join("www");
    std::fs::create_dir_all(docroot.join("reports")).unwrap();
    std::fs::create_dir_all(docroot.join("open")).unwrap();
    std::fs::write(
        docroot.join("reports/.htaccess"),
        "RewriteEngine On\nRewriteRule ^(.*)$ /inner/$1 [PT]\n",
    )
    .unwrap();
    // The twin: a rewrite into a place nothing hides.
    std::fs::write(
        docroot.join("open/.htaccess"),
        "RewriteEngine On\nRewriteRule ^(.*)$ /pub/$1 [PT]\n",
    )
    .unwrap();
    let conf = tmp.path().join("site.conf");
    std::fs::write(&conf, "<Location /inner>\n  Require local\n</Location>\n").unwrap();
    let t = TestSite::new(&docroot, &[]);
    // In either order: the configuration first, or the per-directory files first.
    let mut first = t.rules();
    first.add_server_config(&conf, t.site()).unwrap();
    first.add_htaccess_files(t.site(), false);
    let mut later = t.rules();
    later.add_htaccess_files(t.site(), false);
    later.add_server_config(&conf, t.site()).unwrap();
    for r in [&first, &later] {
        assert_hides(
            r,
            &["reports/q3.html", "inner/a.html"],
            &["open/a.html", "index.html"],
        );
        let why = r.hides("reports/q3.html").unwrap().to_string();
        assert!(why.contains("the request ends where"), "{why}");
    }
}

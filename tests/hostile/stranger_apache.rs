//! The judge asks as a stranger, against Debian's Apache. `Require local` lets in every
//! address of this machine, the judge's own too: only the reader of the configuration stands
//! between such a file and the listing, and it must read each rule as Apache does (`<Directory>`
//! wildcards with classes, `<DirectoryMatch>` over absolute paths, `<Files>` classes, `Define`,
//! `AccessFileName`, an `.htaccess` above the docroot, `RewriteCond expr -R`, a rule in a
//! `conf-enabled` file while only the site's file is named, a symlinked docroot whose
//! directories appear later). Debian's stock modules, read whole, hide nothing of a site.

use super::stranger_support::{
    Run, SECRET, Watching, Who, assert_refused_to_start, assert_safe, assert_warned_none, docroot,
    get_from, once, only_root_reads, plant,
};
use super::support::wait_for;
use std::net::SocketAddr;
use std::path::Path;
use webcoop::servers::{Apache, is_root};
use webcoop_testkit::{skip, tool};

fn apache_bin() -> Option<std::path::PathBuf> {
    if !is_root() {
        skip("the stranger families need root (Apache as www-data, the agent as nobody)");
        return None;
    }
    tool("apache2")
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[test]
fn rules_only_the_reader_can_see_are_read_as_apache_reads_them() {
    let Some(bin) = apache_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let www = docroot(&site);
    let secrets: &[(&str, &str)] = &[
        ("arch2024/report.html", "hunter2 by a wildcard with a class"),
        ("staff/list.html", "hunter2 by a DirectoryMatch"),
        ("docs/secret7.html", "hunter2 by a Files class"),
        ("priv/notes.html", "hunter2 by a Define"),
        ("acl/page.html", "hunter2 by an AccessFileName"),
        ("paper.pdf", "hunter2 by an .htaccess above the docroot"),
        ("rw/page.html", "hunter2 by RewriteCond expr -R"),
        ("office/plan.html", "hunter2 by a conf-enabled file"),
    ];
    plant(&www, secrets);
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            ("public.html", "for everyone"),
            ("docs/secretx.html", "not a digit: public"),
            ("archive/old.html", "not arch plus a digit: public"),
            ("staffing/jobs.html", "not staff/: public"),
            ("acl/.acl", "Require local\n"),
        ],
    );
    std::fs::write(
        site.join(".htaccess"),
        "<Files \"*.pdf\">\n  Require local\n</Files>\n",
    )
    .unwrap();
    let conf_dir = tmp.path().join("conf");
    std::fs::create_dir_all(conf_dir.join("conf-enabled")).unwrap();
    std::fs::create_dir_all(conf_dir.join("sites")).unwrap();
    webcoop::servers::open_to_web_user(&conf_dir, false);
    std::fs::write(
        conf_dir.join("conf-enabled/office.conf"),
        "<Location /office>\n  Require local\n</Location>\n",
    )
    .unwrap();
    let site_file = conf_dir.join("sites/site.conf");
    let (w, s, c) = (www.display(), site.display(), conf_dir.display());
    let body = |port: u16| {
        std::fs::write(
            &site_file,
            format!(
                "<VirtualHost 127.0.0.1:{port}>\n  ServerName localhost\n  DocumentRoot {w}\n  \
                 <Location /members>\n    AuthType Basic\n    AuthName staff\n    AuthUserFile /dev/null\n    \
                 Require valid-user\n  </Location>\n</VirtualHost>\n"
            ),
        )
        .unwrap();
        format!(
            "Listen 127.0.0.1:{port}\nServerName localhost\nDefine PRIV {w}/priv\nAccessFileName .htaccess .acl\n\
             DocumentRoot {w}\n<Directory {s}>\n  AllowOverride All\n</Directory>\n\
             <Directory {w}>\n  Options FollowSymLinks\n  AllowOverride All\n  Require all granted\n</Directory>\n\
             <Directory \"{w}/arch[0-9]*\">\n  Require local\n</Directory>\n\
             <DirectoryMatch \"^{w}/(staff|hr)/\">\n  Require local\n</DirectoryMatch>\n\
             <Files \"secret[0-9].html\">\n  Require local\n</Files>\n\
             <Directory ${{PRIV}}>\n  Require ip 127.0.0.1\n</Directory>\n\
             <Directory {w}/rw>\n  RewriteEngine On\n  RewriteCond expr \"! -R '127.0.0.0/8'\"\n  RewriteRule ^ - [F]\n</Directory>\n\
             IncludeOptional {c}/conf-enabled/*.conf\nIncludeOptional {c}/sites/*.conf\n"
        )
    };
    let Some(apache) = Apache::start_custom(&bin, &www, &body, &loopback) else {
        return skip("Apache as www-data needs root");
    };
    let base = apache.url();
    // The traps are real: the machine itself is let in everywhere, and an address like the
    // judge's everywhere but where 127.0.0.1 alone is named.
    for (p, _) in secrets {
        let path = format!("/{p}");
        let (status, body) = get_from("127.0.0.1", apache.addr, &path, "localhost");
        assert_eq!(status, 200, "{p}: {body}");
        assert!(body.contains(SECRET));
        let (status, _) = get_from("127.61.5.9", apache.addr, &path, "localhost");
        assert_eq!(
            status,
            if *p == "priv/notes.html" { 403 } else { 200 },
            "{p}"
        );
    }
    let hidden: Vec<&str> = secrets.iter().map(|(p, _)| *p).collect();
    let public = [
        "index.html",
        "public.html",
        "docs/secretx.html",
        "archive/old.html",
        "staffing/jobs.html",
    ];
    let check = |run: &Run, leg: &str| {
        assert_safe(run, &hidden, &public, leg);
        assert!(
            run.log.contains("Require local grants loopback"),
            "{leg}\n{}",
            run.log
        );
    };
    let read = once(&www, &base, &[], Who::Root);
    assert!(
        read.log
            .contains("configuration was read from the server itself"),
        "{}",
        read.log
    );
    check(&read, "read from Apache");
    let file = site_file.display().to_string();
    check(
        &once(&www, &base, &["--server-config", &file], Who::Root),
        "--server-config naming the site's file only",
    );
    only_root_reads(&apache.dir().join("apache2.conf"));
    assert_refused_to_start(&once(&www, &base, &[], Who::Nobody), "nobody, no flag");
    // Unread, `Require local` lets the judge in: what `--server-config none` gives up is
    // exactly this, and the agent says so at every start.
    let none = once(&www, &base, &["--server-config", "none"], Who::Nobody);
    assert_warned_none(&none, "nobody, --server-config none");
    assert!(
        none.listed.iter().any(|l| l == "staff/list.html"),
        "{:?}",
        none.listed
    );
    assert!(none.listed.iter().any(|l| l == "public.html"));
}

#[test]
fn a_symlinked_docroot_whose_directories_appear_later_is_matched_as_apache_names_it() {
    let Some(bin) = apache_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let release = tmp.path().join("releases/1");
    std::fs::create_dir_all(&release).unwrap();
    plant(&release, &[("index.html", "<h1>home</h1>")]);
    let current = tmp.path().join("current");
    std::os::unix::fs::symlink(&release, &current).unwrap();
    webcoop::servers::open_to_web_user(tmp.path(), false);
    let c = current.display();
    let body = |port: u16| {
        format!(
            "Listen 127.0.0.1:{port}\nServerName localhost\nDocumentRoot {c}\n\
             <Directory {c}>\n  Options FollowSymLinks\n  Require all granted\n</Directory>\n\
             <Directory {c}/late>\n  Require local\n</Directory>\n"
        )
    };
    let Some(apache) = Apache::start_custom(&bin, &current, &body, &loopback) else {
        return skip("Apache as www-data needs root");
    };
    let current_arg = current.display().to_string();
    let agent = Watching::start(Path::new(&current_arg), &apache.url(), &[]);
    wait_for(30, "the first listing", || {
        agent.listed().contains(&"index.html".to_string())
    });
    // The directory the rule names is made only now, with a twin the rule does not name.
    plant(
        &release,
        &[
            ("late/secret.html", "hunter2 made later"),
            ("later/public.html", "made later, public"),
        ],
    );
    wait_for(30, "later/public.html to be listed", || {
        agent.listed().contains(&"later/public.html".to_string())
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        !agent.listed().contains(&"late/secret.html".to_string()),
        "{}",
        agent.log()
    );
    assert!(!agent.text().contains(SECRET));
}

#[test]
fn debians_stock_modules_hide_nothing_of_the_site() {
    let Some(bin) = apache_bin() else { return };
    if !Path::new("/etc/apache2/mods-enabled/setenvif.conf").exists() {
        skip("Debian's apache2 configuration is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    let files = [
        ("index.html", "<h1>home</h1>"),
        ("a.html", "a page"),
        ("blog/post.html", "a post"),
        ("style.css", "body {}"),
    ];
    plant(&www, &files);
    let w = www.display();
    // Debian's own module settings (setenvif's BrowserMatch, status, alias, mime...), read
    // whole as a site given them would.
    let body = |port: u16| {
        format!(
            "Listen 127.0.0.1:{port}\nServerName localhost\nDocumentRoot {w}\n\
             <Directory {w}>\n  Require all granted\n</Directory>\n\
             IncludeOptional /etc/apache2/mods-enabled/*.load\nIncludeOptional /etc/apache2/mods-enabled/*.conf\n"
        )
    };
    let Some(apache) = Apache::start_custom(&bin, &www, &body, &loopback) else {
        return skip("Apache as www-data needs root");
    };
    let run = once(&www, &apache.url(), &[], Who::Root);
    let listed: Vec<&str> = files.iter().map(|(p, _)| *p).collect();
    assert_safe(&run, &[], &listed, "Debian's mods-enabled");
    assert!(!run.log.contains("BrowserMatch"), "{}", run.log);
    assert!(
        !run.log.contains("is not understood"),
        "a stock directive is unknown:\n{}",
        run.log
    );
}

#[test]
fn a_request_rewritten_inside_apache_is_judged_where_it_ends() {
    let Some(bin) = apache_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            (
                "reports/q3.html",
                "hunter2 rewritten [PT] into a local-only place",
            ),
            ("open/page.html", "rewritten [PT] into a place for everyone"),
        ],
    );
    let w = www.display();
    // Each directory's requests are passed on to an Alias of the same directory; the first
    // such place lets only the machine in (its own addresses, the judge's among them).
    let body = |port: u16| {
        format!(
            "Listen 127.0.0.1:{port}\nServerName localhost\nDocumentRoot {w}\n\
             <Directory {w}>\n  Require all granted\n</Directory>\n\
             <Directory {w}/reports>\n  RewriteEngine On\n  RewriteCond %{{REQUEST_URI}} !^/inner/\n  \
             RewriteRule ^(.*)$ /inner/$1 [PT]\n</Directory>\n\
             <Directory {w}/open>\n  RewriteEngine On\n  RewriteCond %{{REQUEST_URI}} !^/pub/\n  \
             RewriteRule ^(.*)$ /pub/$1 [PT]\n</Directory>\n\
             Alias /inner {w}/reports\nAlias /pub {w}/open\n\
             <Location /inner>\n  Require local\n</Location>\n"
        )
    };
    let Some(apache) = Apache::start_custom(&bin, &www, &body, &loopback) else {
        return skip("Apache as www-data needs root");
    };
    // The trap is real: the machine (any address of it, the judge's too) is answered the file
    // itself; the world, which no loopback test can be, is refused by `Require local`.
    let (status, text) = get_from("127.61.5.9", apache.addr, "/reports/q3.html", "localhost");
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(SECRET), "{text}");
    let read = once(&www, &apache.url(), &[], Who::Root);
    // The twin: rewritten into a place that grants everyone, it is published.
    assert_safe(
        &read,
        &["reports/q3.html"],
        &["index.html", "open/page.html"],
        "read from Apache",
    );
    assert!(
        read.log.contains("RewriteRule ^(.*)$ /inner/$1 [PT]")
            && read.log.contains("the request ends where"),
        "{}",
        read.log
    );
}

//! Apache's `.htaccess` rules and handlers, judged by Debian's Apache itself (mod_php and
//! mod_cgi loaded, its children running as the web user): the agent publishes only what Apache
//! serves as the file to anyone.

use super::support::agent_bin;
use std::os::unix::fs::PermissionsExt;
use webcoop::servers::{Apache, http_get, is_root, open_to_web_user};
use webcoop_testkit::{skip, tool};

const PHP: &[u8] = b"<p>config</p><?php $db_password = 'hunter2'; echo 'rendered'; ?>\n";
const CGI: &[u8] = b"#!/bin/sh\n# hunter2\necho 'Content-Type: text/plain'\necho\necho ran\n";

#[test]
fn htaccess_rules_and_handlers_are_judged_by_apache_itself() {
    let Some(apache2) = tool("apache2") else {
        return;
    };
    if !is_root() {
        return skip("Apache as www-data beside a root agent needs root");
    }
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"<h1>home</h1>"),
        (
            "files/.htaccess",
            b"<Files ~ \"^secret\">\n  Require all denied\n</Files>\n",
        ),
        ("files/secret-plan.html", b"hunter2 plan"),
        ("files/open.html", b"an open page"),
        (
            "rewrite/.htaccess",
            b"RewriteEngine On\nRewriteRule ^private/ - [F]\n",
        ),
        ("rewrite/private/a.html", b"hunter2 forbidden by a rewrite"),
        ("rewrite/public.html", b"public"),
        ("redirect/.htaccess", b"RedirectMatch 404 \\.txt$\n"),
        ("redirect/notes.txt", b"hunter2 notes"),
        ("redirect/page.html", b"a page"),
        ("php/.htaccess", b"AddType application/x-httpd-php .html\n"),
        ("php/config.html", PHP),
        (
            "cgi/.htaccess",
            b"Options +ExecCGI\nSetHandler cgi-script\n",
        ),
        ("cgi/run.html", CGI),
        (
            "locked/.htaccess",
            b"# nothing Apache could object to, but it cannot read it\n",
        ),
        (
            "locked/page.html",
            b"hunter2 behind an unreadable .htaccess",
        ),
    ];
    for (rel, bytes) in files {
        let p = www.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let mode = |p: &str, m: u32| {
        std::fs::set_permissions(www.join(p), std::fs::Permissions::from_mode(m)).unwrap()
    };
    mode("cgi/run.html", 0o755);
    mode("locked/.htaccess", 0o600);
    open_to_web_user(&www, false);
    let Some(apache) = Apache::start(&apache2, &www, "") else {
        return skip("Apache as www-data needs root");
    };
    // What Apache itself does with each.
    let get = |p: &str| http_get(apache.addr, p, &[]).unwrap();
    assert_eq!(get("/files/secret-plan.html").status, 403);
    assert_eq!(get("/files/open.html").status, 200);
    assert_eq!(get("/rewrite/private/a.html").status, 403);
    assert_eq!(get("/redirect/notes.txt").status, 404);
    assert_eq!(get("/locked/page.html").status, 403);
    let php = get("/php/config.html");
    assert!(
        String::from_utf8_lossy(&php.body).contains("rendered"),
        "{php:?}"
    );
    assert_eq!(
        String::from_utf8_lossy(&get("/cgi/run.html").body).trim(),
        "ran"
    );

    let out = tmp.path().join("out");
    let o = std::process::Command::new(agent_bin())
        .arg("--docroot")
        .arg(&www)
        .arg("--state")
        .arg(tmp.path().join("state"))
        .arg("--out")
        .arg(&out)
        .args(["--base-url", &apache.url(), "--once"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{log}");
    let documents = [
        "robots.rdf",
        "sitemap.xml",
        ".well-known/webcoop/changes.atom",
    ]
    .map(|d| std::fs::read_to_string(out.join(d)).unwrap_or_default())
    .concat();
    for refused in [
        "files/secret-plan.html",
        "rewrite/private/a.html",
        "redirect/notes.txt",
        "php/config.html",
        "cgi/run.html",
        "locked/page.html",
    ] {
        assert!(!documents.contains(refused), "{refused} published:\n{log}");
    }
    for public in [
        "index.html",
        "files/open.html",
        "rewrite/public.html",
        "redirect/page.html",
    ] {
        assert!(documents.contains(public), "{public} not published:\n{log}");
    }
    assert!(!documents.contains("hunter2"));
    for (why, path) in [
        ("the server answers 403", "files/secret-plan.html"),
        ("the server answers 404", "redirect/notes.txt"),
        ("the server answers 403", "locked/page.html"),
        ("its answer is not the file", "php/config.html"),
        ("its answer is not the file", "cgi/run.html"),
    ] {
        assert!(
            log.lines().any(|l| l.contains(why) && l.contains(path)),
            "{why} {path}:\n{log}"
        );
    }
}

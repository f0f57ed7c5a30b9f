//! The judge asks as a stranger, against Debian's nginx: rules that grant loopback, a PHP gate
//! that checks `REMOTE_ADDR`, a server block that listens on loopback only over the same
//! docroot, an address rule in the main file when only the site's file is named, variables of
//! the client's address steering `root`, `alias` and `proxy_pass`, and an include glob that
//! gains a file at a reload. Each family beside a public file that must be published, each run
//! three ways: the configuration read from nginx itself (no flag), `--server-config` naming
//! only the site's file, and as a user who can read neither nginx's process nor its
//! configuration (refused to start unless `--server-config none` is given).

use super::stranger_support::{
    Run, SECRET, Who, assert_refused_to_start, assert_safe, assert_warned_none, docroot, get_from,
    once, only_root_reads, plant,
};
use super::support::wait_for;
use std::net::SocketAddr;
use std::path::Path;
use webcoop::servers::{Nginx, PhpFpm, http_get, is_root};
use webcoop_testkit::{skip, tool, tool_named_like};

/// The nginx binary, when the tests may start it as production does (root, workers as the
/// web user).
fn nginx_bin() -> Option<std::path::PathBuf> {
    if !is_root() {
        skip("the stranger families need root (nginx as www-data, the agent as nobody)");
        return None;
    }
    tool("nginx")
}

fn at(ip: [u8; 4]) -> impl Fn(u16) -> SocketAddr {
    move |port| SocketAddr::from((ip, port))
}

/// The three legs: read from nginx, the site's file only, and as `nobody`.
fn three_ways(
    www: &Path,
    base: &str,
    site_file: &Path,
    nginx: &Nginx,
    check: &dyn Fn(&Run, &str),
    none_check: &dyn Fn(&Run, &str),
) {
    let read = once(www, base, &[], Who::Root);
    assert!(
        read.log
            .contains("configuration was read from the server itself"),
        "{}",
        read.log
    );
    check(&read, "read from nginx");
    let file = site_file.display().to_string();
    let partial = once(www, base, &["--server-config", &file], Who::Root);
    check(&partial, "--server-config naming the site's file only");
    only_root_reads(&nginx.dir().join("nginx.conf"));
    let refused = once(www, base, &[], Who::Nobody);
    assert_refused_to_start(&refused, "nobody, no flag");
    let none = once(www, base, &["--server-config", "none"], Who::Nobody);
    assert_warned_none(&none, "nobody, --server-config none");
    none_check(&none, "nobody, --server-config none");
}

#[test]
fn loopback_grants_and_a_php_gate_answer_the_judge_as_they_answer_the_world() {
    let Some(bin) = nginx_bin() else { return };
    let Some(php) = tool_named_like("php-fpm") else {
        return;
    };
    let Some(fpm) = PhpFpm::start(&php) else {
        return skip("PHP-FPM as www-data needs root");
    };
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            ("public.html", "for everyone"),
            ("a/secret.html", "hunter2 for loopback"),
            ("b/secret.html", "hunter2 for loopback or a password"),
            ("c.html", "hunter2 if the address is the machine's"),
            ("reports/q3.html", "hunter2 behind a PHP gate"),
        ],
    );
    // A gate that hands the file to the machine itself, and refuses everyone else.
    let gate_dir = tmp.path().join("gate");
    std::fs::create_dir_all(&gate_dir).unwrap();
    let gate = gate_dir.join("gate.php");
    std::fs::write(
        &gate,
        "<?php if ($_SERVER['REMOTE_ADDR'] === '127.0.0.1') { readfile($_SERVER['DOCUMENT_ROOT'] . $_SERVER['DOCUMENT_URI']); } \
         else { http_response_code(403); echo 'no'; }\n",
    )
    .unwrap();
    webcoop::servers::open_to_web_user(&gate_dir, false);
    let server = |port: u16| {
        format!(
            "server {{\n  listen 127.0.0.1:{port};\n  server_name _;\n  root {www};\n  \
             location /a/ {{ allow 127.0.0.1; deny all; }}\n  \
             location /b/ {{ satisfy any; allow 127.0.0.1; deny all; auth_basic staff; auth_basic_user_file /dev/null; }}\n  \
             location = /c.html {{ if ($remote_addr != 127.0.0.1) {{ return 403; }} }}\n  \
             location /reports/ {{ include /etc/nginx/fastcgi_params; fastcgi_param SCRIPT_FILENAME {gate}; fastcgi_pass {fpm}; }}\n}}\n",
            www = www.display(),
            gate = gate.display(),
            fpm = fpm.addr
        )
    };
    let nginx = Nginx::start_custom(&bin, &www, &server, &at([127, 0, 0, 1]));
    let site_file = tmp.path().join("site.conf");
    std::fs::write(&site_file, server(nginx.addr.port())).unwrap();
    let base = nginx.url();
    // The traps are real: the machine itself is served each secret, a stranger none.
    for p in [
        "/a/secret.html",
        "/b/secret.html",
        "/c.html",
        "/reports/q3.html",
    ] {
        let (own, body) = get_from("127.0.0.1", nginx.addr, p, "localhost");
        assert_eq!(own, 200, "{p} from 127.0.0.1");
        assert!(body.contains("hunter2"), "{p}: {body}");
        let (stranger, _) = get_from("127.61.5.9", nginx.addr, p, "localhost");
        assert!(
            stranger == 403 || stranger == 401,
            "{p} from a stranger: {stranger}"
        );
    }
    let secrets = [
        "a/secret.html",
        "b/secret.html",
        "c.html",
        "reports/q3.html",
    ];
    let public = ["index.html", "public.html"];
    let check = |run: &Run, leg: &str| {
        assert_safe(run, &secrets, &public, leg);
        // The gate is the judge's to see: it refused the judge as it refuses the world.
        assert!(
            run.log
                .lines()
                .any(|l| l.contains("the server answers 403") && l.ends_with("reports/q3.html")),
            "{leg}:\n{}",
            run.log
        );
        assert!(
            run.log.contains("allow 127.0.0.1 lets the judge in"),
            "{leg}:\n{}",
            run.log
        );
        assert!(
            run.log.contains("if ($remote_addr ...)"),
            "{leg}:\n{}",
            run.log
        );
    };
    let none_check = |run: &Run, leg: &str| {
        // No configuration read: the judge's own address is refused by each rule.
        assert_safe(run, &secrets, &public, leg);
        for (why, path) in [
            ("the server answers 403", "a/secret.html"),
            ("the server answers 401", "b/secret.html"),
            ("the server answers 403", "c.html"),
            ("the server answers 403", "reports/q3.html"),
        ] {
            assert!(
                run.log
                    .lines()
                    .any(|l| l.contains(why) && l.ends_with(path)),
                "{leg}: {why} {path}\n{}",
                run.log
            );
        }
    };
    three_ways(&www, &base, &site_file, &nginx, &check, &none_check);
}

#[test]
fn a_server_block_on_loopback_over_the_same_docroot_answers_neither_world_nor_judge() {
    let Some(bin) = nginx_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            ("private/plan.html", "hunter2 behind the public block"),
        ],
    );
    // The public block listens on every address; a monitoring block on loopback serves the
    // same docroot with nothing denied. The site's public address is 127.0.0.2 here.
    let server = |port: u16| {
        format!(
            "server {{\n  listen {port};\n  server_name www.example.org;\n  root {www};\n  \
             location /private/ {{ deny all; }}\n}}\n\
             server {{\n  listen 127.0.0.1:{port};\n  server_name _;\n  root {www};\n}}\n",
            www = www.display()
        )
    };
    let nginx = Nginx::start_custom(&bin, &www, &server, &at([127, 0, 0, 2]));
    let port = nginx.addr.port();
    let site_file = tmp.path().join("site.conf");
    std::fs::write(&site_file, server(port)).unwrap();
    let base = format!("http://127.0.0.2:{port}/");
    assert_eq!(
        http_get(
            SocketAddr::from(([127, 0, 0, 1], port)),
            "/private/plan.html",
            &[]
        )
        .unwrap()
        .status,
        200,
        "the loopback block serves it"
    );
    assert_eq!(
        http_get(nginx.addr, "/private/plan.html", &[])
            .unwrap()
            .status,
        403,
        "the world is refused"
    );
    let public = ["index.html"];
    let check = |run: &Run, leg: &str| {
        assert_safe(run, &["private/plan.html"], &public, leg);
        assert!(
            run.log.contains("listens on loopback only (127.0.0.1:"),
            "{leg}: the loopback block is named\n{}",
            run.log
        );
    };
    let none_check = |run: &Run, leg: &str| assert_safe(run, &["private/plan.html"], &public, leg);
    three_ways(&www, &base, &site_file, &nginx, &check, &none_check);
    // As docs/OPERATIONS.md once advised: --server-url at loopback. The agent asks where the
    // world's requests land instead, and says so.
    let told = once(
        &www,
        &base,
        &["--server-url", &format!("http://127.0.0.1:{port}")],
        Who::Root,
    );
    assert_safe(
        &told,
        &["private/plan.html"],
        &public,
        "--server-url 127.0.0.1",
    );
    assert!(
        told.log.contains("is not where a stranger's request"),
        "{}",
        told.log
    );
}

#[test]
fn an_address_rule_of_the_main_file_is_read_when_only_the_site_s_file_is_named() {
    let Some(bin) = nginx_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            ("public/page.html", "for everyone"),
            (
                "intranet/plan.html",
                "hunter2 for the office and the machine",
            ),
        ],
    );
    // An intranet box: locked down for everyone but loopback and the office in the main
    // file; the site's file opens what is public.
    let site = |port: u16| {
        format!(
            "server {{\n  listen 127.0.0.1:{port};\n  root {www};\n  \
             location = /index.html {{ allow all; }}\n  location ^~ /public/ {{ allow all; }}\n}}\n",
            www = www.display()
        )
    };
    let http = |port: u16| {
        format!(
            "allow 127.0.0.1;\nallow 10.0.0.0/8;\ndeny all;\n{}",
            site(port)
        )
    };
    let nginx = Nginx::start_custom(&bin, &www, &http, &at([127, 0, 0, 1]));
    let site_file = tmp.path().join("site.conf");
    std::fs::write(&site_file, site(nginx.addr.port())).unwrap();
    let base = nginx.url();
    let secrets = ["intranet/plan.html"];
    let public = ["index.html", "public/page.html"];
    let check = |run: &Run, leg: &str| assert_safe(run, &secrets, &public, leg);
    three_ways(&www, &base, &site_file, &nginx, &check, &check);
}

#[test]
fn variables_of_the_client_s_address_steering_root_alias_and_proxy_pass_hide_what_they_steer() {
    let Some(bin) = nginx_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            ("docs/guide.html", "hunter2 from the docroot, for loopback"),
            ("files/list.html", "hunter2 aliased, for loopback"),
            ("app/page.html", "hunter2 proxied, for loopback"),
        ],
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    webcoop::servers::open_to_web_user(&empty, false);
    // The machine is given the docroot; everyone else an empty directory.
    let http = |port: u16| {
        format!(
            "geo $view {{ default {empty}; 127.0.0.0/8 {www}; }}\n\
             map $remote_addr $files {{ default {empty}/; 127.0.0.1 {www}/files/; }}\n\
             geo $upstream {{ default 127.0.0.1:9; 127.0.0.0/8 127.0.0.1:{port}; }}\n\
             server {{\n  listen 127.0.0.1:{port};\n  root {www};\n  \
             location /docs/ {{ root $view; }}\n  location /files/ {{ alias $files; }}\n  \
             location /app/ {{ proxy_pass http://$upstream/docs/; }}\n}}\n",
            www = www.display(),
            empty = empty.display()
        )
    };
    let nginx = Nginx::start_custom(&bin, &www, &http, &at([127, 0, 0, 1]));
    let site_file = tmp.path().join("site.conf");
    std::fs::write(&site_file, http(nginx.addr.port())).unwrap();
    assert_eq!(
        get_from("127.0.0.1", nginx.addr, "/docs/guide.html", "x").0,
        200
    );
    let secrets = ["docs/guide.html", "files/list.html", "app/page.html"];
    let check = |run: &Run, leg: &str| {
        assert_safe(run, &secrets, &["index.html"], leg);
        for said in ["root $view", "alias $files", "proxy_pass $upstream"] {
            assert!(run.log.contains(said), "{leg}: {said}\n{}", run.log);
        }
    };
    // Unread, `geo` grants all of loopback: the judge's own address sees the docroot. What
    // `--server-config none` gives up is exactly this, and the agent says so at every start.
    let none_check = |run: &Run, leg: &str| {
        assert!(
            run.listed.iter().any(|l| l == "docs/guide.html"),
            "{leg}: {:?}",
            run.listed
        );
        assert!(
            !run.listed.iter().any(|l| l == "files/list.html"),
            "{leg}: the map names 127.0.0.1 only"
        );
    };
    three_ways(&www, &nginx.url(), &site_file, &nginx, &check, &none_check);
}

#[test]
fn an_include_glob_that_gains_a_file_at_a_reload_is_read_again() {
    let Some(bin) = nginx_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            ("ops/status.html", "hunter2 soon for loopback only"),
        ],
    );
    let snippets = tmp.path().join("ops.d");
    std::fs::create_dir_all(&snippets).unwrap();
    let http = |port: u16| {
        format!(
            "server {{\n  listen 127.0.0.1:{port};\n  root {www};\n  \
             location /ops/ {{ include {snippets}/*.conf; }}\n}}\n",
            www = www.display(),
            snippets = snippets.display()
        )
    };
    let nginx = Nginx::start_custom(&bin, &www, &http, &at([127, 0, 0, 1]));
    let state = tmp.path().join("state");
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let log = tmp.path().join("agent.log");
    let _agent = webcoop::servers::Killed(
        std::process::Command::new(super::support::agent_bin())
            .arg("--docroot")
            .arg(&www)
            .arg("--state")
            .arg(&state)
            .arg("--out")
            .arg(&out)
            .args(["--base-url", &nginx.url(), "--debounce-ms", "50"])
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let listed = || {
        let text = std::fs::read_to_string(out.join("robots.rdf")).unwrap_or_default();
        (
            text.contains("index.html"),
            text.contains("ops/status.html"),
        )
    };
    wait_for(30, "the first listing, ops/ in it", || {
        listed() == (true, true)
    });
    // A file appears in the glob's directory, and nginx is reloaded: the agent reads the new
    // rule (the directory's listing changed) and the page leaves.
    std::fs::write(
        snippets.join("lockdown.conf"),
        "allow 127.0.0.1;\ndeny all;\n",
    )
    .unwrap();
    nginx.reload_custom(&http(nginx.addr.port()));
    wait_for(30, "ops/status.html to leave the listing", || {
        listed() == (true, false)
    });
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("the web server changed"), "{text}");
    assert!(
        text.contains("lockdown.conf:1: allow 127.0.0.1 lets the judge in"),
        "{text}"
    );
}

#[test]
fn requests_moved_inside_nginx_are_judged_where_they_end() {
    let Some(bin) = nginx_bin() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let www = docroot(tmp.path());
    plant(
        &www,
        &[
            ("index.html", "<h1>home</h1>"),
            (
                "members/list.html",
                "hunter2 behind error_page to a named location",
            ),
            (
                "files/gone.html",
                "hunter2 behind try_files to a named location",
            ),
            (
                "docs/guide.html",
                "hunter2 behind error_page to an internal alias",
            ),
            ("r/page.html", "hunter2 behind rewrite last"),
            ("tw/page.html", "behind error_page to a place for everyone"),
        ],
    );
    // Strangers are refused where the request starts, or sent on; the place it ends lets
    // loopback in. The twin ends in a place that grants everyone.
    let http = |port: u16| {
        format!(
            "server {{\n  listen 127.0.0.1:{port};\n  root {www};\n  \
             location /members/ {{ deny all; error_page 403 = @open; }}\n  \
             location @open {{ allow 127.0.0.0/8; deny all; }}\n  \
             location /files/ {{ try_files /nothing-here @back; }}\n  \
             location @back {{ allow 127.0.0.0/8; deny all; }}\n  \
             location /docs/ {{ deny all; error_page 403 = /internal$uri; }}\n  \
             location /internal/ {{ internal; alias {www}/; allow 127.0.0.0/8; deny all; }}\n  \
             location /r/ {{ rewrite ^/r/(.*)$ /inner/r/$1 last; }}\n  \
             location /inner/ {{ internal; alias {www}/; allow 127.0.0.0/8; deny all; }}\n  \
             location /tw/ {{ deny all; error_page 403 = @pub; }}\n  \
             location @pub {{ }}\n}}\n",
            www = www.display()
        )
    };
    let nginx = Nginx::start_custom(&bin, &www, &http, &at([127, 0, 0, 1]));
    let site_file = tmp.path().join("site.conf");
    std::fs::write(&site_file, http(nginx.addr.port())).unwrap();
    // The traps are real: from loopback each moved request is answered the file itself.
    for p in [
        "members/list.html",
        "files/gone.html",
        "docs/guide.html",
        "r/page.html",
    ] {
        let (status, body) = get_from("127.0.0.1", nginx.addr, &format!("/{p}"), "x");
        assert_eq!(status, 200, "{p}: {body}");
        assert!(body.contains(SECRET), "{p}: {body}");
    }
    let secrets = [
        "members/list.html",
        "files/gone.html",
        "docs/guide.html",
        "r/page.html",
    ];
    let check = |run: &Run, leg: &str| {
        assert_safe(run, &secrets, &["index.html", "tw/page.html"], leg);
        assert!(
            run.log.contains("ends in location @open"),
            "{leg}: the log names where the request ends\n{}",
            run.log
        );
    };
    three_ways(&www, &nginx.url(), &site_file, &nginx, &check, &|_, _| {});
}

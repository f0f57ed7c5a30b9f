//! The web server is the judge: files the server cannot read, rules the agent never modelled
//! (includes, handlers, rewrites, aliases, proxies, PHP), names no server can tell from a page,
//! and hard links written elsewhere, each against Debian's nginx with its workers running as
//! the web user, as in production (the agent runs as root, as the unit's ExecStart would
//! without its User=).

use super::agent::assert_never_published;
use super::nginx_site::AgentSite;
use super::support::wait_for;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use webcoop::servers::is_root;
use webcoop_testkit::skip;

fn chmod(p: &std::path::Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A site whose nginx workers cannot read what root alone can: `None` unless the tests run
/// as root (who alone can start nginx as www-data and plant root-only files).
fn site_as_root(
    files: &[(&str, &[u8])],
    extra: &str,
    args: &[&str],
    prepare: impl FnOnce(&std::path::Path),
) -> Option<AgentSite> {
    if !is_root() {
        skip("needs root, to run nginx as www-data beside a root agent");
        return None;
    }
    AgentSite::start(files, extra, args, prepare)
}

#[test]
fn files_the_web_server_cannot_read_are_never_published() {
    let outside = tempfile::tempdir().unwrap();
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"<h1>home</h1>"),
        ("root-only.html", b"hunter2 root only"),
        ("nobody.html", b"hunter2 mode 000"),
        ("closed/inside.html", b"hunter2 behind a closed directory"),
        ("open/page.html", b"a page anyone reads"),
    ];
    let secret_outside = outside.path().join("shadow");
    let Some(site) = site_as_root(files, "", &[], |www| {
        chmod(&www.join("root-only.html"), 0o600);
        chmod(&www.join("nobody.html"), 0o000);
        chmod(&www.join("closed"), 0o700);
        // A hard link to a file only root reads, made in the docroot.
        std::fs::write(&secret_outside, "hunter2 linked").unwrap();
        chmod(&secret_outside, 0o600);
        std::fs::hard_link(&secret_outside, www.join("linked.html")).unwrap();
    }) else {
        return;
    };
    // nginx refuses each; the agent, which can read them all, follows its word.
    for p in [
        "/root-only.html",
        "/nobody.html",
        "/closed/inside.html",
        "/linked.html",
    ] {
        assert_eq!(site.get(p, &[]).status, 403, "{p}");
    }
    assert_eq!(site.listed(), ["index.html", "open/page.html"]);
    assert_never_published(
        &site,
        &[
            "root-only.html",
            "nobody.html",
            "closed/inside.html",
            "linked.html",
        ],
    );
    let log = site.log_text();
    assert!(
        log.contains("not published, the server answers 403: root-only.html"),
        "{log}"
    );
    // Permissions taken away while the agent watches: the file leaves at once, without any
    // write to it, and so does a directory closed to the server.
    chmod(&site.www.join("open/page.html"), 0o600);
    wait_for(20, "open/page.html to leave the listing", || {
        site.listed() == ["index.html"]
    });
    // A batch from before it left names its creation, and carries its content no more.
    let batch = site.get("/.well-known/webcoop/changes?since=0&bodies=1", &[]);
    assert_eq!(batch.status, 200);
    let batch = String::from_utf8_lossy(&batch.body).into_owned();
    assert!(batch.contains("open/page.html"), "{batch}");
    assert!(!batch.contains("a page anyone reads"), "{batch}");
    chmod(&site.www.join("open/page.html"), 0o644);
    wait_for(20, "open/page.html to come back", || {
        site.listed() == ["index.html", "open/page.html"]
    });
    chmod(&site.www.join("open"), 0o700);
    wait_for(20, "open/ to leave the listing", || {
        site.listed() == ["index.html"]
    });
    assert!(site.feed_text().contains("open/page.html"));
}

#[test]
fn rules_the_agent_never_modelled_are_judged_by_nginx_itself() {
    let Some(php) = webcoop_testkit::tool_named_like("php-fpm") else {
        return;
    };
    let Some(fpm) = webcoop::servers::PhpFpm::start(&php) else {
        return skip("PHP-FPM as www-data needs root");
    };
    let other = super::support::HostileWeb::start();
    other.set(
        "127.0.0.1",
        "/proxied/page.html",
        super::support::Canned::ok("text/html", "what the backend says"),
    );
    let include = std::env::temp_dir().join(format!("webcoop-deny-{}.conf", std::process::id()));
    std::fs::write(&include, "deny all;\n").unwrap();
    let php_source = b"<p>config</p><?php $db_password = 'hunter2'; echo 'rendered'; ?>\n";
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"<h1>home</h1>"),
        ("inc/secret.html", b"hunter2 denied through an include"),
        ("moved.html", b"hunter2 moved away"),
        ("rw/a.html", b"hunter2 rewritten"),
        ("other/a.html", b"the rewrite's target"),
        ("app/page.html", b"hunter2 behind try_files"),
        ("aliased/page.html", b"hunter2 shadowed by an alias"),
        ("proxied/page.html", b"hunter2 behind a proxy"),
        ("php/config.html", php_source),
        ("php/plain.html", b"<p>no PHP in it: served as it is</p>\n"),
    ];
    let elsewhere = std::env::temp_dir().join(format!("webcoop-alias-{}", std::process::id()));
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("page.html"), "the alias's own page").unwrap();
    webcoop::servers::open_to_web_user(&elsewhere, false);
    let extra = format!(
        "    location /inc/ {{ include {inc}; }}\n\
             location = /moved.html {{ return 302 /index.html; }}\n\
             location /rw/ {{ rewrite ^/rw/(.*)$ /other/$1 last; }}\n\
             location /app/ {{ try_files /index.html =404; }}\n\
             location /aliased/ {{ alias {alias}/; }}\n\
             location /proxied/ {{ proxy_pass http://{proxy}; proxy_set_header Host 127.0.0.1; }}\n\
             location /php/ {{ location ~ \\.html$ {{ fastcgi_pass {fpm}; include /etc/nginx/fastcgi_params; \
             fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name; }} }}\n",
        inc = include.display(),
        alias = elsewhere.display(),
        proxy = other.addr,
        fpm = fpm.addr,
    );
    let Some(site) = AgentSite::start(files, &extra, &[], |_| {}) else {
        return;
    };
    // What nginx does with each: the agent publishes only what it serves as the file.
    assert_eq!(site.get("/inc/secret.html", &[]).status, 403);
    assert_eq!(site.get("/moved.html", &[]).status, 302);
    assert!(String::from_utf8_lossy(&site.get("/php/config.html", &[]).body).contains("rendered"));
    assert_eq!(
        site.listed(),
        ["index.html", "other/a.html", "php/plain.html"]
    );
    let refused = [
        "inc/secret.html",
        "moved.html",
        "rw/a.html",
        "app/page.html",
        "aliased/page.html",
        "proxied/page.html",
        "php/config.html",
    ];
    assert_never_published(&site, &refused);
    let log = site.log_text();
    for (why, path) in [
        ("the server answers 403", "inc/secret.html"),
        ("the server answers 302 (to ", "moved.html"),
        (
            "the server runs this file: its answer is not the file",
            "php/config.html",
        ),
        (
            "the server runs this file: its answer is not the file",
            "app/page.html",
        ),
    ] {
        assert!(
            log.lines().any(|l| l.contains(why) && l.contains(path)),
            "{why} {path}:\n{log}"
        );
    }
    // A file handed to PHP that holds PHP becomes its output; the source never leaks.
    std::fs::write(
        site.www.join("php/late.html"),
        b"<?php echo 'x'; // hunter2\n",
    )
    .unwrap();
    site.write_and_wait("late.html", b"a late page");
    wait_for(10, "php/late.html to be judged", || {
        site.log_text()
            .lines()
            .any(|l| l.contains("php/late.html") && l.contains("not the file"))
    });
    assert!(!site.listed().contains(&"php/late.html".to_string()));
    assert_never_published(&site, &["php/late.html"]);
    let _ = std::fs::remove_file(&include);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

#[test]
fn rules_that_depend_on_who_asks_hide_their_places_and_unreadable_includes_hide_theirs() {
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"<h1>home</h1>"),
        ("office/plan.html", b"hunter2 for the office"),
        ("local/stats.html", b"hunter2 for loopback only"),
        ("lost/page.html", b"hunter2 behind an unreadable include"),
        ("public/page.html", b"for everyone"),
    ];
    // Each lets any address of loopback in, where the judge asks from, and keeps the world
    // out: only the configuration tells.
    let extra = "    location /office/ { if ($remote_addr !~ ^127\\.) { return 403; } }\n    \
                 location /local/ { allow 127.0.0.0/8; deny all; }\n";
    let console = super::support::free_port();
    let console_addr = format!("127.0.0.1:{console}");
    let Some(mut site) = AgentSite::start(
        files,
        extra,
        &["--server-config", "none", "--console", &console_addr],
        |_| {},
    ) else {
        return;
    };
    // Told not to read it, the agent cannot know: loopback is let in, and it says so, in its
    // log and on its console for as long as it runs so.
    assert_eq!(site.get("/office/plan.html", &[]).status, 200);
    assert!(site.listed().contains(&"office/plan.html".to_string()));
    assert!(
        site.log_text()
            .contains("rules that depend on who asks are not looked for"),
        "{}",
        site.log_text()
    );
    // The console starts just after the service the site waited for: a loaded machine once
    // asked in between and was refused.
    let mut overview = None;
    wait_for(30, "the agent's console", || {
        overview =
            webcoop::servers::http_get(console_addr.parse().unwrap(), "/api/overview", &[]).ok();
        overview.is_some()
    });
    let overview: serde_json::Value =
        serde_json::from_slice(&overview.map(|r| r.body).unwrap_or_default()).unwrap();
    let unread = overview["judge"]["config_unread"]
        .as_str()
        .unwrap_or_default();
    assert!(
        unread.contains("--server-config none") && unread.contains("not looked for"),
        "{overview}"
    );
    site.kill_agent();
    // Read from nginx itself (no flag), the agent hides them, and what an include it cannot
    // read governs (a file given too), naming each.
    let conf = site.server_conf.clone();
    let missing = site.tmp.path().join("rules-gone.conf");
    let text = std::fs::read_to_string(&conf).unwrap().replacen(
        "    # The agent's service",
        &format!(
            "    location /lost/ {{ include {}; }}\n    # The agent's service",
            missing.display()
        ),
        1,
    );
    std::fs::write(&conf, text).unwrap();
    let conf_arg = conf.display().to_string();
    let Some(site) = AgentSite::start(files, extra, &["--server-config", &conf_arg], |_| {}) else {
        return;
    };
    assert_eq!(site.listed(), ["index.html", "public/page.html"]);
    assert_never_published(
        &site,
        &["office/plan.html", "local/stats.html", "lost/page.html"],
    );
    let log = site.log_text();
    for said in [
        "if ($remote_addr ...) may depend on who asks",
        "allow 127.0.0.0/8 lets the judge in",
        "rules-gone.conf",
    ] {
        assert!(log.contains(said), "{said}:\n{log}");
    }
}

#[test]
fn secrets_by_name_are_never_published_though_the_server_serves_them() {
    let planted: &[(&str, &[u8])] = &[
        ("index.html", b"<h1>home</h1>"),
        ("id_rsa", b"-----BEGIN OPENSSH PRIVATE KEY----- hunter2"),
        (
            "keys/deploy_ed25519",
            b"-----BEGIN OPENSSH PRIVATE KEY----- hunter2",
        ),
        ("db/app.sqlite-wal", b"hunter2 in a WAL"),
        ("db/app.db-journal", b"hunter2 in a journal"),
        ("infra/terraform.tfstate", b"{\"password\": \"hunter2\"}"),
        ("vault.kdbx", b"hunter2 passwords"),
        ("error_log", b"PHP Warning: hunter2"),
        ("core", b"\x7fELF hunter2 core"),
        ("core.4242", b"\x7fELF hunter2 core"),
        ("INDEX.HTML.BAK", b"hunter2 old page"),
        ("Notes.SWP", b"hunter2 swap"),
        ("backup.SQL.GZ", b"\x1f\x8b hunter2"),
    ];
    let Some(site) = AgentSite::start(planted, "", &[], |_| {}) else {
        return;
    };
    // nginx serves them: no permission or rule tells them from a page.
    for p in ["/id_rsa", "/db/app.sqlite-wal", "/INDEX.HTML.BAK", "/core"] {
        assert_eq!(site.get(p, &[]).status, 200, "{p}");
    }
    assert_eq!(site.listed(), ["index.html"]);
    let names: Vec<&str> = planted[1..].iter().map(|(p, _)| *p).collect();
    assert_never_published(&site, &names);
}

#[test]
fn a_hard_linked_file_changed_through_another_link_is_noticed_while_watching() {
    let outside = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let original = outside.path().join("shared.html");
    std::fs::write(&original, "version one").unwrap();
    chmod(&original, 0o644);
    let Some(site) = site_as_root(&[("index.html", b"home")], "", &[], |www| {
        std::fs::hard_link(&original, www.join("linked.html")).unwrap();
    }) else {
        return;
    };
    assert_eq!(site.listed(), ["index.html", "linked.html"]);
    let etag = |text: &str| {
        webcoop_protocol::validator::Sha256Digest::of(text.as_bytes())
            .etag()
            .to_string()
            .trim_matches('"')
            .to_string()
    };
    // Written through the link outside the docroot: no event in the docroot's directories.
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&original, "version two, written elsewhere").unwrap();
    wait_for(20, "the new version of linked.html", || {
        let rdf = String::from_utf8_lossy(&site.get("/robots.rdf", &[]).body).into_owned();
        rdf.contains(&etag("version two, written elsewhere"))
    });
    // Made unreadable through that link: the server refuses it, and it leaves.
    chmod(&original, 0o600);
    wait_for(20, "linked.html to leave the listing", || {
        site.listed() == ["index.html"]
    });
}

#[test]
fn a_change_of_the_server_s_rules_is_judged_at_once() {
    let files: &[(&str, &[u8])] = &[
        ("index.html", b"home"),
        ("retired.html", b"a page about to be refused"),
        ("office/plan.html", b"a page about to depend on who asks"),
    ];
    let Some(mut site) = site_as_root(files, "", &[], |_| {}) else {
        return;
    };
    let conf = site.server_conf.clone();
    let conf_arg = conf.display().to_string();
    site.restart_agent_with(&["--server-config", &conf_arg]);
    assert_eq!(
        site.listed(),
        ["index.html", "office/plan.html", "retired.html"]
    );
    // A rule the same for everyone, edited and reloaded: nothing on disk changes but the
    // configuration, and the judge hears the new answer.
    let refused = std::fs::read_to_string(&conf).unwrap().replacen(
        "    # The agent's service",
        "    location = /retired.html { return 410; }\n    # The agent's service",
        1,
    );
    // nginx answers the new rule before the agent can read the file: otherwise the agent may
    // judge between the write and the reload, hear the old answer, and (as designed) ask again
    // only at its follow-up a minute later (a CI run saw that race).
    site.nginx.reload(&refused);
    std::fs::write(&conf, &refused).unwrap();
    wait_for(20, "retired.html to leave the listing", || {
        !site.listed().contains(&"retired.html".to_string())
    });
    assert!(
        site.log_text().contains("the web server changed"),
        "{}",
        site.log_text()
    );
    // A rule that could let the judge in: hidden as soon as it is read, before any reload.
    let office = refused.replacen(
        "    # The agent's service",
        "    location /office/ { allow 127.0.0.0/8; deny all; }\n    # The agent's service",
        1,
    );
    std::fs::write(&conf, &office).unwrap();
    wait_for(20, "office/ to leave the listing", || {
        site.listed() == ["index.html"]
    });
}

//! The agent in origin mode beside a real WordPress, as Debian packages it: nginx, PHP-FPM and
//! MariaDB on loopback, the site installed through its own install screen and driven through
//! XML-RPC (new posts, edits, a comment, a deletion).
//!
//! With WordPress's own pings (its "Update Services", sent by WP-Cron), a pushed crawler's
//! copy matches what nginx serves after each step, its requests counted from nginx's log
//! beside a polling crawler's. Without any announcement, the agent's checks find each edit,
//! counted the same way; nonces do not count as changes, and a page that changes at every
//! request is not published. Strangers' pings are refused.

use super::crawl_coop::{crawl_seeds, held_urls, wait_for};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use webcoop::servers::{Killed, Nginx, PhpFpm, Terminated, http_get, http_request};
use webcoop_protocol::validator::Sha256Digest;
use webcoop_testkit::{tool, tool_named_like, workspace_bin};

const PASSWORD: &str = "Secret-pass-123";
const SECRET: &str = "0123456789abcdef-secret";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A private MariaDB on a loopback port, its data in a temporary directory.
struct Mariadb {
    port: u16,
    socket: PathBuf,
    _process: Terminated,
}

impl Mariadb {
    fn start(dir: &Path) -> Option<Mariadb> {
        let server = tool("mariadbd")?;
        let install = tool("mariadb-install-db")?;
        let data = dir.join("db");
        // Its own temporary directory: two bootstraps at once in /tmp took each other's files.
        let tmp = dir.join("db-tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let out = Command::new(install)
            .env("TMPDIR", &tmp)
            .arg(format!("--datadir={}", data.display()))
            .args([
                "--user=root",
                "--skip-test-db",
                "--auth-root-authentication-method=normal",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let socket = dir.join("db.sock");
        let child = Command::new(server)
            .env("TMPDIR", &tmp)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", socket.display()))
            // Only this test reaches it, on loopback: any user name and password will do.
            .args(["--user=root", "--skip-grant-tables", "--skip-log-bin"])
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.join("mariadbd.log")).map_or(Stdio::null(), Stdio::from),
            )
            .spawn()
            .unwrap();
        let db = Mariadb {
            port,
            socket,
            _process: Terminated(child),
        };
        wait_for("MariaDB", Duration::from_secs(30), || {
            db.sql("SELECT 1").is_ok()
        });
        Some(db)
    }

    fn sql(&self, statement: &str) -> Result<String, String> {
        let out = Command::new("mariadb")
            .arg("--no-defaults")
            .arg("-S")
            .arg(&self.socket)
            .args(["-N", "-e", statement])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

/// Debian's WordPress reads `/etc/wordpress/config-HOST.php` for the `Host` it is asked as:
/// this site's, removed when the test ends.
struct SiteConfig(PathBuf);

impl Drop for SiteConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A WordPress site behind nginx, with the agent's output served and its service proxied.
struct WordPress {
    host: String,
    base: String,
    nginx: Nginx,
    db: Mariadb,
    out: PathBuf,
    access_log: PathBuf,
    agent_port: u16,
    secret_file: PathBuf,
    tmp: tempfile::TempDir,
    _fpm: PhpFpm,
    _config: SiteConfig,
}

impl WordPress {
    /// Installs a site; `mu_plugins` are PHP files WordPress loads on every request.
    fn start(mu_plugins: &[(&str, &str)]) -> Option<WordPress> {
        let nginx_bin = tool("nginx")?;
        let php = tool_named_like("php-fpm")?;
        if !Path::new("/usr/share/wordpress/wp-settings.php").is_file() {
            assert!(
                std::env::var_os("WEBCOOP_REQUIRE_TOOLS").is_none(),
                "Debian's wordpress package is not installed"
            );
            eprintln!("SKIPPED: Debian's wordpress package is not installed");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        webcoop::servers::open_to_web_user(tmp.path(), false);
        let db = Mariadb::start(tmp.path())?;
        db.sql("CREATE DATABASE wp").unwrap();
        let fpm = PhpFpm::start(&php)?;
        // WordPress's content directory, with Debian's theme; read by PHP as the web user.
        let content = tmp.path().join("content");
        for dir in ["themes", "plugins", "mu-plugins"] {
            std::fs::create_dir_all(content.join(dir)).unwrap();
        }
        std::os::unix::fs::symlink(
            "/usr/share/wordpress/wp-content/themes/twentytwentythree",
            content.join("themes/twentytwentythree"),
        )
        .unwrap();
        for (name, code) in mu_plugins {
            std::fs::write(content.join("mu-plugins").join(name), code).unwrap();
        }
        for dir in ["", "themes", "plugins", "mu-plugins"] {
            webcoop::servers::open_to_web_user(&content.join(dir), false);
        }
        for (name, _) in mu_plugins {
            std::fs::set_permissions(
                content.join("mu-plugins").join(name),
                std::os::unix::fs::PermissionsExt::from_mode(0o644),
            )
            .unwrap();
        }
        let host = format!("wp{}-{}.test", std::process::id(), free_port());
        let config = SiteConfig(PathBuf::from(format!("/etc/wordpress/config-{host}.php")));
        std::fs::write(
            &config.0,
            format!(
                "<?php\ndefine('DB_NAME', 'wp');\ndefine('DB_USER', 'wp');\ndefine('DB_PASSWORD', 'x');\n\
                 define('DB_HOST', '127.0.0.1:{}');\ndefine('WP_CONTENT_DIR', '{}');\n\
                 // WP-Cron from a system cron (here, the test), as production sites run it.\n\
                 define('DISABLE_WP_CRON', true);\n",
                db.port,
                content.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(
            &config.0,
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).unwrap();
        webcoop::servers::open_to_web_user(&out, false);
        let access_log = tmp.path().join("access.log");
        let agent_port = free_port();
        let conf = format!(
            "server {{\n    listen 127.0.0.1:0;\n    server_name {host};\n    root /usr/share/wordpress;\n    index index.php;\n\
             access_log {log};\n\
             location = /robots.rdf {{ alias {out}/robots.rdf; }}\n\
             location = /sitemap.xml {{ alias {out}/sitemap.xml; }}\n\
             location ^~ /.well-known/webcoop/snapshot/ {{\n        alias {out}/.well-known/webcoop/snapshot/;\n        types {{ application/zstd zst; text/plain cdxj; }}\n    }}\n\
             location /.well-known/webcoop/ {{\n        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n        proxy_pass http://127.0.0.1:1;\n    }}\n\
             location /wp-content/ {{ alias {content}/; }}\n\
             location / {{ try_files $uri $uri/ /index.php?$args; }}\n\
             location ~ \\.php$ {{\n        include /etc/nginx/fastcgi_params;\n        fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n        fastcgi_pass {fpm};\n    }}\n}}\n",
            log = access_log.display(),
            out = out.display(),
            content = content.display(),
            fpm = fpm.addr,
        );
        let nginx = Nginx::start_proxying(
            &nginx_bin,
            &conf,
            Path::new("/usr/share/wordpress"),
            Some(([127, 0, 0, 1], agent_port).into()),
        );
        // Installed through its own screen, as a webmaster does.
        let install = http_request(
            nginx.addr,
            "POST",
            "/wp-admin/install.php?step=2",
            &[
                ("Host", &host),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            format!(
                "weblog_title=Test&user_name=admin&admin_password={PASSWORD}&admin_password2={PASSWORD}&pw_weak=1&admin_email=a%40{host}&blog_public=1"
            )
            .as_bytes(),
        )
        .unwrap();
        let said = String::from_utf8_lossy(&install.body);
        assert!(said.contains("Success"), "{said}");
        db.sql("UPDATE wp.wp_options SET option_value = '/%postname%/' WHERE option_name = 'permalink_structure'")
            .unwrap();
        // No pings until a test names its Update Services (the default is on the internet).
        db.sql("UPDATE wp.wp_options SET option_value = '' WHERE option_name = 'ping_sites'")
            .unwrap();
        let secret_file = tmp.path().join("notify.secret");
        std::fs::write(&secret_file, format!("{SECRET}\n")).unwrap();
        let base = format!("http://{host}/");
        Some(WordPress {
            host,
            base,
            nginx,
            db,
            out,
            access_log,
            agent_port,
            secret_file,
            tmp,
            _fpm: fpm,
            _config: config,
        })
    }

    /// Names the agent's ping endpoint in WordPress's Update Services.
    fn ping_the_agent(&self) {
        self.db
            .sql(&format!(
                "UPDATE wp.wp_options SET option_value = 'http://127.0.0.1:{}/.well-known/webcoop/ping' WHERE option_name = 'ping_sites'",
                self.agent_port
            ))
            .unwrap();
    }

    fn start_agent(&self, extra: &[&str]) -> Killed {
        Killed(
            Command::new(workspace_bin("webcoop-agent", "webcoop-agent"))
                .arg("--origin")
                .arg(format!("http://{}", self.nginx.addr))
                .args(["--base-url", &self.base])
                .arg("--state")
                .arg(self.tmp.path().join("state"))
                .arg("--out")
                .arg(&self.out)
                .arg("--access-log")
                .arg(&self.access_log)
                .args([
                    "--listen",
                    &format!("127.0.0.1:{}", self.agent_port),
                    "--notify-from",
                    "127.0.0.1/32",
                    "--trusted-proxy",
                    "127.0.0.1/32",
                    "--revalidate-min",
                    "1",
                    "--revalidate-max",
                    "4",
                    "--origin-rate",
                    "10",
                    "--allow-callback-net",
                    "127.0.0.0/8",
                    "--hub-window-ms",
                    "200",
                ])
                .arg("--notify-secret-file")
                .arg(&self.secret_file)
                .args(extra)
                .stdout(Stdio::null())
                .stderr(
                    std::fs::File::create(self.tmp.path().join("agent.err"))
                        .map_or(Stdio::null(), Stdio::from),
                )
                .spawn()
                .unwrap(),
        )
    }

    fn agent_said(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("agent.err")).unwrap_or_default()
    }

    fn xmlrpc(&self, method: &str, params: &str) -> String {
        let body = format!(
            "<?xml version=\"1.0\"?><methodCall><methodName>{method}</methodName><params>\
             <param><value><int>1</int></value></param>\
             <param><value><string>admin</string></value></param>\
             <param><value><string>{PASSWORD}</string></value></param>{params}</params></methodCall>"
        );
        let r = http_request(
            self.nginx.addr,
            "POST",
            "/xmlrpc.php",
            &[("Host", &self.host), ("Content-Type", "text/xml")],
            body.as_bytes(),
        )
        .unwrap();
        let text = String::from_utf8_lossy(&r.body).into_owned();
        assert!(
            r.status == 200 && !text.contains("<fault>"),
            "{method}: {text}"
        );
        text
    }

    /// Publishes a post; returns its id.
    fn new_post(&self, title: &str, content: &str) -> String {
        let answer = self.xmlrpc(
            "wp.newPost",
            &format!(
                "<param><value><struct>\
                 <member><name>post_title</name><value><string>{title}</string></value></member>\
                 <member><name>post_content</name><value><string>{content}</string></value></member>\
                 <member><name>post_status</name><value><string>publish</string></value></member>\
                 <member><name>comment_status</name><value><string>open</string></value></member>\
                 </struct></value></param>"
            ),
        );
        answer
            .split("<string>")
            .nth(1)
            .and_then(|s| s.split('<').next())
            .unwrap()
            .to_string()
    }

    fn edit_post(&self, id: &str, content: &str) {
        self.xmlrpc(
            "wp.editPost",
            &format!(
                "{}<param><value><struct><member><name>post_content</name><value><string>{content}</string></value></member></struct></value></param>",
                string_param(id)
            ),
        );
    }

    fn comment(&self, id: &str, text: &str) {
        self.xmlrpc(
            "wp.newComment",
            &format!(
                "{}<param><value><struct><member><name>content</name><value><string>{text}</string></value></member></struct></value></param>",
                string_param(id)
            ),
        );
    }

    fn delete_post(&self, id: &str) {
        self.xmlrpc("wp.deletePost", &string_param(id));
    }

    /// WP-Cron, as a system cron runs it: sends the pings of what was published.
    fn cron(&self) {
        let r = http_get(self.nginx.addr, "/wp-cron.php", &[("Host", &self.host)]).unwrap();
        assert_eq!(r.status, 200);
    }

    /// What nginx serves at `url` now.
    fn served(&self, url: &str) -> Option<Vec<u8>> {
        let path = url.strip_prefix(&self.base)?;
        let r = http_get(
            self.nginx.addr,
            &format!("/{path}"),
            &[("Host", &self.host)],
        )
        .ok()?;
        (r.status == 200).then_some(r.body)
    }

    /// The agent's published sitemap: the URLs it lists.
    fn listed(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.out.join("sitemap.xml")).unwrap_or_default();
        text.split("<loc>")
            .skip(1)
            .filter_map(|s| s.split("</loc>").next())
            .map(str::to_string)
            .collect()
    }

    /// The change log as the changes endpoint serves it through nginx.
    fn changes(&self) -> String {
        http_get(
            self.nginx.addr,
            "/.well-known/webcoop/changes?since=0",
            &[("Host", &self.host)],
        )
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .unwrap_or_default()
    }

    /// Requests and bytes nginx logged for user agents containing `who`.
    fn requests_by(&self, who: &str) -> (usize, u64) {
        let log = std::fs::read_to_string(&self.access_log).unwrap_or_default();
        let mut n = 0;
        let mut bytes = 0;
        for line in log.lines().filter(|l| l.contains(who)) {
            n += 1;
            // `... "GET /x HTTP/1.1" 200 1234 "referer" "agent"`
            bytes += line
                .split("\" ")
                .nth(1)
                .and_then(|rest| rest.split(' ').nth(1))
                .and_then(|b| b.parse::<u64>().ok())
                .unwrap_or(0);
        }
        (n, bytes)
    }

    /// What the crawler at `out` holds differently from what nginx serves, for the pages the
    /// agent lists, and which of `gone` it still holds: empty when its copy is exact.
    fn crawler_differences(&self, out: &Path, gone: &[String]) -> Vec<String> {
        let held = held_urls(out);
        let listed = self.listed();
        let mut wrong: Vec<String> = gone
            .iter()
            .filter(|g| held.contains_key(*g))
            .map(|g| format!("{g} still held"))
            .collect();
        if listed.is_empty() {
            wrong.push("nothing listed".into());
        }
        for u in &listed {
            let want = self
                .served(u)
                .map(|body| Sha256Digest::of(&body).etag().to_string());
            if held.get(u) != want.as_ref() {
                wrong.push(format!("{u}: held {:?}, served {want:?}", held.get(u)));
            }
        }
        wrong
    }

    /// Waits until the crawler at `out` is exact; fails naming what differs.
    fn wait_exact(&self, what: &str, out: &Path, gone: &[String]) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let wrong = self.crawler_differences(out, gone);
            if wrong.is_empty() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{what}: the crawler's copy differs: {wrong:#?}\n{}\n{}\n{}",
                std::fs::read_to_string(out.with_extension("err")).unwrap_or_default(),
                std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default(),
                self.changes()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

fn string_param(s: &str) -> String {
    format!("<param><value><string>{s}</string></value></param>")
}

#[test]
fn a_pinging_wordpress_is_kept_exact_in_a_pushed_crawler_and_strangers_pings_are_refused() {
    let Some(wp) = WordPress::start(&[]) else {
        return;
    };
    wp.ping_the_agent();
    let _agent = wp.start_agent(&[]);
    let hello = format!("{}hello-world/", wp.base);
    let sample = format!("{}sample-page/", wp.base);
    wait_for("the baseline", Duration::from_secs(30), || {
        let l = wp.listed();
        l.contains(&hello) && l.contains(&sample)
    });
    let first = wp.listed();
    assert!(
        first
            .iter()
            .all(|u| !u.contains('?') && !u.contains("wp-admin")),
        "{first:?}"
    );
    // A snapshot of the pages as WordPress served them, for a crawler's first visit.
    wait_for(
        "robots.rdf naming a snapshot",
        Duration::from_secs(30),
        || {
            std::fs::read_to_string(wp.out.join("robots.rdf"))
                .is_ok_and(|t| t.contains("wc:snapshot"))
        },
    );

    // A crawler kept fresh by pushes, and one polling every page every 5 s, side by side (a
    // poll of WordPress costs PHP its whole page: faster polling would load the test machine).
    let resolve = format!("{}={}", wp.host, wp.nginx.addr);
    let pushed = wp.tmp.path().join("crawl-push");
    let polled = wp.tmp.path().join("crawl-poll");
    let _push = crawl_seeds(
        std::slice::from_ref(&wp.base),
        &pushed,
        "push",
        120,
        600,
        &[
            "--resolve".into(),
            resolve.clone(),
            "--callback-listen".into(),
            "127.0.0.1:0".into(),
            "--user-agent".into(),
            "pushed-crawler".into(),
        ],
    );
    let _poll = crawl_seeds(
        std::slice::from_ref(&wp.base),
        &polled,
        "off",
        120,
        5,
        &[
            "--resolve".into(),
            resolve,
            "--user-agent".into(),
            "polling-crawler".into(),
        ],
    );
    wp.wait_exact("the first crawl", &pushed, &[]);
    let counted = |what: &str| {
        let (push_n, push_b) = wp.requests_by("pushed-crawler");
        let (poll_n, poll_b) = wp.requests_by("polling-crawler");
        let (agent_n, agent_b) = wp.requests_by("(origin)");
        eprintln!(
            "wordpress, {what}: pushed crawler {push_n} requests {push_b} B; polling crawler {poll_n} requests {poll_b} B; agent {agent_n} local requests {agent_b} B"
        );
        (push_n, push_b, poll_n, poll_b)
    };
    let before = counted("after the first crawl");
    let taken = std::fs::read_to_string(pushed.join("crawl.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(webcoop_crawler::crawl_log::FROM_SNAPSHOT))
        .count();
    eprintln!("wordpress: the pushed crawler took {taken} pages from the agent's snapshot");
    // At least the five pages WordPress's sitemaps name (home, post, page, author, category).
    assert!(taken >= 5, "{taken} pages from the snapshot");
    let changes_before = wp.changes().matches("<entry>").count();

    // A new post: WordPress pings when WP-Cron runs, naming only the home and the feed; the
    // agent reads the sitemaps again and finds the post.
    let id = wp.new_post("Second post", "Fresh words.");
    wp.cron();
    let second = format!("{}second-post/", wp.base);
    wait_for("the pinged post", Duration::from_secs(15), || {
        wp.listed().contains(&second)
    });
    assert!(
        wp.agent_said().contains("told of changes"),
        "{}",
        wp.agent_said()
    );
    assert!(wp.changes().contains("created /second-post/"));
    wp.wait_exact("the pushed crawler, new post", &pushed, &[]);
    counted("after a new post");

    // An edit and a comment, announced to nobody: found by the agent's checks, pushed.
    wp.edit_post(&id, "Edited words.");
    wait_for("the unannounced edit", Duration::from_secs(20), || {
        wp.changes().contains("modified /second-post/")
    });
    wp.wait_exact("the pushed crawler, edit", &pushed, &[]);
    let modified = wp.changes().matches("modified /second-post/").count();
    wp.comment(&id, "A first comment.");
    wait_for("the comment", Duration::from_secs(20), || {
        wp.changes().matches("modified /second-post/").count() > modified
    });
    wp.wait_exact("the pushed crawler, comment", &pushed, &[]);
    let held = held_urls(&pushed);
    let served = wp.served(&second).unwrap();
    assert!(String::from_utf8_lossy(&served).contains("A first comment."));
    assert_eq!(
        held.get(&second),
        Some(&Sha256Digest::of(&served).etag().to_string())
    );

    // A deletion: the page leaves the listing and the crawler's copies.
    wp.delete_post(&id);
    wait_for("the deletion", Duration::from_secs(20), || {
        !wp.listed().contains(&second)
    });
    assert!(wp.changes().contains("deleted /second-post/"));
    wp.wait_exact(
        "the pushed crawler, deletion",
        &pushed,
        std::slice::from_ref(&second),
    );
    let after = counted("after the four steps");
    let changed = wp.changes().matches("<entry>").count() - changes_before;
    let (push_n, push_b) = (after.0 - before.0, after.1 - before.1);
    let (poll_n, poll_b) = (after.2 - before.2, after.3 - before.3);
    eprintln!(
        "wordpress: {changed} page changes; per change, pushed {:.2} requests {:.0} B, polling {:.2} requests {:.0} B",
        push_n as f64 / changed as f64,
        push_b as f64 / changed as f64,
        poll_n as f64 / changed as f64,
        poll_b as f64 / changed as f64
    );
    assert!(changed > 0);
    assert!(
        push_n < poll_n && push_b < poll_b,
        "push {push_n} requests {push_b} B against polling {poll_n} requests {poll_b} B"
    );

    // Strangers' pings: from a stranger behind the proxy the agent trusts, with a wrong
    // secret, or naming another site; the secret and the agent's own CLI are let in.
    let ping = |headers: &[(&str, &str)], path: &str, body: &str| {
        http_request(
            ([127, 0, 0, 1], wp.agent_port).into(),
            "POST",
            path,
            headers,
            body.as_bytes(),
        )
        .unwrap()
    };
    let publish = format!("hub.mode=publish&hub.url={hello}");
    let stranger = [("X-Forwarded-For", "203.0.113.7")];
    let via_proxy = ping(&stranger, "/.well-known/webcoop/ping", &publish);
    assert_eq!(via_proxy.status, 403);
    // The same stranger through nginx, at the hub, where WebSub publishers post.
    let at_hub = http_request(
        wp.nginx.addr,
        "POST",
        "/.well-known/webcoop/hub",
        &[("Host", &wp.host), ("X-Forwarded-For", "203.0.113.7")],
        publish.as_bytes(),
    )
    .unwrap();
    assert_eq!(
        at_hub.status,
        403,
        "{}",
        String::from_utf8_lossy(&at_hub.body)
    );
    let wrong = ping(
        &[
            ("X-Forwarded-For", "203.0.113.7"),
            ("Authorization", "Bearer wrong-secret-000000"),
        ],
        "/.well-known/webcoop/ping",
        &publish,
    );
    assert_eq!(wrong.status, 403);
    let elsewhere = ping(
        &[],
        "/.well-known/webcoop/ping",
        "hub.mode=publish&hub.url=http://other.test/page/",
    );
    assert_eq!(elsewhere.status, 400);
    assert!(String::from_utf8_lossy(&elsewhere.body).contains("another site"));
    let xml_elsewhere = ping(
        &[],
        "/.well-known/webcoop/ping",
        "<?xml version=\"1.0\"?><methodCall><methodName>weblogUpdates.ping</methodName><params>\
         <param><value>x</value></param><param><value>http://other.test/</value></param></params></methodCall>",
    );
    assert_eq!(xml_elsewhere.status, 400);
    assert!(String::from_utf8_lossy(&xml_elsewhere.body).contains("<boolean>1</boolean>"));
    let with_key = ping(
        &stranger,
        &format!("/.well-known/webcoop/ping?key={SECRET}"),
        &publish,
    );
    assert_eq!(with_key.status, 200);
    let notify = |extra: &[&str]| {
        Command::new(workspace_bin("webcoop-agent", "webcoop-agent"))
            .args(["--listen", &format!("127.0.0.1:{}", wp.agent_port)])
            .args(extra)
            .output()
            .unwrap()
    };
    let secret = wp.secret_file.to_str().unwrap();
    let told = notify(&["--notify-secret-file", secret, "notify", &hello]);
    assert!(
        told.status.success(),
        "{}",
        String::from_utf8_lossy(&told.stderr)
    );
    let refused = notify(&["notify", "http://other.test/x"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("another site"));
    assert!(wp.listed().iter().all(|u| u.starts_with(&wp.base)));
    assert!(!wp.agent_said().contains("panicked"), "{}", wp.agent_said());
}

/// A nonce in a hidden input, as forms and plugins write them: new at every request.
const NONCE_PLUGIN: &str = r#"<?php
add_filter('the_content', function ($c) {
    if (is_single('hello-world')) {
        $c .= '<form><input type="hidden" name="_wpnonce" value="' . bin2hex(random_bytes(5)) . '" /></form>';
    }
    return $c;
});
"#;

/// A "random quote" on one page: different at every request.
const RANDOM_PLUGIN: &str = r#"<?php
add_filter('the_content', function ($c) {
    if (is_page('sample-page')) {
        $c .= '<p>Quote of the moment: ' . mt_rand() . '</p>';
    }
    return $c;
});
"#;

#[test]
fn a_silent_wordpress_is_followed_by_checking_its_pages_and_nonces_are_no_changes() {
    let Some(wp) = WordPress::start(&[("nonce.php", NONCE_PLUGIN), ("random.php", RANDOM_PLUGIN)])
    else {
        return;
    };
    // No Update Services, no pings: only the agent's checks (and its readings of the sitemaps
    // every 2 s) can find anything.
    let agent = wp.start_agent(&["--discover-every", "2"]);
    let hello = format!("{}hello-world/", wp.base);
    let sample = format!("{}sample-page/", wp.base);
    wait_for("the baseline", Duration::from_secs(30), || {
        wp.listed().contains(&hello)
    });
    // The page that changes at every request leaves the listing at its first check.
    wait_for("the random page refused", Duration::from_secs(20), || {
        !wp.listed().contains(&sample) && wp.agent_said().contains("changes at every request")
    });
    // The nonce page stays listed; that its checks log no change is shown below, where the
    // change log must be quiet for longer than the longest interval between checks.
    assert!(wp.listed().contains(&hello));

    let mut found: BTreeMap<&str, usize> = BTreeMap::new();
    // Each step is found when the change log holds more entries of `entry` than before it.
    let mut step = |what: &'static str, act: &dyn Fn(), entry: &str| {
        let (n0, _) = wp.requests_by("(origin)");
        let before = wp.changes().matches(entry).count();
        act();
        wait_for(what, Duration::from_secs(20), || {
            std::thread::sleep(Duration::from_millis(100));
            wp.changes().matches(entry).count() > before
        });
        let (n1, _) = wp.requests_by("(origin)");
        eprintln!(
            "wordpress without pings, {what}: found after {} local requests",
            n1 - n0
        );
        found.insert(what, n1 - n0);
    };
    let id = std::cell::RefCell::new(String::new());
    step(
        "a new post",
        &|| *id.borrow_mut() = wp.new_post("Quiet post", "Quiet words."),
        "created /quiet-post/<",
    );
    step(
        "an edit",
        &|| wp.edit_post(&id.borrow(), "Quieter words."),
        "modified /quiet-post/<",
    );
    step(
        "a comment",
        &|| wp.comment(&id.borrow(), "A quiet comment."),
        "modified /quiet-post/<",
    );
    step(
        "a deletion",
        &|| wp.delete_post(&id.borrow()),
        "deleted /quiet-post/<",
    );
    assert_eq!(found.len(), 4);
    assert!(!wp.listed().contains(&sample));
    assert!(!wp.agent_said().contains("panicked"), "{}", wp.agent_said());

    // Killed with SIGKILL and started again: every page is checked again, and nothing that
    // did not change is announced. First the deletion's consequences (the home page, the
    // archives) are let in: the log is quiet for longer than the longest interval.
    let mut entries = wp.changes().matches("<entry>").count();
    wait_for("a quiet change log", Duration::from_secs(60), || {
        std::thread::sleep(Duration::from_secs(5));
        let now = wp.changes().matches("<entry>").count();
        std::mem::replace(&mut entries, now) == now
    });
    let listed = wp.listed();
    drop(agent);
    let _again = wp.start_agent(&["--discover-every", "2"]);
    wait_for("the agent again", Duration::from_secs(20), || {
        http_get(
            ([127, 0, 0, 1], wp.agent_port).into(),
            "/.well-known/webcoop/healthz",
            &[],
        )
        .is_ok_and(|r| r.status == 200)
    });
    std::thread::sleep(Duration::from_secs(6));
    let log = wp.changes();
    assert_eq!(log.matches("<entry>").count(), entries, "{log}");
    assert_eq!(wp.listed(), listed);
}

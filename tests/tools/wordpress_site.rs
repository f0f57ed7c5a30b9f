//! A WordPress site as Debian packages it, for the agent's origin mode: nginx, PHP-FPM and
//! MariaDB on loopback, the site installed through its own install screen and driven through
//! XML-RPC and the REST API, with what the agent publishes read back.

use super::crawl_coop::{held_urls, wait_for};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use webcoop::servers::{Killed, Nginx, PhpFpm, Terminated, http_get, http_request};
use webcoop_protocol::validator::Sha256Digest;
use webcoop_testkit::{tool, tool_named_like, workspace_bin};

pub(crate) const PASSWORD: &str = "Secret-pass-123";
pub(crate) const SECRET: &str = "0123456789abcdef-secret";

use webcoop_testkit::free_port;

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
/// Lets the REST API take HTTP Basic credentials (WordPress's own application passwords need
/// HTTPS): a test site's stand-in for an editor's session.
pub(crate) const REST_AUTH_PLUGIN: &str = r#"<?php
add_filter('determine_current_user', function ($user) {
    if (!empty($user) || empty($_SERVER['HTTP_AUTHORIZATION'])) {
        return $user;
    }
    $h = $_SERVER['HTTP_AUTHORIZATION'];
    if (stripos($h, 'Basic ') !== 0) {
        return $user;
    }
    list($name, $pass) = array_pad(explode(':', base64_decode(substr($h, 6)), 2), 2, '');
    $u = wp_authenticate($name, $pass);
    return is_wp_error($u) ? $user : $u->ID;
}, 20);
"#;

pub(crate) struct WordPress {
    pub(crate) host: String,
    pub(crate) base: String,
    pub(crate) nginx: Nginx,
    db: Mariadb,
    pub(crate) out: PathBuf,
    pub(crate) access_log: PathBuf,
    pub(crate) agent_port: u16,
    pub(crate) secret_file: PathBuf,
    pub(crate) tmp: tempfile::TempDir,
    _fpm: PhpFpm,
    _config: SiteConfig,
}

impl WordPress {
    /// Installs a site; `mu_plugins` are PHP files WordPress loads on every request.
    pub(crate) fn start(mu_plugins: &[(&str, &str)]) -> Option<WordPress> {
        Self::start_with(mu_plugins, "")
    }

    /// [`WordPress::start`], with `locations` added to nginx's server block (before
    /// WordPress's own).
    pub(crate) fn start_with(mu_plugins: &[(&str, &str)], locations: &str) -> Option<WordPress> {
        let nginx_bin = tool("nginx")?;
        let php = tool_named_like("php-fpm")?;
        if !Path::new("/usr/share/wordpress/wp-settings.php").is_file() {
            webcoop_testkit::skip("Debian's wordpress package is not installed");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        webcoop::servers::open_to_web_user(tmp.path(), false);
        let db = Mariadb::start(tmp.path())?;
        db.sql("CREATE DATABASE wp").unwrap();
        let Some(fpm) = PhpFpm::start(&php) else {
            webcoop_testkit::skip("PHP-FPM as www-data needs root");
            return None;
        };
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
             {locations}\n\
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
    pub(crate) fn ping_the_agent(&self) {
        self.db
            .sql(&format!(
                "UPDATE wp.wp_options SET option_value = 'http://127.0.0.1:{}/.well-known/webcoop/ping' WHERE option_name = 'ping_sites'",
                self.agent_port
            ))
            .unwrap();
    }

    pub(crate) fn start_agent(&self, extra: &[&str]) -> Killed {
        self.start_agent_revalidating((1, 4), extra)
    }

    /// The agent, each page checked again between `revalidate` seconds (shortest, longest).
    pub(crate) fn start_agent_revalidating(
        &self,
        revalidate: (u64, u64),
        extra: &[&str],
    ) -> Killed {
        let (min, max) = (revalidate.0.to_string(), revalidate.1.to_string());
        // The agent's line in WordPress's robots.txt, as its webmaster adds it (WordPress writes
        // robots.txt itself: a filter): crawlers read robots.rdf before the site's pages.
        let plugin = self
            .tmp
            .path()
            .join("content/mu-plugins/webcoop-robots.php");
        std::fs::write(
            &plugin,
            "<?php\nadd_filter('robots_txt', function ($output) {\n    return $output . \"Robots-RDF: \" . home_url('/robots.rdf') . \"\\n\";\n});\n",
        )
        .unwrap();
        std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        Killed(
            Command::new(workspace_bin("webcoop-agent"))
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
                    &min,
                    "--revalidate-max",
                    &max,
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

    /// Tells the running agent that `urls` changed (`webcoop-agent notify`, as a deploy hook).
    pub(crate) fn notify(&self, urls: &[&str]) {
        let o = Command::new(workspace_bin("webcoop-agent"))
            .args(["--listen", &format!("127.0.0.1:{}", self.agent_port)])
            .arg("--notify-secret-file")
            .arg(&self.secret_file)
            .arg("notify")
            .args(urls)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    pub(crate) fn agent_said(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("agent.err")).unwrap_or_default()
    }

    pub(crate) fn xmlrpc(&self, method: &str, params: &str) -> String {
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
    pub(crate) fn new_post(&self, title: &str, content: &str) -> String {
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

    pub(crate) fn edit_post(&self, id: &str, content: &str) {
        self.xmlrpc(
            "wp.editPost",
            &format!(
                "{}<param><value><struct><member><name>post_content</name><value><string>{content}</string></value></member></struct></value></param>",
                string_param(id)
            ),
        );
    }

    pub(crate) fn comment(&self, id: &str, text: &str) {
        self.xmlrpc(
            "wp.newComment",
            &format!(
                "{}<param><value><struct><member><name>content</name><value><string>{text}</string></value></member></struct></value></param>",
                string_param(id)
            ),
        );
    }

    /// Publishes a page (not a post); returns its id.
    pub(crate) fn new_page(&self, title: &str, content: &str) -> String {
        let answer = self.xmlrpc(
            "wp.newPost",
            &format!(
                "<param><value><struct>\
                 <member><name>post_type</name><value><string>page</string></value></member>\
                 <member><name>post_title</name><value><string>{title}</string></value></member>\
                 <member><name>post_content</name><value><string>{content}</string></value></member>\
                 <member><name>post_status</name><value><string>publish</string></value></member>\
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

    /// A request to WordPress's REST API as its administrator (HTTP Basic, which
    /// [`REST_AUTH_PLUGIN`] reads); the status and body.
    pub(crate) fn rest(&self, method: &str, path: &str, json: &str) -> (u16, String) {
        use base64::Engine;
        let auth = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
        );
        let r = http_request(
            self.nginx.addr,
            method,
            path,
            &[
                ("Host", &self.host),
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
                ("User-Agent", "Mozilla/5.0 (an editor's browser)"),
            ],
            json.as_bytes(),
        )
        .unwrap();
        (r.status, String::from_utf8_lossy(&r.body).into_owned())
    }

    /// Moves a post to the trash through the REST API.
    pub(crate) fn trash(&self, id: &str) {
        let (status, body) = self.rest("DELETE", &format!("/wp-json/wp/v2/posts/{id}"), "");
        assert_eq!(status, 200, "trash {id}: {body}");
    }

    /// Makes a post private through the REST API.
    pub(crate) fn make_private(&self, id: &str) {
        let (status, body) = self.rest(
            "POST",
            &format!("/wp-json/wp/v2/posts/{id}"),
            r#"{"status":"private"}"#,
        );
        assert_eq!(status, 200, "private {id}: {body}");
    }

    /// Everything the agent serves for the site, each with where it came from: robots.rdf,
    /// the sitemap, the changes feed, the batch of every change, every snapshot's records, and
    /// `delta/` of each of `held` (URL, entity tag a crawler holds) as a unified diff and whole.
    pub(crate) fn agent_serves(&self, held: &[(String, String)]) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for f in ["robots.rdf", "sitemap.xml"] {
            out.push((
                f.to_string(),
                std::fs::read(self.out.join(f)).unwrap_or_default(),
            ));
        }
        let get = |path: &str, headers: &[(&str, &str)]| {
            let mut h = vec![
                ("Host", self.host.as_str()),
                ("Accept-Encoding", "identity"),
            ];
            h.extend_from_slice(headers);
            http_get(self.nginx.addr, path, &h)
                .map(|r| r.body)
                .unwrap_or_default()
        };
        out.push((
            "changes".into(),
            get("/.well-known/webcoop/changes?since=0", &[]),
        ));
        out.push((
            "batch".into(),
            get("/.well-known/webcoop/changes?since=0&bodies=1", &[]),
        ));
        for (url, etag) in held {
            let path = url.strip_prefix(&self.base).unwrap_or(url);
            let delta = format!("/.well-known/webcoop/delta/{path}");
            out.push((
                format!("delta/{path} (unified from {etag})"),
                get(&delta, &[("If-None-Match", etag), ("A-IM", "unified")]),
            ));
            out.push((format!("delta/{path}"), get(&delta, &[])));
        }
        let dir = self.out.join(".well-known/webcoop/snapshot");
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".warc.zst") {
                continue;
            }
            let Ok(file) = std::fs::File::open(entry.path()) else {
                continue;
            };
            let Ok(mut reader) = webcoop_protocol::warc::ZstdWarcReader::new(file, 1 << 30) else {
                continue;
            };
            while let Ok(Some(r)) = reader.next_record() {
                let uri = r.record.field("WARC-Target-URI").unwrap_or("").to_string();
                out.push((format!("snapshot {name}: {uri}"), r.record.block.to_vec()));
            }
        }
        out
    }

    /// Where the agent serves `text`, among [`WordPress::agent_serves`].
    pub(crate) fn carrying(&self, text: &str, held: &[(String, String)]) -> Vec<String> {
        self.agent_serves(held)
            .into_iter()
            .filter(|(_, body)| memchr::memmem::find(body, text.as_bytes()).is_some())
            .map(|(where_, _)| where_)
            .collect()
    }

    pub(crate) fn delete_post(&self, id: &str) {
        self.xmlrpc("wp.deletePost", &string_param(id));
    }

    /// WP-Cron, as a system cron runs it: sends the pings of what was published.
    pub(crate) fn cron(&self) {
        let r = http_get(self.nginx.addr, "/wp-cron.php", &[("Host", &self.host)]).unwrap();
        assert_eq!(r.status, 200);
    }

    /// What nginx serves at `url` now.
    pub(crate) fn served(&self, url: &str) -> Option<Vec<u8>> {
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
    pub(crate) fn listed(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.out.join("sitemap.xml")).unwrap_or_default();
        text.split("<loc>")
            .skip(1)
            .filter_map(|s| s.split("</loc>").next())
            .map(str::to_string)
            .collect()
    }

    /// The change log as the changes endpoint serves it through nginx.
    pub(crate) fn changes(&self) -> String {
        http_get(
            self.nginx.addr,
            "/.well-known/webcoop/changes?since=0",
            &[("Host", &self.host)],
        )
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .unwrap_or_default()
    }

    /// Requests and bytes nginx logged for user agents containing `who`.
    pub(crate) fn requests_by(&self, who: &str) -> (usize, u64) {
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
    pub(crate) fn crawler_differences(&self, out: &Path, gone: &[String]) -> Vec<String> {
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
    pub(crate) fn wait_exact(&self, what: &str, out: &Path, gone: &[String]) {
        // A deadline, not a speed: after a comment the agent checks six pages one at a time,
        // each two or three times, and a loaded CI machine's PHP answered in 0.3-0.9 s; the
        // last of them reached the crawler 33 s after the comment once.
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
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

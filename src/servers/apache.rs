//! Debian's Apache on loopback, its children running as the web user, with the modules a
//! site's `.htaccess` files use (rewrite, alias, mime, access control, PHP, CGI).

use super::web_user::{WEB_USER, is_root, open_to_web_user};
use super::{Terminated, free_port};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The modules loaded, where Debian installs them (those absent are left out).
const MODULES: &[(&str, &str)] = &[
    ("mpm_prefork_module", "mod_mpm_prefork.so"),
    ("authz_core_module", "mod_authz_core.so"),
    ("authz_host_module", "mod_authz_host.so"),
    ("authz_user_module", "mod_authz_user.so"),
    ("authn_core_module", "mod_authn_core.so"),
    ("authn_file_module", "mod_authn_file.so"),
    ("auth_basic_module", "mod_auth_basic.so"),
    ("access_compat_module", "mod_access_compat.so"),
    ("mime_module", "mod_mime.so"),
    ("dir_module", "mod_dir.so"),
    ("rewrite_module", "mod_rewrite.so"),
    ("alias_module", "mod_alias.so"),
    ("headers_module", "mod_headers.so"),
    ("setenvif_module", "mod_setenvif.so"),
    ("env_module", "mod_env.so"),
    ("cgi_module", "mod_cgi.so"),
];

const MODULE_DIR: &str = "/usr/lib/apache2/modules";

/// A running Apache; stopped when dropped.
pub struct Apache {
    /// Where it listens.
    pub addr: SocketAddr,
    _process: Terminated,
    dir: tempfile::TempDir,
}

impl Apache {
    /// Starts `bin` (Debian's `apache2`) serving `docroot`, where `.htaccess` files may
    /// override everything, with `extra` lines in the server's configuration; `None` when the
    /// tests do not run as root, who alone can start it as the web user.
    pub fn start(bin: &Path, docroot: &Path, extra: &str) -> Option<Apache> {
        let root = docroot.display().to_string();
        let body = |port: u16| {
            format!(
                "Listen 127.0.0.1:{port}\nServerName localhost\nDocumentRoot {root}\n<Directory {root}>\n  \
                 Options FollowSymLinks\n  AllowOverride All\n  Require all granted\n</Directory>\n\
                 <FilesMatch \"^\\.ht\">\n  Require all denied\n</FilesMatch>\n{extra}\n"
            )
        };
        let ready = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        Self::start_custom(bin, docroot, &body, &ready)
    }

    /// Starts Apache with `body(port)` after the server-wide settings and modules (its
    /// `Listen`s, `DocumentRoot`, sections and virtual hosts) in `apache2.conf` under a
    /// directory of its own, answering at `ready(port)` once up; `None` unless root.
    pub fn start_custom(
        bin: &Path,
        docroot: &Path,
        body: &dyn Fn(u16) -> String,
        ready: &dyn Fn(u16) -> SocketAddr,
    ) -> Option<Apache> {
        if !is_root() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
        open_to_web_user(dir.path(), true);
        open_to_web_user(docroot, false);
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            let d = dir.path().display();
            let mut modules: String = MODULES
                .iter()
                .filter(|(_, so)| Path::new(MODULE_DIR).join(so).exists())
                .map(|(name, so)| format!("LoadModule {name} {MODULE_DIR}/{so}\n"))
                .collect();
            // mod_php is named by its version (libphp8.2.so).
            if let Some(php) = std::fs::read_dir(MODULE_DIR).ok().and_then(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .find(|n| n.starts_with("libphp") && n.ends_with(".so"))
            }) {
                modules.push_str(&format!("LoadModule php_module {MODULE_DIR}/{php}\n"));
            }
            let conf = format!(
                "ServerRoot {d}\nPidFile {d}/apache.pid\nDefaultRuntimeDir {d}\nMutex file:{d} default\n\
                 User {WEB_USER}\nGroup {WEB_USER}\nErrorLog {d}/error.log\nLogLevel warn\n{modules}\
                 TypesConfig /etc/mime.types\nDirectoryIndex index.html\nAccessFileName .htaccess\n\
                 StartServers 2\nMinSpareServers 1\nMaxSpareServers 4\n{}",
                body(port)
            );
            let conf_path = dir.path().join("apache2.conf");
            std::fs::write(&conf_path, conf).unwrap_or_else(|e| panic!("apache.conf: {e}"));
            let child = Command::new(bin)
                .arg("-d")
                .arg(dir.path())
                .arg("-f")
                .arg(&conf_path)
                .arg("-DFOREGROUND")
                // In the foreground Apache signals its whole process group when it stops:
                // a group of its own, not the test's.
                .process_group(0)
                .env_clear()
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
            let mut process = Terminated(child);
            let addr = ready(port);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(status)) = process.0.try_wait() {
                    last = format!(
                        "apache2 exited with {status}: {}",
                        std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
                    );
                    break;
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                    return Some(Apache {
                        addr,
                        _process: process,
                        dir,
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("Apache did not start: {last}");
    }

    /// The base URL it serves.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Its own directory (`apache2.conf`, logs, the PID file).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

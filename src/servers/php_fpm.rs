//! Debian's PHP-FPM on loopback, a pool running as the web user: what a site hands `.php`
//! (and, misconfigured, `.html`) files to.

use super::Terminated;
use super::web_user::{WEB_USER, is_root};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running PHP-FPM; stopped when dropped.
pub struct PhpFpm {
    /// Where its pool listens (FastCGI).
    pub addr: SocketAddr,
    _process: Terminated,
    _dir: tempfile::TempDir,
}

impl PhpFpm {
    /// Starts `bin` (Debian's `php-fpm8.2`) with a pool on a free loopback port; `None` when
    /// the tests do not run as root, who alone can start a pool as the web user.
    pub fn start(bin: &Path) -> Option<PhpFpm> {
        if !is_root() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
        let port = super::free_port();
        let d = dir.path().display();
        let conf = format!(
            "[global]\npid = {d}/php-fpm.pid\nerror_log = {d}/error.log\ndaemonize = no\n\n\
             [site]\nuser = {WEB_USER}\ngroup = {WEB_USER}\nlisten = 127.0.0.1:{port}\n\
             pm = static\npm.max_children = 2\nclear_env = yes\n\
             php_admin_value[error_log] = {d}/php.log\nphp_admin_flag[log_errors] = on\n\
             security.limit_extensions = .php .html\n"
        );
        let conf_path = dir.path().join("php-fpm.conf");
        std::fs::write(&conf_path, conf).unwrap_or_else(|e| panic!("php-fpm.conf: {e}"));
        let child = Command::new(bin)
            .arg("--nodaemonize")
            .process_group(0)
            .arg("--fpm-config")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let process = Terminated(child);
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_err() {
            assert!(
                Instant::now() < deadline,
                "PHP-FPM did not start: {}",
                std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(PhpFpm {
            addr,
            _process: process,
            _dir: dir,
        })
    }
}

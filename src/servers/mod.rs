//! Real servers the tests start on loopback: Debian's nginx, Apache and PHP-FPM, with a
//! minimal HTTP client to fetch from them.

mod apache;
mod php_fpm;
mod web_user;

pub use apache::Apache;
pub use php_fpm::PhpFpm;
pub use web_user::{WEB_USER, is_root, open_to_web_user};

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running nginx; stopped when dropped (its master asked to stop its workers too).
pub struct Nginx {
    process: Terminated,
    /// Where it listens.
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
    /// How its configuration was made, to make it again on a reload.
    docroot: PathBuf,
    upstream: Option<SocketAddr>,
    as_web_user: bool,
}

/// nginx's main configuration around a site's server block, everything under `dir`: a master
/// process (whose workers run as the web user when root starts it) when `master`.
fn main_conf(dir: &Path, server: &str, master: bool) -> String {
    let d = dir.display();
    let process = match (master, is_root()) {
        (true, true) => format!("user {WEB_USER};\nmaster_process on;\n"),
        (true, false) => "master_process on;\n".to_string(),
        (false, _) => "master_process off;\n".to_string(),
    };
    format!(
        "daemon off;\n{process}worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
         events {{ worker_connections 256; }}\nhttp {{\n  access_log off;\n  default_type application/octet-stream;\n  \
         client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  \
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n{server}\n}}\n"
    )
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

impl Nginx {
    /// Starts nginx with the `server` block of `site_conf` (the shipped example), its `root`
    /// set to `docroot` and its `listen` to a free loopback port. nginx cannot listen on port 0
    /// and report it, so a free port is picked and the start retried if another process takes
    /// it first.
    pub fn start(binary: &Path, site_conf: &str, docroot: &Path) -> Nginx {
        Self::start_proxying(binary, site_conf, docroot, None)
    }

    /// As [`Nginx::start`], with the example's `proxy_pass` pointed at `upstream` (the agent's
    /// service).
    pub fn start_proxying(
        binary: &Path,
        site_conf: &str,
        docroot: &Path,
        upstream: Option<SocketAddr>,
    ) -> Nginx {
        Self::start_inner(binary, site_conf, docroot, upstream, false)
    }

    /// As [`Nginx::start_proxying`], with its workers running as the web user (`www-data`)
    /// as Debian runs them, so that what that user cannot read is refused as in production.
    /// `None` when the tests do not run as root, who alone can start it so.
    pub fn start_as_web_user(
        binary: &Path,
        site_conf: &str,
        docroot: &Path,
        upstream: Option<SocketAddr>,
    ) -> Option<Nginx> {
        if !is_root() {
            return None;
        }
        Some(Self::start_inner(
            binary, site_conf, docroot, upstream, true,
        ))
    }

    /// nginx with a master process (its workers as the web user when the tests run as root)
    /// whose `http` block holds what `http` makes for a free port, answering at `ready(port)`
    /// once up: a test's own server blocks, listens, maps and includes.
    pub fn start_custom(
        binary: &Path,
        docroot: &Path,
        http: &dyn Fn(u16) -> String,
        ready: &dyn Fn(u16) -> SocketAddr,
    ) -> Nginx {
        let conf = Custom { http, ready };
        Self::launch(binary, docroot, None, true, &conf)
    }

    /// Makes `http` the content of the `http` block of an nginx started with
    /// [`Nginx::start_custom`] and reloads it.
    pub fn reload_custom(&self, http: &str) {
        self.reload_main(main_conf(self.dir.path(), http, true));
    }

    /// Its own directory (its configuration, logs and temporary files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn start_inner(
        binary: &Path,
        site_conf: &str,
        docroot: &Path,
        upstream: Option<SocketAddr>,
        as_web_user: bool,
    ) -> Nginx {
        let make = |port: u16| rewrite_server_block(site_conf, docroot, port, upstream);
        let ready = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        let conf = Custom {
            http: &make,
            ready: &ready,
        };
        Self::launch(binary, docroot, upstream, as_web_user, &conf)
    }

    fn launch(
        binary: &Path,
        docroot: &Path,
        upstream: Option<SocketAddr>,
        as_web_user: bool,
        custom: &Custom,
    ) -> Nginx {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
        if as_web_user {
            // Its workers write request and proxy buffers there.
            open_to_web_user(dir.path(), true);
        }
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            let server = (custom.http)(port);
            let conf = main_conf(dir.path(), &server, as_web_user);
            let conf_path = dir.path().join("nginx.conf");
            std::fs::write(&conf_path, conf).unwrap_or_else(|e| panic!("writing nginx.conf: {e}"));
            let mut child = Command::new(binary)
                .arg("-e")
                .arg(dir.path().join("error.log"))
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(&conf_path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
            let addr = (custom.ready)(port);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(status)) = child.try_wait() {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = e.read_to_string(&mut err);
                    }
                    last_error = format!("nginx exited with {status}: {err}");
                    break;
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
                    return Nginx {
                        process: Terminated(child),
                        addr,
                        dir,
                        docroot: docroot.to_path_buf(),
                        upstream,
                        as_web_user,
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("nginx did not start: {last_error}");
    }

    /// Makes `site_conf` nginx's server block and reloads it (SIGHUP), as an administrator
    /// does after an edit; returns once the new workers answer. Only for an nginx with a
    /// master process ([`Nginx::start_as_web_user`]).
    pub fn reload(&self, site_conf: &str) {
        let server =
            rewrite_server_block(site_conf, &self.docroot, self.addr.port(), self.upstream);
        self.reload_main(main_conf(self.dir.path(), &server, self.as_web_user));
    }

    fn reload_main(&self, conf: String) {
        std::fs::write(self.dir.path().join("nginx.conf"), conf)
            .unwrap_or_else(|e| panic!("writing nginx.conf: {e}"));
        let workers = || -> Vec<String> {
            let pid = self.process.0.id();
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        let before = workers();
        if let Ok(pid) = i32::try_from(self.process.0.id()) {
            // SAFETY: kill only sends a signal to our own child.
            unsafe {
                libc::kill(pid, libc::SIGHUP);
            }
        }
        // The old workers leave once the new ones are up.
        let deadline = Instant::now() + Duration::from_secs(10);
        while workers().iter().any(|w| before.contains(w)) {
            assert!(Instant::now() < deadline, "nginx did not reload");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The base URL it serves.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// What a started nginx's `http` block holds, and where it answers once up.
struct Custom<'a> {
    http: &'a dyn Fn(u16) -> String,
    ready: &'a dyn Fn(u16) -> SocketAddr,
}

/// The example's server block with our root and port.
fn rewrite_server_block(
    conf: &str,
    docroot: &Path,
    port: u16,
    upstream: Option<SocketAddr>,
) -> String {
    conf.lines()
        .map(|line| {
            let t = line.trim_start();
            if t.starts_with("listen ") {
                format!("    listen 127.0.0.1:{port};")
            } else if t.starts_with("root ") {
                format!("    root {};", docroot.display())
            } else if let (true, Some(up)) = (t.starts_with("proxy_pass "), upstream) {
                format!("        proxy_pass http://{up};")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A response as the tests look at it.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// GET over HTTP/1.0 (no chunking, the server closes), with extra request headers.
pub fn http_get(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<Response> {
    http_request(addr, "GET", path, headers, b"")
}

/// Any method over HTTP/1.0, with extra request headers and a body (sent with its length).
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    exchange(stream, method, path, headers, body)
}

/// As [`http_request`], from the local address `source` (any of 127/8 on loopback): each
/// address a client of its own in the server's access log.
pub fn http_request_from(
    source: std::net::IpAddr,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.bind(&SocketAddr::new(source, 0).into())?;
    socket.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    exchange(socket.into(), method, path, headers, body)
}

fn exchange(
    mut stream: TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut request = format!("{method} {path} HTTP/1.0\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str("Host: localhost\r\n");
    }
    for (n, v) in headers {
        request.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() || method != "GET" {
        request.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes())?;
    // A server may answer before it has read a body it refuses (413) and close; as curl does,
    // a body cut short by the peer is no error until there is no answer to read either.
    let sent = stream.write_all(body);
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    let cut_short = |e: &std::io::Error| {
        matches!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
        )
    };
    match (sent, read) {
        (Err(e), _) if !cut_short(&e) || raw.is_empty() => return Err(e),
        (_, Err(e)) if !cut_short(&e) || raw.is_empty() => return Err(e),
        _ => {}
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line in {head:?}")))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Response {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    })
}

/// The shipped example nginx server block.
pub fn example_nginx_conf() -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/nginx/site.conf");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A child process (a server, the agent, the crawler) killed and reaped when dropped, so a
/// failing test or bench leaves nothing running.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server's master process, asked to stop (SIGTERM) when dropped so that it stops its
/// workers too (a master killed outright leaves them serving), then killed if it lingers.
pub struct Terminated(pub std::process::Child);

impl Drop for Terminated {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill only sends a signal to our own child.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

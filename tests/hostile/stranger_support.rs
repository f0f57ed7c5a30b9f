//! What the families of `stranger_nginx` and `stranger_apache` share: a docroot planted with
//! secrets (each holding `hunter2`) beside public files, the agent run once as root or as a
//! user who cannot see the web server's process or read its configuration, and everything it
//! published (listings, feed, ResourceSync lists, the snapshot's records) read back.

use super::support::agent_bin;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_protocol::warc::ZstdWarcReader;

/// What every secret file holds, and no public one.
pub(crate) const SECRET: &str = "hunter2";

/// Who runs the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    /// root, as the tests run: it sees every process and reads every file.
    Root,
    /// `nobody`: it cannot see the server's sockets nor read its configuration (in a
    /// directory of root's), as an agent run as its own user may not.
    Nobody,
}

const NOBODY: u32 = 65534;

/// One run of the agent with `--once`.
pub(crate) struct Run {
    /// Whether it exited 0.
    pub(crate) ok: bool,
    /// What it logged.
    pub(crate) log: String,
    /// The docroot paths robots.rdf lists.
    pub(crate) listed: Vec<String>,
    /// Everything it published, as text (the snapshot's records decoded).
    pub(crate) text: String,
}

/// Writes `files` under `www` (made reachable by the web user).
pub(crate) fn plant(www: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = www.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    webcoop::servers::open_to_web_user(www, false);
}

fn chown(p: &Path, uid: u32) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: chown reads the NUL-terminated path only.
    unsafe {
        libc::chown(c.as_ptr(), uid, uid);
    }
}

/// Runs the agent once over `www` for `base`, as `who`, with `args`.
pub(crate) fn once(www: &Path, base: &str, args: &[&str], who: Who) -> Run {
    let tmp = tempfile::tempdir().unwrap();
    let (state, out) = (tmp.path().join("state"), tmp.path().join("out"));
    std::fs::create_dir_all(&state).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let mut cmd = Command::new(agent_bin());
    cmd.arg("--docroot")
        .arg(www)
        .arg("--state")
        .arg(&state)
        .arg("--out")
        .arg(&out)
        .args(["--base-url", base, "--once"])
        .args(args);
    if who == Who::Nobody {
        webcoop::servers::open_to_web_user(tmp.path(), false);
        for p in [tmp.path(), state.as_path(), out.as_path()] {
            chown(p, NOBODY);
        }
        cmd.uid(NOBODY).gid(NOBODY);
    }
    let o = cmd.output().unwrap();
    let log = String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
    let listed = match std::fs::read(out.join("robots.rdf")) {
        Ok(bytes) => {
            let doc = robots_rdf::parse(&bytes, &RdfLimits::default()).unwrap();
            let mut l: Vec<String> = doc
                .items
                .iter()
                .map(|i| i.url.as_str().trim_start_matches(base).to_string())
                .filter(|p| p != "robots.rdf")
                .collect();
            l.sort();
            l
        }
        Err(_) => Vec::new(),
    };
    Run {
        ok: o.status.success(),
        log,
        listed,
        text: published_text(&out),
    }
}

/// Every document under `out`, as text, with the snapshot's records decoded.
pub(crate) fn published_text(out: &Path) -> String {
    let mut text = String::new();
    for entry in walkdir::WalkDir::new(out).into_iter().flatten() {
        let p = entry.path();
        if !entry.file_type().is_file() {
            continue;
        }
        let bytes = std::fs::read(p).unwrap_or_default();
        if p.extension().is_some_and(|e| e == "zst") {
            let Ok(reader) = ZstdWarcReader::new(&bytes[..], 64 << 20) else {
                continue;
            };
            for r in reader.flatten() {
                text.push_str(&String::from_utf8_lossy(&r.record.block));
            }
        } else {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    text
}

/// Fails unless none of `secrets` is listed, no secret's content is in anything published,
/// and each of `public` is listed.
pub(crate) fn assert_safe(run: &Run, secrets: &[&str], public: &[&str], leg: &str) {
    assert!(run.ok, "{leg}: the agent failed:\n{}", run.log);
    for s in secrets {
        assert!(
            !run.listed.iter().any(|l| l == s),
            "{leg}: {s} is listed: {:?}\n{}",
            run.listed,
            run.log
        );
    }
    assert!(
        !run.text.contains(SECRET),
        "{leg}: a secret's content was published\n{}",
        run.log
    );
    for p in public {
        assert!(
            run.listed.iter().any(|l| l == p),
            "{leg}: {p} is not listed: {:?}\n{}",
            run.listed,
            run.log
        );
    }
}

/// Fails unless the agent, unable to read the configuration, refused to start and named the
/// way out.
pub(crate) fn assert_refused_to_start(run: &Run, leg: &str) {
    assert!(
        !run.ok,
        "{leg}: started without reading the configuration:\n{}",
        run.log
    );
    assert!(
        run.log.contains("--server-config none") && run.log.contains("cannot be read"),
        "{leg}:\n{}",
        run.log
    );
}

/// Fails unless the agent said that rules depending on who asks are not looked for.
pub(crate) fn assert_warned_none(run: &Run, leg: &str) {
    assert!(
        run.log
            .contains("rules that depend on who asks are not looked for"),
        "{leg}:\n{}",
        run.log
    );
}

/// A docroot in a temporary directory, reachable by the web user.
pub(crate) fn docroot(tmp: &Path) -> PathBuf {
    let www = tmp.join("www");
    std::fs::create_dir_all(&www).unwrap();
    let www = www.canonicalize().unwrap();
    webcoop::servers::open_to_web_user(&www, false);
    www
}

/// A GET of `path` at `addr` sent from `source` (any address of 127.0.0.0/8 is this
/// machine's): what a client at that address is answered. The status, and the body.
pub(crate) fn get_from(
    source: &str,
    addr: std::net::SocketAddr,
    path: &str,
    host: &str,
) -> (u16, String) {
    use std::io::{Read, Write};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = rt.block_on(async {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()
        } else {
            tokio::net::TcpSocket::new_v6()
        }
        .unwrap();
        socket
            .bind(std::net::SocketAddr::new(source.parse().unwrap(), 0))
            .unwrap();
        socket.connect(addr).await.unwrap()
    });
    let mut s = stream.into_std().unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// Makes a server's main configuration file readable by root alone (the server read it
/// already): an agent run as another user cannot read it, nor ask the server to.
pub(crate) fn only_root_reads(file: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The agent running (watching) over a docroot, its documents written to a directory of the
/// test's.
pub(crate) struct Watching {
    _agent: webcoop::servers::Killed,
    out: PathBuf,
    log: PathBuf,
    base: String,
    _tmp: tempfile::TempDir,
}

impl Watching {
    /// Starts the agent over `www` for `base`, with `args`.
    pub(crate) fn start(www: &Path, base: &str, args: &[&str]) -> Watching {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        let log = tmp.path().join("agent.log");
        let agent = webcoop::servers::Killed(
            Command::new(agent_bin())
                .arg("--docroot")
                .arg(www)
                .arg("--state")
                .arg(tmp.path().join("state"))
                .arg("--out")
                .arg(&out)
                .args(["--base-url", base, "--debounce-ms", "50"])
                .args(args)
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap(),
        );
        Watching {
            _agent: agent,
            out,
            log,
            base: base.to_string(),
            _tmp: tmp,
        }
    }

    /// The docroot paths robots.rdf lists now.
    pub(crate) fn listed(&self) -> Vec<String> {
        let Ok(bytes) = std::fs::read(self.out.join("robots.rdf")) else {
            return Vec::new();
        };
        let Ok(doc) = robots_rdf::parse(&bytes, &RdfLimits::default()) else {
            return Vec::new();
        };
        doc.items
            .iter()
            .map(|i| i.url.as_str().trim_start_matches(&self.base).to_string())
            .collect()
    }

    /// What it logged so far.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Everything it published, as text.
    pub(crate) fn text(&self) -> String {
        published_text(&self.out)
    }
}

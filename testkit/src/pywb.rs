//! pywb, the Webrecorder replay system, from the reference venv: a collection made with
//! `wb-manager` from WARC files, served by `wayback` on loopback, stopped when dropped.

use crate::run_ok;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The collection's name in the replay paths.
pub const COLLECTION: &str = "crawl";

/// A running `wayback` over one collection.
pub struct Wayback {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

/// A command of the venv's `bin/` beside `python`.
pub fn venv_tool(python: &Path, name: &str) -> PathBuf {
    python.parent().unwrap_or(python).join(name)
}

impl Wayback {
    /// Adds `warcs` to a new collection and serves it.
    pub fn start(python: &Path, warcs: &[PathBuf]) -> Wayback {
        let dir = tempfile::tempdir().unwrap();
        run_ok(
            Command::new(venv_tool(python, "wb-manager"))
                .args(["init", COLLECTION])
                .current_dir(dir.path()),
        );
        run_ok(
            Command::new(venv_tool(python, "wb-manager"))
                .args(["add", COLLECTION])
                .args(warcs)
                .current_dir(dir.path()),
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(venv_tool(python, "wayback"))
            .args(["-p", &port.to_string(), "-b", "127.0.0.1"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let wayback = Wayback {
            child,
            addr: ([127, 0, 0, 1], port).into(),
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(wayback.addr).is_err() {
            assert!(Instant::now() < deadline, "wayback did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        wayback
    }

    /// The path replaying `url` as captured at `timestamp` (14 digits), in its original form.
    pub fn original(&self, timestamp: &str, url: &str) -> String {
        format!("/{COLLECTION}/{timestamp}id_/{url}")
    }
}

impl Drop for Wayback {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

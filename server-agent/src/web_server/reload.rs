//! Noticing that the server's configuration may have changed: a file it read changed, a
//! directory an `include` pattern lists gained or lost a file, its PID file names another
//! process (a restart), or nginx's master has new workers (a reload keeps the master and
//! replaces the workers). Apache's children come and go on their own, so only its PID file
//! and files are watched.

use crate::server_config::ServerKind;
use crate::watch::FileFingerprints;
use std::path::PathBuf;

/// What is watched.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watch {
    /// Configuration files read, directories listed by include patterns, the PID file.
    pub(crate) paths: Vec<PathBuf>,
    /// The PID file, whose content names the running master.
    pub(crate) pid_file: Option<PathBuf>,
    /// nginx's master, whose workers a reload replaces.
    pub(crate) nginx_master: Option<u32>,
}

/// The state of what is watched, to compare with later.
pub(crate) struct Reload {
    watch: Watch,
    files: FileFingerprints,
    pid: Option<String>,
    workers: Option<Vec<String>>,
}

fn workers(master: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{master}/task/{master}/children")).ok()?;
    let mut w: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    w.sort();
    Some(w)
}

fn pid_in(file: &Option<PathBuf>) -> Option<String> {
    file.as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .map(|t| t.trim().to_string())
}

impl Reload {
    /// Starts watching.
    pub(crate) fn of(watch: Watch) -> Reload {
        Reload {
            files: FileFingerprints::of(&watch.paths),
            pid: pid_in(&watch.pid_file),
            workers: watch.nginx_master.and_then(workers),
            watch,
        }
    }

    /// What changed since the last look, if anything.
    pub(crate) fn changed(&mut self) -> Option<&'static str> {
        if self.files.changed() {
            return Some("its configuration files changed");
        }
        let pid = pid_in(&self.watch.pid_file);
        if pid != self.pid {
            self.pid = pid;
            return Some("it was restarted (its PID file names another process)");
        }
        if let Some(m) = self.watch.nginx_master {
            let now = workers(m);
            if now != self.workers {
                self.workers = now;
                return Some("it was reloaded (its master has new workers)");
            }
        }
        None
    }
}

/// Where a server keeps its PID unless its configuration says otherwise.
pub(crate) fn default_pid_file(kind: ServerKind) -> PathBuf {
    PathBuf::from(match kind {
        ServerKind::Nginx => "/run/nginx.pid",
        ServerKind::Apache => "/var/run/apache2/apache2.pid",
    })
}

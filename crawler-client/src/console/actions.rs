//! The operator's actions: checked, appended to `console-actions.jsonl` (synced) before the
//! loop is told, and folded again at the next start. Every action sets a state (paused,
//! blocked, a delay) or adds URLs the seen-set ignores the second time, so applying one twice
//! does no harm: a `kill -9` between the log and the loop loses nothing.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use url::Url;

/// The log's file name in the crawl directory.
pub(crate) const FILE: &str = "console-actions.jsonl";

/// Most seeds one action adds.
pub(crate) const MAX_SEEDS: usize = 1000;

/// Longest URL or origin accepted.
const MAX_URL_LEN: usize = 2048;

/// Longest delay an operator may set, seconds (a day, as for robots.txt).
pub(crate) const MAX_DELAY_SECS: f64 = 86_400.0;

/// One thing an operator did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum Action {
    /// No new request starts; those under way finish.
    Pause,
    /// Requests start again.
    Resume,
    /// URLs queued as seeds (their hosts join the scope).
    AddSeeds {
        /// The URLs.
        urls: Vec<String>,
    },
    /// Nothing of the host is fetched; its URLs stay queued.
    Block {
        /// `scheme://host[:port]`.
        host: String,
    },
    /// The host is crawled again.
    Unblock {
        /// `scheme://host[:port]`.
        host: String,
    },
    /// The host's delay between requests, or `null` to give it back to the policy.
    SetDelay {
        /// `scheme://host[:port]`.
        host: String,
        /// Seconds.
        seconds: Option<f64>,
    },
}

/// An action as logged: when, from where, what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Logged {
    /// ms since the epoch.
    pub(crate) at: i64,
    /// The address it came from (`offline` when the crawl was not running).
    pub(crate) from: String,
    /// What.
    #[serde(flatten)]
    pub(crate) action: Action,
}

/// An origin as the frontier names hosts, from whatever URL or origin an operator typed.
pub(crate) fn origin_of(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.len() > MAX_URL_LEN {
        return Err(format!("host is longer than {MAX_URL_LEN} characters"));
    }
    let url = Url::parse(text).map_err(|e| format!("host {text:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("host {text:?} is not an http(s) origin"));
    }
    Ok(crate::analyze::url_norm::origin_key(&url))
}

impl Action {
    /// The action with its hosts as origins and its URLs parsed, or what is wrong with it.
    pub(crate) fn checked(self) -> Result<Action, String> {
        Ok(match self {
            Action::Pause | Action::Resume => self,
            Action::AddSeeds { urls } => {
                if urls.is_empty() || urls.len() > MAX_SEEDS {
                    return Err(format!("give 1 to {MAX_SEEDS} seed URLs"));
                }
                let mut out = Vec::with_capacity(urls.len());
                for u in urls {
                    let u = u.trim();
                    if u.len() > MAX_URL_LEN {
                        return Err(format!("a seed is longer than {MAX_URL_LEN} characters"));
                    }
                    let url = Url::parse(u).map_err(|e| format!("seed {u:?}: {e}"))?;
                    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                        return Err(format!("seed {u:?} is not an http(s) URL"));
                    }
                    out.push(url.to_string());
                }
                Action::AddSeeds { urls: out }
            }
            Action::Block { host } => Action::Block {
                host: origin_of(&host)?,
            },
            Action::Unblock { host } => Action::Unblock {
                host: origin_of(&host)?,
            },
            Action::SetDelay { host, seconds } => {
                if let Some(s) = seconds
                    && !(s.is_finite() && (0.0..=MAX_DELAY_SECS).contains(&s))
                {
                    return Err(format!(
                        "delay must be 0 to {MAX_DELAY_SECS} seconds (or null for the policy's)"
                    ));
                }
                Action::SetDelay {
                    host: origin_of(&host)?,
                    seconds,
                }
            }
        })
    }
}

/// What the actions so far add up to.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Controls {
    /// Paused.
    pub(crate) paused: bool,
    /// Blocked origins.
    pub(crate) blocked: BTreeSet<String>,
    /// Delays set, seconds by origin.
    pub(crate) delays: BTreeMap<String, f64>,
    /// Seeds added.
    pub(crate) seeds: Vec<String>,
}

impl Controls {
    /// Adds one action.
    pub(crate) fn apply(&mut self, a: &Action) {
        match a {
            Action::Pause => self.paused = true,
            Action::Resume => self.paused = false,
            Action::AddSeeds { urls } => {
                for u in urls {
                    if !self.seeds.contains(u) {
                        self.seeds.push(u.clone());
                    }
                }
            }
            Action::Block { host } => {
                self.blocked.insert(host.clone());
            }
            Action::Unblock { host } => {
                self.blocked.remove(host);
            }
            Action::SetDelay { host, seconds } => match seconds {
                Some(s) => {
                    self.delays.insert(host.clone(), *s);
                }
                None => {
                    self.delays.remove(host);
                }
            },
        }
    }
}

/// The log of a crawl directory.
pub(crate) struct ActionLog {
    path: PathBuf,
}

impl ActionLog {
    /// The log in `dir`.
    pub(crate) fn new(dir: &Path) -> ActionLog {
        ActionLog {
            path: dir.join(FILE),
        }
    }

    /// Appends an action and syncs it to disk.
    pub(crate) fn append(&self, logged: &Logged) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(logged).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        f.write_all(&line)?;
        f.sync_data()
    }

    /// Every action logged, oldest first; a line that does not read (the tail of a write cut
    /// short by a crash, an edit by hand) is skipped and named.
    pub(crate) fn read(&self) -> std::io::Result<(Vec<Logged>, Vec<String>)> {
        let text = match std::fs::read(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        let mut problems = Vec::new();
        for (i, line) in text.split(|b| *b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = serde_json::from_slice::<Logged>(line)
                .map_err(|e| e.to_string())
                .and_then(|l| {
                    let action = l.action.checked()?;
                    Ok(Logged { action, ..l })
                });
            match parsed {
                Ok(l) => out.push(l),
                Err(e) => problems.push(format!("{} line {}: {e}", self.path.display(), i + 1)),
            }
        }
        Ok((out, problems))
    }

    /// What the logged actions add up to.
    pub(crate) fn controls(&self) -> std::io::Result<(Controls, Vec<String>)> {
        let (actions, problems) = self.read()?;
        let mut c = Controls::default();
        for l in &actions {
            c.apply(&l.action);
        }
        Ok((c, problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_are_checked_and_hosts_become_origins() {
        let a = Action::Block {
            host: " http://Example.COM:80/some/page ".into(),
        };
        assert_eq!(
            a.checked(),
            Ok(Action::Block {
                host: "http://example.com".into()
            })
        );
        for bad in [
            Action::Block {
                host: "ftp://x".into(),
            },
            Action::Block { host: "".into() },
            Action::SetDelay {
                host: "http://a".into(),
                seconds: Some(f64::NAN),
            },
            Action::SetDelay {
                host: "http://a".into(),
                seconds: Some(-1.0),
            },
            Action::SetDelay {
                host: "http://a".into(),
                seconds: Some(1e9),
            },
            Action::AddSeeds { urls: vec![] },
            Action::AddSeeds {
                urls: vec!["javascript:alert(1)".into()],
            },
            Action::AddSeeds {
                urls: vec![format!("http://a/{}", "x".repeat(3000))],
            },
        ] {
            assert!(bad.clone().checked().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_log_survives_a_torn_last_line_and_folds_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let log = ActionLog::new(dir.path());
        let at = |action| Logged {
            at: 1,
            from: "127.0.0.1".into(),
            action,
        };
        log.append(&at(Action::Pause)).unwrap();
        log.append(&at(Action::Block {
            host: "http://a.test".into(),
        }))
        .unwrap();
        log.append(&at(Action::SetDelay {
            host: "http://b.test".into(),
            seconds: Some(2.5),
        }))
        .unwrap();
        log.append(&at(Action::Resume)).unwrap();
        log.append(&at(Action::AddSeeds {
            urls: vec!["http://c.test/".into(), "http://c.test/".into()],
        }))
        .unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap();
        f.write_all(b"{\"at\":2,\"from\":\"x\",\"action\":\"bl")
            .unwrap();
        let (c, problems) = log.controls().unwrap();
        assert!(!c.paused);
        assert_eq!(c.blocked.iter().collect::<Vec<_>>(), ["http://a.test"]);
        assert_eq!(c.delays.get("http://b.test"), Some(&2.5));
        assert_eq!(c.seeds, ["http://c.test/"]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("line 6"), "{problems:?}");
    }
}

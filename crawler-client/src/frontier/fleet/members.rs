//! Who works on a crawl: the settings stored with it, and each process's heartbeat (what it
//! holds and how fast it goes), which `status` shows and by which a process knows whether work
//! may still come from the others.
//!
//! Keys, per crawl `C`: `{C:crawl}:settings` (the shared settings, JSON, written once by the
//! process that starts the crawl) and `{C:crawl}:members` (hash: process name -> heartbeat
//! JSON).

use super::redis_link::RedisLink;
use super::{FleetError, connect, tag};
use serde::{Deserialize, Serialize};

/// What a process says of itself, about once a second.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Heartbeat {
    /// When it said it, by the Redis server's clock (ms since the epoch).
    #[serde(default)]
    pub(crate) at: i64,
    /// Machine and process id.
    pub(crate) machine: String,
    /// Process id.
    pub(crate) pid: u32,
    /// `running`, `stopping` or `stopped`.
    pub(crate) state: String,
    /// Pages fetched by this run of the process.
    pub(crate) fetched: u64,
    /// Pages per second over the last interval.
    pub(crate) rate: f64,
    /// Hosts it holds the lease of.
    pub(crate) hosts: usize,
    /// Requests under way.
    pub(crate) in_flight: usize,
    /// URLs it holds taken (in its buffers and under way).
    pub(crate) taken: usize,
    /// Its directory (state, WARC files).
    pub(crate) dir: String,
    /// WARC bytes it has written.
    pub(crate) warc_bytes: u64,
}

/// A heartbeat older than this is a dead process's (it renews far more often).
pub(crate) const STALE_MS: i64 = 15_000;

/// The members of one crawl.
pub(crate) struct Members {
    link: RedisLink,
    crawl: String,
}

impl Members {
    /// Connects to the frontier at `url` for crawl `crawl`.
    pub(crate) fn connect(url: &str, crawl: &str) -> Result<Members, FleetError> {
        Ok(Members {
            link: connect(url, crawl)?,
            crawl: crawl.to_string(),
        })
    }

    /// The connection, to wait out a pause with Ctrl-C.
    pub(crate) fn link(&mut self) -> &mut RedisLink {
        &mut self.link
    }

    fn key(&self, name: &str) -> String {
        format!("{}:{name}", tag(&self.crawl, "crawl"))
    }

    /// The crawl's shared settings: `given` if this process starts the crawl, else those
    /// stored by the one that did. Returns them and whether the crawl is new.
    pub(crate) fn settings(
        &mut self,
        given: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<(serde_json::Map<String, serde_json::Value>, bool), FleetError> {
        let key = self.key("settings");
        let text = serde_json::Value::Object(given.clone()).to_string();
        let created: bool = self.link.run(|con| {
            redis::cmd("SET")
                .arg(&key)
                .arg(&text)
                .arg("NX")
                .query::<Option<String>>(con)
                .map(|r| r.is_some())
        })?;
        let stored: String = self
            .link
            .run(|con| redis::cmd("GET").arg(&key).query(con))?;
        let map = match serde_json::from_str(&stored) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => {
                return Err(FleetError::Address {
                    url: self.link.shown().to_string(),
                    why: format!("{key} does not hold a crawl's settings"),
                });
            }
        };
        Ok((map, created))
    }

    /// The crawl's seeds: those given here are added to the ones every process gave (the
    /// scope of a crawl is its seeds').
    pub(crate) fn seeds(&mut self, given: &[String]) -> Result<Vec<String>, FleetError> {
        let key = self.key("seeds");
        if !given.is_empty() {
            self.link
                .run(|con| redis::cmd("SADD").arg(&key).arg(given).query::<()>(con))?;
        }
        let mut all: Vec<String> = self
            .link
            .run(|con| redis::cmd("SMEMBERS").arg(&key).query(con))?;
        all.sort();
        Ok(all)
    }

    /// Says how this process is, stamped with the server's clock.
    pub(crate) fn beat(&mut self, name: &str, beat: &Heartbeat) -> Result<(), FleetError> {
        let key = self.key("members");
        let now = self.server_ms()?;
        let text = serde_json::to_string(&Heartbeat {
            at: now,
            ..beat.clone()
        })
        .unwrap_or_default();
        self.link.run(|con| {
            redis::cmd("HSET")
                .arg(&key)
                .arg(name)
                .arg(&text)
                .query::<()>(con)
        })
    }

    /// The Redis server's time, ms since the epoch.
    pub(crate) fn server_ms(&mut self) -> Result<i64, FleetError> {
        let (s, us): (i64, i64) = self.link.run(|con| redis::cmd("TIME").query(con))?;
        Ok(s * 1000 + us / 1000)
    }

    /// Every process that ever joined, with its last heartbeat, and the server's time.
    pub(crate) fn all(&mut self) -> Result<(Vec<(String, Heartbeat)>, i64), FleetError> {
        let key = self.key("members");
        let raw: Vec<(String, String)> = self
            .link
            .run(|con| redis::cmd("HGETALL").arg(&key).query(con))?;
        let now = self.server_ms()?;
        let mut out: Vec<(String, Heartbeat)> = raw
            .into_iter()
            .filter_map(|(name, text)| Some((name, serde_json::from_str(&text).ok()?)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok((out, now))
    }

    /// Whether another live process holds hosts or requests (work may still come from it).
    pub(crate) fn others_busy(&mut self, me: &str) -> Result<bool, FleetError> {
        let (all, now) = self.all()?;
        Ok(all.iter().any(|(name, b)| {
            name != me
                && now - b.at < STALE_MS
                && b.state != "stopped"
                && (b.hosts > 0 || b.in_flight > 0 || b.taken > 0)
        }))
    }

    /// How many processes are alive.
    pub(crate) fn alive(&mut self) -> Result<usize, FleetError> {
        let (all, now) = self.all()?;
        Ok(all
            .iter()
            .filter(|(_, b)| now - b.at < STALE_MS && b.state != "stopped")
            .count())
    }
}

//! Who works on a crawl: the settings stored with it, and each process's heartbeat (what it
//! holds and how fast it goes), which `status` shows and by which a process knows whether work
//! may still come from the others. A [`Look`] takes what a process needs of them, with the
//! count of hosts with work, in one round trip (a script).
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
    /// The origins of some of them (the first few in order).
    #[serde(default)]
    pub(crate) held: Vec<String>,
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
        key(&self.crawl, name)
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

    /// Every process that ever joined, with its last heartbeat, and the server's time.
    pub(crate) fn all(&mut self) -> Result<(Vec<(String, Heartbeat)>, i64), FleetError> {
        let look = self.look()?;
        Ok((look.members, look.now))
    }

    /// The fleet as it is now (see [`look`]).
    pub(crate) fn look(&mut self) -> Result<Look, FleetError> {
        look(&mut self.link, &self.crawl)
    }
}

/// The key `name` of crawl `crawl`'s own (not a host's).
fn key(crawl: &str, name: &str) -> String {
    format!("{}:{name}", tag(crawl, "crawl"))
}

/// Milliseconds since the epoch of what `TIME` answers (seconds, microseconds); a server
/// answering nonsense cannot overflow it.
fn ms((s, us): (i64, i64)) -> i64 {
    s.saturating_mul(1000).saturating_add(us / 1000)
}

/// Heartbeats by process name, those that do not parse left out.
fn heartbeats(raw: Vec<(String, String)>) -> Vec<(String, Heartbeat)> {
    let mut out: Vec<(String, Heartbeat)> = raw
        .into_iter()
        .filter_map(|(name, text)| Some((name, serde_json::from_str(&text).ok()?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// What a process needs of the fleet to know its share of the hosts and whether work may
/// still come from the others: the hosts with work, every heartbeat, the server's time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Look {
    /// Hosts listed with work (`{C:crawl}:active`).
    pub(crate) active: u64,
    members: Vec<(String, Heartbeat)>,
    now: i64,
}

impl Heartbeat {
    /// Milliseconds since it was said, at server time `now` (negative if stamped later).
    pub(crate) fn age(&self, now: i64) -> i64 {
        now.saturating_sub(self.at)
    }

    /// Whether its process is alive at server time `now`: it beat within [`STALE_MS`], and
    /// not more than that ahead of the clock either (a stamp from the future is another
    /// tool's, or a clock gone back, and would keep a dead process alive for ever).
    pub(crate) fn alive(&self, now: i64) -> bool {
        (-STALE_MS..STALE_MS).contains(&self.age(now)) && self.state != "stopped"
    }
}

impl Look {
    /// How many processes are alive.
    pub(crate) fn alive(&self) -> usize {
        self.members
            .iter()
            .filter(|(_, b)| b.alive(self.now))
            .count()
    }

    /// Whether another live process holds hosts or requests (work may still come from it).
    pub(crate) fn others_busy(&self, me: &str) -> bool {
        self.members.iter().any(|(name, b)| {
            name != me && b.alive(self.now) && (b.hosts > 0 || b.in_flight > 0 || b.taken > 0)
        })
    }
}

/// What [`look`] asks, in one script so that it is one round trip on a cluster too (where
/// `TIME` may not share a pipeline): KEYS = [active, members].
const LOOK: &str =
    "return {redis.call('ZCARD', KEYS[1]), redis.call('HGETALL', KEYS[2]), redis.call('TIME')}";

static LOOK_SCRIPT: std::sync::LazyLock<redis::Script> =
    std::sync::LazyLock::new(|| redis::Script::new(LOOK));

/// Looks at crawl `crawl` over `link`, in one round trip, so that the thread writing a batch
/// can look right after it and the crawl loop need not ask.
pub(crate) fn look(link: &mut RedisLink, crawl: &str) -> Result<Look, FleetError> {
    let script = &*LOOK_SCRIPT;
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash())
        .arg(2)
        .arg(key(crawl, "active"))
        .arg(key(crawl, "members"));
    let answers = link.run_keyed(&[&[cmd]], &[script])?;
    let bad = |e: redis::ParsingError| FleetError::Redis {
        url: link.shown().to_string(),
        source: e.into(),
    };
    let answer = answers.into_iter().next().unwrap_or(redis::Value::Nil);
    let (active, raw, time): (u64, Vec<(String, String)>, (i64, i64)) =
        redis::from_redis_value(answer).map_err(bad)?;
    Ok(Look {
        active,
        members: heartbeats(raw),
        now: ms(time),
    })
}

/// Says how process `name` of crawl `crawl` is, over `link`, stamped with the server's clock.
pub(crate) fn beat(
    link: &mut RedisLink,
    crawl: &str,
    name: &str,
    beat: &Heartbeat,
) -> Result<(), FleetError> {
    let time = link.run(|con| redis::cmd("TIME").query(con))?;
    let text = serde_json::to_string(&Heartbeat {
        at: ms(time),
        ..beat.clone()
    })
    .unwrap_or_default();
    let key = key(crawl, "members");
    link.run(|con| {
        redis::cmd("HSET")
            .arg(&key)
            .arg(name)
            .arg(&text)
            .query::<()>(con)
    })
}

//! One connection to the shared frontier, and what a process does when Redis goes away: every
//! call waits, with one log line when the pause starts and one when it ends, reconnecting until
//! the server answers again (a restart, a failover, a network cut). Nothing is lost meanwhile:
//! the crawl loop blocks on the call, and what it had not saved stays in its hands.

use super::FleetError;
use redis::{Cmd, ConnectionLike, RedisError, RedisResult, Script, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a reply may take before the server counts as unreachable.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest wait between two attempts while paused.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A connection to the frontier that survives the server's restarts.
pub(crate) struct RedisLink {
    con: Option<Box<dyn ConnectionLike + Send>>,
    url: String,
    /// The address as logs show it.
    shown: String,
    stop: Option<Arc<AtomicBool>>,
    /// A cluster's keys live on several nodes: there a pipeline cannot carry them all.
    cluster: bool,
}

/// Whether the call may succeed once the server is back: the connection broke, or the
/// server is loading its data or reconfiguring its cluster.
fn transient(e: &RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    e.is_io_error()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || e.is_timeout()
        || e.is_unrecoverable_error()
        || matches!(
            e.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
            )
        )
}

fn open(url: &str) -> RedisResult<Box<dyn ConnectionLike + Send>> {
    if let Some(nodes) = url.strip_prefix("redis+cluster://") {
        let nodes: Vec<String> = nodes
            .trim_end_matches('/')
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| format!("redis://{n}/"))
            .collect();
        let client = redis::cluster::ClusterClientBuilder::new(nodes)
            .connection_timeout(IO_TIMEOUT)
            .response_timeout(IO_TIMEOUT)
            .build()?;
        Ok(Box::new(client.get_connection()?))
    } else {
        let client = redis::Client::open(url)?;
        let con = client.get_connection_with_timeout(IO_TIMEOUT)?;
        con.set_read_timeout(Some(IO_TIMEOUT))?;
        con.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(Box::new(con))
    }
}

impl RedisLink {
    /// Connects to `url`: a frontier that cannot be reached at the start is an error, not a
    /// pause (the address may be wrong).
    pub(crate) fn open(url: &str) -> Result<RedisLink, FleetError> {
        let con = open(url).map_err(|source| FleetError::Redis {
            url: super::shown(url),
            source,
        })?;
        Ok(RedisLink {
            con: Some(con),
            url: url.to_string(),
            shown: super::shown(url),
            stop: None,
            cluster: url.starts_with("redis+cluster://"),
        })
    }

    /// A pause ends with an error once `stop` is set (Ctrl-C while Redis is away).
    pub(crate) fn stop_on(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }

    /// The frontier's address, as logs show it.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Runs `cmds` in order and returns their answers: in one round trip on one server, one
    /// at a time on a cluster (its keys live on several nodes). A script the server does not
    /// know (it restarted since it was loaded) is loaded from `scripts`, and the commands that
    /// found it missing run again: only those, as the others ran. Any other error a command
    /// answers is returned, after the commands before it ran.
    pub(crate) fn run_all(
        &mut self,
        cmds: &[Cmd],
        scripts: &[&Script],
    ) -> Result<Vec<Value>, FleetError> {
        if cmds.is_empty() {
            return Ok(Vec::new());
        }
        let answers: Vec<RedisResult<Value>> = if self.cluster {
            let mut out = Vec::with_capacity(cmds.len());
            for cmd in cmds {
                out.push(self.run(|con| match cmd.query::<Value>(con) {
                    Err(e) if !transient(&e) => Ok(Err(e)),
                    r => r.map(Ok),
                })?);
            }
            out
        } else {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for cmd in cmds {
                pipe.add_command(cmd.clone());
            }
            self.run(|con| pipe.query(con))?
        };
        let mut out = Vec::with_capacity(answers.len());
        for (cmd, answer) in cmds.iter().zip(answers) {
            let value = match answer {
                Err(e)
                    if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                {
                    for script in scripts {
                        self.run(|con| script.prepare_invoke().load(con))?;
                    }
                    self.run(|con| cmd.query::<Value>(con))?
                }
                // The server was loading or reconfiguring: nothing ran, and it waits its turn.
                Err(e) if transient(&e) => self.run(|con| cmd.query::<Value>(con))?,
                Err(source) => {
                    return Err(FleetError::Redis {
                        url: self.shown.clone(),
                        source,
                    });
                }
                Ok(v) => v,
            };
            out.push(value);
        }
        Ok(out)
    }

    /// Runs `call`, waiting out an unreachable server. Calls are idempotent or made so by their
    /// scripts (a seen-set, a token), so one repeated after a lost reply does no harm.
    pub(crate) fn run<T>(
        &mut self,
        mut call: impl FnMut(&mut dyn ConnectionLike) -> RedisResult<T>,
    ) -> Result<T, FleetError> {
        let mut paused: Option<(Instant, Duration)> = None;
        loop {
            let result = match self.con.as_mut() {
                Some(con) => call(&mut **con),
                None => open(&self.url).and_then(|con| {
                    let con = self.con.insert(con);
                    call(&mut **con)
                }),
            };
            let e = match result {
                Ok(v) => {
                    if let Some((since, _)) = paused {
                        tracing::warn!(
                            "frontier {} answers again after {:.1} s: resuming",
                            self.shown,
                            since.elapsed().as_secs_f64()
                        );
                    }
                    return Ok(v);
                }
                Err(e) if transient(&e) => e,
                Err(source) => {
                    return Err(FleetError::Redis {
                        url: self.shown.clone(),
                        source,
                    });
                }
            };
            self.con = None;
            let (since, wait) = match paused {
                None => {
                    tracing::warn!(
                        "frontier {} unreachable ({e}): every request of this crawl waits until it answers",
                        self.shown
                    );
                    (Instant::now(), Duration::from_millis(100))
                }
                Some((since, wait)) => (since, (wait * 2).min(MAX_BACKOFF)),
            };
            paused = Some((since, wait));
            if self
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                return Err(FleetError::Redis {
                    url: self.shown.clone(),
                    source: e,
                });
            }
            std::thread::sleep(wait);
        }
    }
}

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

/// A connection to one server or to a cluster's nodes.
enum Con {
    One(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl Con {
    fn as_dyn(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Con::One(c) => c,
            Con::Cluster(c) => &mut **c,
        }
    }

    /// `cmds` in one pipeline (on a cluster, one per node, sent before any is read), each
    /// command's error apart.
    fn pipelined(&mut self, cmds: &[Cmd]) -> RedisResult<Vec<RedisResult<Value>>> {
        match self {
            Con::One(c) => {
                let mut pipe = redis::pipe();
                pipe.ignore_errors();
                for cmd in cmds {
                    pipe.add_command(cmd.clone());
                }
                pipe.query(c)
            }
            Con::Cluster(c) => {
                let mut pipe = redis::cluster::cluster_pipe();
                for cmd in cmds {
                    pipe.add_command(cmd.clone());
                }
                match pipe.query::<Vec<Value>>(c) {
                    Ok(values) => Ok(values.into_iter().map(Ok).collect()),
                    Err(e) if broken(&e) => Err(e),
                    // A cluster's pipeline answers an error of one command for all (a script
                    // a node lost in a restart, a slot that moved): they run again one at a
                    // time, each answering its own. Those that ran already run twice, which
                    // every call here bears (see [`RedisLink::run`]).
                    Err(_) => Ok(cmds
                        .iter()
                        .map(|cmd| match cmd.query::<Value>(&mut **c) {
                            Err(e) if broken(&e) => Err(e),
                            r => Ok(r),
                        })
                        .collect::<RedisResult<Vec<_>>>()?),
                }
            }
        }
    }
}

/// A connection to the frontier that survives the server's restarts.
pub(crate) struct RedisLink {
    con: Option<Con>,
    url: String,
    /// The address as logs show it.
    shown: String,
    stop: Option<Arc<AtomicBool>>,
    /// A cluster's keys live on several nodes: there a pipeline goes to each in parallel.
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

/// Whether the connection itself failed (rather than a command on it).
fn broken(e: &RedisError) -> bool {
    e.is_io_error() || e.is_connection_refusal() || e.is_connection_dropped() || e.is_timeout()
}

fn open(url: &str) -> RedisResult<Con> {
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
        Ok(Con::Cluster(Box::new(client.get_connection()?)))
    } else {
        let client = redis::Client::open(url)?;
        let con = client.get_connection_with_timeout(IO_TIMEOUT)?;
        con.set_read_timeout(Some(IO_TIMEOUT))?;
        con.set_write_timeout(Some(IO_TIMEOUT))?;
        Ok(Con::One(con))
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

    /// Runs `stages` of commands that each name a key (scripts with their keys, commands on
    /// one key), a stage after the one before, and returns their answers in order: in one
    /// round trip on one server, one per stage on a cluster (a pipeline per node, written
    /// before any is read). A script the server does not know (it restarted since it was
    /// loaded) is loaded from `scripts`, and the commands that found it missing run again:
    /// only those, as the others ran; so does a command the cluster answered elsewhere (a
    /// slot that moved), alone. Any other error a command answers is returned, after the
    /// commands before it ran.
    pub(crate) fn run_keyed(
        &mut self,
        stages: &[&[Cmd]],
        scripts: &[&Script],
    ) -> Result<Vec<Value>, FleetError> {
        let cmds: Vec<Cmd> = stages.concat();
        if cmds.is_empty() {
            return Ok(Vec::new());
        }
        let mut answers = Vec::with_capacity(cmds.len());
        if self.cluster {
            for stage in stages.iter().filter(|s| !s.is_empty()) {
                answers.extend(self.run_con(|con| con.pipelined(stage))?);
            }
        } else {
            answers = self.run_con(|con| con.pipelined(&cmds))?;
        }
        self.answered(&cmds, answers, scripts)
    }

    /// The answers of `cmds`, each error read: see [`RedisLink::run_keyed`].
    fn answered(
        &mut self,
        cmds: &[Cmd],
        answers: Vec<RedisResult<Value>>,
        scripts: &[&Script],
    ) -> Result<Vec<Value>, FleetError> {
        let mut out = Vec::with_capacity(answers.len());
        let mut loaded = false;
        for (cmd, answer) in cmds.iter().zip(answers) {
            let value = match answer {
                Err(e)
                    if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
                {
                    // Once per call: every node has them after (a cluster loads on each).
                    if !std::mem::replace(&mut loaded, true) {
                        for script in scripts {
                            self.run(|con| script.prepare_invoke().load(con))?;
                        }
                    }
                    self.run(|con| cmd.query::<Value>(con))?
                }
                // The server was loading or reconfiguring (or the slot moved): nothing ran, and
                // it waits its turn, routed anew.
                Err(e) if transient(&e) || e.is_cluster_error() => {
                    self.run(|con| cmd.query::<Value>(con))?
                }
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
    /// scripts (a seen-set, a token, an answer kept under the call's id), so one repeated
    /// after a lost reply does no harm (`tests/tools/fleet_lost_answers.rs`).
    pub(crate) fn run<T>(
        &mut self,
        mut call: impl FnMut(&mut dyn ConnectionLike) -> RedisResult<T>,
    ) -> Result<T, FleetError> {
        self.run_con(|con| call(con.as_dyn()))
    }

    fn run_con<T>(
        &mut self,
        mut call: impl FnMut(&mut Con) -> RedisResult<T>,
    ) -> Result<T, FleetError> {
        let mut paused: Option<(Instant, Duration)> = None;
        loop {
            let result = match self.con.as_mut() {
                Some(con) => call(con),
                None => open(&self.url).and_then(|con| call(self.con.insert(con))),
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

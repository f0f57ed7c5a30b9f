//! A process's name in a fleet: unique in the crawl, not in a directory. A name is taken in
//! Redis with a liveness lease that a thread of the process renews; a name a live process
//! holds is never taken by another, and a process started again after a crash takes back its
//! own name only once the old lease has lapsed. "Its own" is said by its directory: each
//! process directory holds an identity (`process-id`, made once), and the holder of a name is
//! recorded with the identity of the directory it runs in.
//!
//! Key, per crawl `C` and name `N`: `{C:crawl}:name:N` (string, expiring after the fleet's
//! lease): the holder as JSON ([`Holder`]). Every key of the crawl's own shares one hash tag,
//! so each script touches one slot of a cluster.

use super::redis_link::RedisLink;
use super::{FleetError, connect, tag};
use redis::Script;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The file in a process directory that holds its identity.
const ID_FILE: &str = "process-id";

/// Who holds a name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Holder {
    /// The identity of the directory it runs in.
    pub(crate) dir_id: String,
    /// This run of it (a restart is another run).
    pub(crate) run: String,
    /// The machine's name.
    pub(crate) machine: String,
    /// Its process id.
    pub(crate) pid: u32,
    /// Its directory, as it named it.
    pub(crate) dir: String,
}

/// Takes a name: KEYS = [name]; ARGV = [holder, lease ms]. Returns {1} taken (or renewed: the
/// answer of a call sent before was lost), or {0, holder, ms left} held by another.
const CLAIM: &str = r"
local have = redis.call('GET', KEYS[1])
if (not have) or have == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
return {0, have, redis.call('PTTL', KEYS[1])}
";

/// Renews a name: KEYS = [name]; ARGV = [holder, lease ms]. A name that lapsed and nobody
/// took is taken again (Redis was out of reach, or restarted without its data); one another
/// process took meanwhile answers 0.
const RENEW: &str = r"
local have = redis.call('GET', KEYS[1])
if have == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not have then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
";

/// Gives a name back: KEYS = [name]; ARGV = [holder].
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
";

/// What asking for a name got.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Claim {
    /// Taken by this run.
    Taken,
    /// Held by this directory's last run, whose lease lapses in this long.
    Ours(Duration),
    /// Held by another live process.
    Other(Holder),
}

/// The key of name `name` in crawl `crawl`.
fn key(crawl: &str, name: &str) -> String {
    format!("{}:name:{name}", tag(crawl, "crawl"))
}

/// The identity of the process directory `dir`, made (and synced) if it has none; returns it
/// and whether it was made now.
pub(crate) fn dir_id(dir: &Path) -> Result<(String, bool), std::io::Error> {
    let path = dir.join(ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) if is_id(text.trim()) => return Ok((text.trim().to_string(), false)),
        Ok(_) => tracing::warn!(
            "{} does not hold a process identity: a new one is made",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let id = format!("{:032x}", rand::random::<u128>());
    let tmp = dir.join(format!("{ID_FILE}.tmp"));
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(id.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok((id, true))
}

/// Forgets the identity made by [`dir_id`] for a directory that did not get its name.
pub(crate) fn forget_dir_id(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(ID_FILE));
}

/// Whether `dir` was a process directory already (it has an identity).
pub(crate) fn has_dir_id(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(ID_FILE)).is_ok_and(|t| is_id(t.trim()))
}

fn is_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A name held by this process, renewed by a thread of its own until dropped (then given
/// back). A name found taken by another process at a renewal is lost, and says so.
pub(crate) struct NameLease {
    name: String,
    holder: Holder,
    lost: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    renewer: Option<JoinHandle<RedisLink>>,
    key: String,
}

/// Asks once for `name` in `crawl` over `link` as `holder`, for `lease`.
fn claim_once(
    link: &mut RedisLink,
    script: &Script,
    key: &str,
    holder: &Holder,
    lease: Duration,
) -> Result<Claim, FleetError> {
    let text = serde_json::to_string(holder).unwrap_or_default();
    let answer: redis::Value = link.run(|con| {
        script
            .key(key)
            .arg(&text)
            .arg(lease.as_millis() as u64)
            .invoke(con)
    })?;
    let (code, have, left): (i64, Option<String>, Option<i64>) = match answer {
        redis::Value::Array(v) => {
            let mut it = v.into_iter();
            let code = it
                .next()
                .and_then(|v| redis::from_redis_value(v).ok())
                .unwrap_or(0);
            let have = it.next().and_then(|v| redis::from_redis_value(v).ok());
            let left = it.next().and_then(|v| redis::from_redis_value(v).ok());
            (code, have, left)
        }
        _ => (0, None, None),
    };
    if code == 1 {
        return Ok(Claim::Taken);
    }
    // A holder this build cannot read is another's: never taken over.
    let other: Holder = have
        .as_deref()
        .and_then(|h| serde_json::from_str(h).ok())
        .unwrap_or_else(|| Holder {
            dir_id: String::new(),
            run: String::new(),
            machine: "?".into(),
            pid: 0,
            dir: have.unwrap_or_default(),
        });
    let left = Duration::from_millis(left.unwrap_or(0).clamp(0, lease.as_millis() as i64) as u64);
    Ok(if other.dir_id == holder.dir_id {
        Claim::Ours(left)
    } else {
        Claim::Other(other)
    })
}

impl NameLease {
    /// Takes `name` in crawl `crawl` on the frontier at `url` for the process directory
    /// `dir` (identity `dir_id`), the lease lasting `lease` unrenewed. A name held by this
    /// directory's last run is waited for until its lease lapses; one held by another
    /// process is answered with that process. Waiting gives up once `stop` is set.
    pub(crate) fn take(
        url: &str,
        crawl: &str,
        name: &str,
        (dir_id, dir): (&str, &Path),
        lease: Duration,
        stop: &Arc<AtomicBool>,
    ) -> Result<Result<NameLease, Holder>, FleetError> {
        let lease = lease.max(Duration::from_secs(1));
        let mut link = connect(url, crawl)?;
        link.stop_on(stop.clone());
        let holder = Holder {
            dir_id: dir_id.to_string(),
            run: format!("{}:{}", std::process::id(), crate::clock::now_ms()),
            machine: machine(),
            pid: std::process::id(),
            dir: dir.display().to_string(),
        };
        let key = key(crawl, name);
        let script = Script::new(CLAIM);
        let mut said = false;
        loop {
            match claim_once(&mut link, &script, &key, &holder, lease)? {
                Claim::Taken => break,
                Claim::Other(other) => return Ok(Err(other)),
                Claim::Ours(left) => {
                    if !std::mem::replace(&mut said, true) {
                        tracing::info!(
                            "process {name}: this directory's last run holds the name for {:.1} s more (it stopped without giving it back): taken once that lapses",
                            left.as_secs_f64()
                        );
                    }
                    let until = Instant::now() + left + Duration::from_millis(20);
                    while Instant::now() < until {
                        if stop.load(Ordering::Relaxed) {
                            return Err(FleetError::Name(format!(
                                "process {name}: stopped while waiting for the name"
                            )));
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        }
        if said {
            tracing::info!("process {name}: its name taken back from this directory's last run");
        }
        let lost = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        link.stop_on(done.clone());
        let renewer = renew_thread(
            link,
            (key.clone(), name.to_string()),
            serde_json::to_string(&holder).unwrap_or_default(),
            lease,
            (lost.clone(), done.clone()),
        )?;
        Ok(Ok(NameLease {
            name: name.to_string(),
            holder,
            lost,
            done,
            renewer: Some(renewer),
            key,
        }))
    }

    /// The name held.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// This run's identity, unique in the fleet and across restarts, for tokens.
    pub(crate) fn run(&self) -> String {
        format!("{}:{}", self.name, self.holder.run)
    }

    /// An error when another process took the name after this one's lease lapsed.
    pub(crate) fn check(&self) -> Result<(), FleetError> {
        if self.lost.load(Ordering::Relaxed) {
            return Err(FleetError::Name(format!(
                "process {}: its name lapsed (the frontier was out of reach for longer than the fleet's lease) and another process took it; this one stops so that no host is held twice",
                self.name
            )));
        }
        Ok(())
    }
}

/// Renews the name every quarter of its lease until `done`; sets `lost` if another took it.
/// Returns the link, for the name to be given back on it.
fn renew_thread(
    mut link: RedisLink,
    (key, name): (String, String),
    holder: String,
    lease: Duration,
    (lost, done): (Arc<AtomicBool>, Arc<AtomicBool>),
) -> Result<JoinHandle<RedisLink>, FleetError> {
    let every = lease / 4;
    std::thread::Builder::new()
        .name("fleet-name".into())
        .spawn(move || {
            let script = Script::new(RENEW);
            let mut next = Instant::now() + every;
            while !done.load(Ordering::Relaxed) {
                if Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(50).min(every));
                    continue;
                }
                next = Instant::now() + every;
                let renewed: Result<i64, _> = link.run(|con| {
                    script
                        .key(&key)
                        .arg(&holder)
                        .arg(lease.as_millis() as u64)
                        .invoke(con)
                });
                match renewed {
                    Ok(1) => {}
                    Ok(_) => {
                        tracing::error!("process {name}: another process took its name");
                        lost.store(true, Ordering::Relaxed);
                        break;
                    }
                    // Ended by `done` while Redis was away, or a refusal: the next turn asks again.
                    Err(e) => tracing::warn!("process {name}: renewing its name: {e}"),
                }
            }
            link
        })
        .map_err(|e| FleetError::Thread(format!("the thread renewing the name: {e}")))
}

impl Drop for NameLease {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        let Some(Ok(mut link)) = self.renewer.take().map(JoinHandle::join) else {
            return;
        };
        if self.lost.load(Ordering::Relaxed) {
            return;
        }
        // Given back at once, so that a restart need not wait the lease out; a Redis out of
        // reach now lets it lapse instead.
        let holder = serde_json::to_string(&self.holder).unwrap_or_default();
        let stop = Arc::new(AtomicBool::new(true));
        link.stop_on(stop);
        let script = Script::new(RELEASE);
        let _ = link.run(|con| script.key(&self.key).arg(&holder).invoke::<i64>(con));
    }
}

/// The machine's name, for the default process names and the holders of names.
pub(crate) fn machine() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty() && !h.contains(['/', '{', '}']))
        .unwrap_or_else(|| "process".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_keeps_the_identity_it_was_given_and_a_damaged_one_is_made_anew() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!has_dir_id(dir.path()));
        let (id, made) = dir_id(dir.path()).unwrap();
        assert!(made && is_id(&id));
        assert!(has_dir_id(dir.path()));
        assert_eq!(dir_id(dir.path()).unwrap(), (id.clone(), false));
        std::fs::write(dir.path().join(ID_FILE), "not an id\n").unwrap();
        assert!(!has_dir_id(dir.path()));
        let (other, made) = dir_id(dir.path()).unwrap();
        assert!(made && other != id);
        forget_dir_id(dir.path());
        assert!(!has_dir_id(dir.path()));
    }
}

//! A saved batch's writes to the shared queue, made by a thread of their own on a connection
//! of their own while the crawl goes on: Redis takes tens of milliseconds to apply a batch
//! of a few hundred hosts, which the crawl loop would otherwise wait out at every save. The
//! writes leave this process as soon as they are handed over (so a crash loses no more than
//! when they were made in line), in the order they were saved; at most [`AHEAD`] wait, so a
//! Redis that pauses stops the crawl loop as it did. A host given back goes the same way,
//! after the writes before it (its settled rows must not come back with it), so the crawl
//! loop never waits for them; whoever needs the fleet to have seen every write (the question
//! whether work is left, a host given up) waits for them first. Heartbeats go the same way.
//! After each job the thread looks at the fleet (hosts with work, heartbeats), so that the
//! crawl loop knows its share without a round trip of its own: a round trip made while a batch
//! is being applied waits behind it, 5 to 25 ms on this machine at full speed.

use super::FleetError;
use super::leases::HostLeases;
use super::members::{Heartbeat, Look};
use super::queue::{Put, PutDone, SharedQueue};
use crate::ids::HostId;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;

/// Batches handed over and not yet written, beyond the one being written.
const AHEAD: usize = 3;

/// What the thread writes, in the order handed over.
enum Job {
    /// A saved batch.
    Put(Put),
    /// A host given back: every row taken of it queued again, the host listed or not as its
    /// queue says, and its lease (`token`) released, the host not to be contacted before
    /// `not_before`.
    Release {
        host: HostId,
        token: Option<String>,
        not_before: Instant,
    },
    /// A heartbeat of process `name`.
    Beat { name: String, beat: Heartbeat },
}

/// What one batch's writes did, per host, and the fleet as the thread saw it after them.
type Written = Result<(Vec<(HostId, PutDone)>, (Instant, Look)), FleetError>;

/// The thread that writes saved batches, and what it answered.
pub(crate) struct PutWriter {
    to: Option<SyncSender<Job>>,
    from: Receiver<Written>,
    /// Batches handed over whose answer has not been read.
    outstanding: usize,
    thread: Option<JoinHandle<()>>,
    /// The thread's last look at the fleet, and when it was made.
    latest: Option<(Instant, Look)>,
}

impl PutWriter {
    /// Starts the thread, writing with `queue` and `leases` (connections of its own).
    pub(crate) fn start(
        mut queue: SharedQueue,
        mut leases: HostLeases,
    ) -> Result<PutWriter, FleetError> {
        let (to, jobs) = sync_channel::<Job>(AHEAD);
        let (answers, from) = sync_channel::<Written>(AHEAD + 2);
        let thread = std::thread::Builder::new()
            .name("fleet-writes".into())
            .spawn(move || {
                for job in jobs {
                    let done = match job {
                        Job::Put(put) => queue.send(put),
                        Job::Release {
                            host,
                            token,
                            not_before,
                        } => release(&mut queue, &mut leases, host, token, not_before),
                        Job::Beat { name, beat } => queue.beat(&name, &beat).map(|()| Vec::new()),
                    };
                    let answer = done.and_then(|done| {
                        let look = queue.look()?;
                        Ok((done, (Instant::now(), look)))
                    });
                    if answers.send(answer).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| FleetError::Thread(e.to_string()))?;
        Ok(PutWriter {
            to: Some(to),
            from,
            outstanding: 0,
            thread: Some(thread),
            latest: None,
        })
    }

    /// Hands a batch over (waiting while [`AHEAD`] others wait); returns what the batches
    /// written since the last call did.
    pub(crate) fn send(&mut self, put: Put) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        self.hand(Job::Put(put))
    }

    /// Hands over a host given back (see [`Job::Release`]), as [`PutWriter::send`] does.
    pub(crate) fn release(
        &mut self,
        host: HostId,
        token: Option<String>,
        not_before: Instant,
    ) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        self.hand(Job::Release {
            host,
            token,
            not_before,
        })
    }

    /// Hands over a heartbeat, as [`PutWriter::send`] does.
    pub(crate) fn beat(
        &mut self,
        name: &str,
        beat: Heartbeat,
    ) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        self.hand(Job::Beat {
            name: name.to_string(),
            beat,
        })
    }

    fn hand(&mut self, job: Job) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        let mut done = self.written()?;
        // A full channel blocks here: while Redis pauses, the crawl loop waits as it did.
        while self.outstanding > AHEAD {
            done.extend(self.next_answer()?);
        }
        let to = self
            .to
            .as_ref()
            .ok_or(FleetError::Thread("stopped".into()))?;
        to.send(job).map_err(|_| self.gone())?;
        self.outstanding += 1;
        Ok(done)
    }

    /// What the batches written since the last call did, without waiting.
    pub(crate) fn written(&mut self) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        let mut done = Vec::new();
        while self.outstanding > 0 {
            match self.from.try_recv() {
                Ok(answer) => {
                    self.outstanding -= 1;
                    done.extend(self.read(answer)?);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return Err(self.gone()),
            }
        }
        Ok(done)
    }

    /// Waits until every batch handed over is written; returns what they did.
    pub(crate) fn wait(&mut self) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        let mut done = Vec::new();
        while self.outstanding > 0 {
            done.extend(self.next_answer()?);
        }
        Ok(done)
    }

    fn next_answer(&mut self) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        let answer = self.from.recv().map_err(|_| self.gone())?;
        self.outstanding -= 1;
        self.read(answer)
    }

    fn read(&mut self, answer: Written) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        let (done, look) = answer?;
        self.latest = Some(look);
        Ok(done)
    }

    /// The thread's last look at the fleet, made after the last job whose answer was read,
    /// and when.
    pub(crate) fn look(&self) -> Option<&(Instant, Look)> {
        self.latest.as_ref()
    }

    fn gone(&mut self) -> FleetError {
        // The thread ended: its last answer, if any, says why; its panic otherwise.
        self.to = None;
        let why = match self.thread.take().map(JoinHandle::join) {
            Some(Err(_)) => "the thread writing to the frontier panicked",
            _ => "the thread writing to the frontier stopped",
        };
        FleetError::Thread(why.into())
    }
}

/// A host given back, on the thread's connections (see [`Job::Release`]).
fn release(
    queue: &mut SharedQueue,
    leases: &mut HostLeases,
    host: HostId,
    token: Option<String>,
    not_before: Instant,
) -> Result<Vec<(HostId, PutDone)>, FleetError> {
    let back = queue.reclaim(host)?;
    if back > 0 {
        tracing::debug!("host {host}: {back} URLs taken here are queued again");
    }
    queue.retire(host)?;
    if let Some(token) = token {
        let delay = not_before.saturating_duration_since(Instant::now());
        leases.release(&host.to_string(), &token, delay)?;
    }
    Ok(Vec::new())
}

impl Drop for PutWriter {
    fn drop(&mut self) {
        self.to = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

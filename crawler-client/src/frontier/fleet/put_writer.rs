//! A saved batch's writes to the shared queue, made by a thread of their own on a connection
//! of their own while the crawl goes on: Redis takes tens of milliseconds to apply a batch
//! of a few hundred hosts, which the crawl loop would otherwise wait out at every save. The
//! writes leave this process as soon as they are handed over (so a crash loses no more than
//! when they were made in line), in the order they were saved; at most [`AHEAD`] wait, so a
//! Redis that pauses stops the crawl loop as it did. Whoever needs the fleet to have seen
//! every write (a host given back, the question whether work is left) waits for them first.

use super::FleetError;
use super::queue::{Put, PutDone, SharedQueue};
use crate::ids::HostId;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;

/// Batches handed over and not yet written, beyond the one being written.
const AHEAD: usize = 1;

/// What one batch's writes did, per host.
pub(crate) type Written = Result<Vec<(HostId, PutDone)>, FleetError>;

/// The thread that writes saved batches, and what it answered.
pub(crate) struct PutWriter {
    to: Option<SyncSender<Put>>,
    from: Receiver<Written>,
    /// Batches handed over whose answer has not been read.
    outstanding: usize,
    thread: Option<JoinHandle<()>>,
}

impl PutWriter {
    /// Starts the thread, writing with `queue` (a connection of its own).
    pub(crate) fn start(mut queue: SharedQueue) -> Result<PutWriter, FleetError> {
        let (to, batches) = sync_channel::<Put>(AHEAD);
        let (answers, from) = sync_channel::<Written>(AHEAD + 2);
        let thread = std::thread::Builder::new()
            .name("fleet-writes".into())
            .spawn(move || {
                for put in batches {
                    if answers.send(queue.send(put)).is_err() {
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
        })
    }

    /// Hands a batch over (waiting while [`AHEAD`] others wait); returns what the batches
    /// written since the last call did.
    pub(crate) fn send(&mut self, put: Put) -> Result<Vec<(HostId, PutDone)>, FleetError> {
        let mut done = self.written()?;
        // A full channel blocks here: while Redis pauses, the crawl loop waits as it did.
        while self.outstanding > AHEAD {
            done.extend(self.next_answer()?);
        }
        let to = self
            .to
            .as_ref()
            .ok_or(FleetError::Thread("stopped".into()))?;
        to.send(put).map_err(|_| self.gone())?;
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
                    done.extend(answer?);
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

    fn next_answer(&mut self) -> Written {
        let answer = self.from.recv().map_err(|_| self.gone())?;
        self.outstanding -= 1;
        answer
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

impl Drop for PutWriter {
    fn drop(&mut self) {
        self.to = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

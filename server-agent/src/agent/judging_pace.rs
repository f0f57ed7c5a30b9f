//! When the watch loop judges files again: tokens filled at the rate that covers every file
//! within `--judge-every` (or `--judge-rate` while some wait first), paused with a growing
//! wait after the server could not be asked, and the follow-ups after a configuration change.

use std::time::{Duration, Instant};

/// Most files asked about again in one round, so an event never waits long behind one.
const ROUND: usize = 16;

/// When to judge files again in the watch loop: tokens filled at the rate that covers every
/// file within `--judge-every` (or `--judge-rate` while some wait first), paused after the
/// server could not be asked; and the files whose judging waits for the server to answer.
pub(super) struct Judging {
    pub(super) tokens: f64,
    filled: Instant,
    paused_until: Option<Instant>,
    pause: Duration,
    pub(super) follow_ups: Vec<Instant>,
    warned: Option<Instant>,
}

impl Judging {
    pub(super) fn new() -> Judging {
        Judging {
            tokens: 0.0,
            filled: Instant::now(),
            paused_until: None,
            pause: Duration::ZERO,
            follow_ups: Vec::new(),
            warned: None,
        }
    }

    /// The server could not be asked: wait longer each time (1 s to a minute), and say so
    /// loudly at most once a minute.
    pub(super) fn unreachable(&mut self, why: &str, waiting: usize) {
        self.pause = (self.pause * 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
        self.paused_until = Some(Instant::now() + self.pause);
        if self
            .warned
            .is_none_or(|w| w.elapsed() >= Duration::from_secs(60))
        {
            self.warned = Some(Instant::now());
            tracing::error!(
                "{why}: {waiting} files wait to be judged; nothing new is published until the web server answers (what was judged stays); asking again in {} s",
                self.pause.as_secs()
            );
        }
    }

    pub(super) fn answered(&mut self) {
        if self.paused_until.take().is_some() && !self.pause.is_zero() {
            tracing::info!("the web server answers again");
        }
        self.pause = Duration::ZERO;
    }

    pub(super) fn paused(&self, now: Instant) -> bool {
        self.paused_until.is_some_and(|u| now < u)
    }

    /// Files that may be asked about now.
    pub(super) fn budget(&mut self, now: Instant, rate: f64) -> usize {
        let secs = now.duration_since(self.filled).as_secs_f64();
        self.filled = now;
        self.tokens = (self.tokens + secs * rate).min(ROUND as f64);
        self.tokens.floor() as usize
    }

    /// When the loop must wake for judging at the latest: soon enough to keep to `rate` while
    /// files wait first (`forced`), twice a second otherwise.
    pub(super) fn wake(&self, now: Instant, forced: bool, rate: f64) -> Instant {
        let mut at = now + Duration::from_millis(500);
        if forced && !self.paused(now) {
            at = at.min(now + Duration::from_secs_f64(ROUND as f64 / rate.max(1.0)));
        }
        if let Some(u) = self.paused_until {
            at = at.min(u.max(now));
        }
        self.follow_ups.iter().fold(at, |a, f| a.min(*f))
    }
}

//! Time as every scheduling component sees it: real, scaled (the bench runs a simulated day in
//! seconds) or set by hand (tests never sleep for real).

use chrono::{DateTime, Utc};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A source of "now".
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;

    /// How long a wait of `simulated` lasts in real time (the bench's clock runs faster).
    fn real_duration(&self, simulated: Duration) -> Duration {
        simulated
    }
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that runs `speed` times faster than real time from a chosen start.
#[derive(Debug, Clone)]
pub struct ScaledClock {
    start_real: Instant,
    start_sim: DateTime<Utc>,
    speed: f64,
}

impl ScaledClock {
    /// Starts at `start`, advancing `speed` simulated seconds per real second.
    pub fn new(start: DateTime<Utc>, speed: f64) -> Self {
        ScaledClock {
            start_real: Instant::now(),
            start_sim: start,
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                1.0
            },
        }
    }

    /// Simulated seconds per real second.
    pub fn speed(&self) -> f64 {
        self.speed
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> DateTime<Utc> {
        let real = self.start_real.elapsed().as_secs_f64() * self.speed;
        self.start_sim + chrono::Duration::nanoseconds((real * 1e9) as i64)
    }

    fn real_duration(&self, simulated: Duration) -> Duration {
        simulated.div_f64(self.speed)
    }
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// Starts at `t`.
    pub fn new(t: DateTime<Utc>) -> Self {
        ManualClock(Mutex::new(t))
    }

    /// Moves forward by `d`.
    pub fn advance(&self, d: Duration) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *t += chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
    }

    /// Jumps to `t`.
    pub fn set(&self, t: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = t;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let t0 = Utc.timestamp_opt(1_000_000, 0).unwrap();
        let c = ManualClock::new(t0);
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_secs(90));
        assert_eq!(c.now(), t0 + chrono::Duration::seconds(90));
    }

    #[test]
    fn scaled_clock_runs_faster_and_scales_waits() {
        let t0 = Utc.timestamp_opt(1_000_000, 0).unwrap();
        let c = ScaledClock::new(t0, 3600.0);
        assert!(c.now() >= t0);
        assert_eq!(
            c.real_duration(Duration::from_secs(3600)),
            Duration::from_secs(1)
        );
        assert_eq!(ScaledClock::new(t0, -1.0).speed(), 1.0);
    }
}

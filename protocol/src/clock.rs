//! Time as every scheduling component sees it: real, scaled (the bench runs a simulated day in
//! seconds) or set by hand (tests never sleep for real).

use chrono::{DateTime, Utc};
use std::sync::Mutex;
use std::time::Duration;

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

/// A clock that runs `speed` times faster than real time. It is anchored on the wall clock,
/// so separate processes given the same anchor and speed agree on the simulated time.
#[derive(Debug, Clone)]
pub struct ScaledClock {
    real_anchor: DateTime<Utc>,
    sim_anchor: DateTime<Utc>,
    speed: f64,
}

impl ScaledClock {
    /// Starts at `start` now, advancing `speed` simulated seconds per real second.
    pub fn new(start: DateTime<Utc>, speed: f64) -> Self {
        ScaledClock {
            real_anchor: Utc::now(),
            sim_anchor: start,
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                1.0
            },
        }
    }

    /// Simulated time equals real time at `anchor` and runs `speed` times faster from there.
    pub fn anchored(anchor: DateTime<Utc>, speed: f64) -> Self {
        ScaledClock {
            real_anchor: anchor,
            ..ScaledClock::new(anchor, speed)
        }
    }

    /// Simulated seconds per real second.
    pub fn speed(&self) -> f64 {
        self.speed
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> DateTime<Utc> {
        let real = (Utc::now() - self.real_anchor)
            .num_nanoseconds()
            .unwrap_or(0) as f64;
        self.sim_anchor + chrono::Duration::nanoseconds((real * self.speed) as i64)
    }

    fn real_duration(&self, simulated: Duration) -> Duration {
        simulated.div_f64(self.speed)
    }
}

/// The clock a program's `--clock-speed X [--clock-anchor MS]` options ask for: the system
/// clock without a speed, else a [`ScaledClock`] anchored at `anchor_ms` (milliseconds since
/// the epoch; the program's start when absent).
pub fn from_options(
    speed: Option<f64>,
    anchor_ms: Option<i64>,
) -> Result<std::sync::Arc<dyn Clock>, String> {
    let Some(speed) = speed else {
        return Ok(std::sync::Arc::new(SystemClock));
    };
    if !(speed.is_finite() && speed > 0.0) {
        return Err(format!("--clock-speed {speed}: must be a positive number"));
    }
    let anchor = match anchor_ms {
        Some(ms) => DateTime::from_timestamp_millis(ms)
            .ok_or_else(|| format!("--clock-anchor {ms}: not a time in milliseconds"))?,
        None => Utc::now(),
    };
    Ok(std::sync::Arc::new(ScaledClock::anchored(anchor, speed)))
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

    #[test]
    fn anchored_clocks_agree_and_run_from_their_anchor() {
        let anchor = Utc::now() - chrono::Duration::seconds(2);
        let (a, b) = (
            ScaledClock::anchored(anchor, 100.0),
            ScaledClock::anchored(anchor, 100.0),
        );
        let (ta, tb) = (a.now(), b.now());
        assert!((ta - tb).num_milliseconds().abs() < 1_000, "{ta} {tb}");
        let ahead = (ta - anchor).num_seconds();
        assert!((199..260).contains(&ahead), "2 s at 100x: {ahead}");
        assert!(from_options(Some(0.0), None).is_err());
        assert!(from_options(Some(2.0), Some(i64::MAX)).is_err());
        assert!(from_options(None, None).is_ok());
    }
}

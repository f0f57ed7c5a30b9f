//! The crawler's time: the system clock, or the scaled clock `webcoop-bench` runs a simulated
//! day on (`--clock-speed`). Everything the crawler stores or compares with a site's dates
//! (visit times, the refresh schedule, metadata polls, leases, WARC dates) reads it; the
//! politeness delays and network timeouts stay in real time, since they protect real servers
//! and bound real waits.

use chrono::{DateTime, Utc};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use webcoop_protocol::clock::{Clock, SystemClock};

static CLOCK: OnceLock<Arc<dyn Clock>> = OnceLock::new();

/// Sets the process's clock, once, before the crawl starts; returns whether it was set.
pub fn install(clock: Arc<dyn Clock>) -> bool {
    CLOCK.set(clock).is_ok()
}

fn clock() -> &'static dyn Clock {
    static SYSTEM: SystemClock = SystemClock;
    match CLOCK.get() {
        Some(c) => c.as_ref(),
        None => &SYSTEM,
    }
}

/// Now.
pub(crate) fn now() -> DateTime<Utc> {
    clock().now()
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    now().timestamp_millis()
}

/// How long to wait in real time for `ms` milliseconds of the crawler's time to pass.
pub(crate) fn real_wait(ms: i64) -> Duration {
    clock().real_duration(Duration::from_millis(ms.max(0) as u64))
}

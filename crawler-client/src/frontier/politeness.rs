//! How long to wait between requests to one host: at least the minimum delay, at least the
//! host's robots.txt `Crawl-delay` (up to a cap, beyond which the host is not crawled), and at
//! least a factor of its last response time (Mercator/Heritrix); longer after 429/503 with
//! `Retry-After`, and exponentially longer for a host that keeps failing (the thesis retries
//! down hosts after 12 hours).

use chrono::{DateTime, Utc};
use std::time::Duration;

/// The politeness settings.
#[derive(Debug, Clone, Copy)]
pub struct Politeness {
    /// Shortest delay between two requests to a host.
    pub(crate) min_delay: Duration,
    /// Delay as a multiple of the host's last response time.
    pub(crate) factor: f64,
    /// Longest delay the response-time rule sets (robots.txt may ask for more).
    pub max_delay: Duration,
    /// Longest `Crawl-delay` honoured; a host asking for more is skipped.
    pub(crate) crawl_delay_cap: Duration,
    /// First parking time of a failing host; it doubles with each further failure.
    pub(crate) park_base: Duration,
    /// Longest a failing host is parked.
    pub(crate) max_park: Duration,
    /// Longest `Retry-After` honoured.
    pub(crate) max_retry_after: Duration,
}

impl Default for Politeness {
    fn default() -> Self {
        Politeness {
            min_delay: Duration::from_secs(1),
            factor: 5.0,
            max_delay: Duration::from_secs(30),
            crawl_delay_cap: Duration::from_secs(30),
            park_base: Duration::from_secs(30),
            max_park: Duration::from_secs(12 * 3600),
            max_retry_after: Duration::from_secs(3600),
        }
    }
}

/// The longest delay a site can make us keep (a day): anything longer is "too slow" anyway,
/// and a bound keeps every later time computation from overflowing.
pub const MAX_HONOURED_DELAY: Duration = Duration::from_secs(86_400);

/// Seconds a site asked for, as a duration: NaN and negatives are nothing, and anything past
/// [`MAX_HONOURED_DELAY`] (infinity and `1e30` included) is that bound, never a panic.
pub(crate) fn site_seconds(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs)
        .unwrap_or(MAX_HONOURED_DELAY)
        .min(MAX_HONOURED_DELAY)
}

/// Which rule set a host's delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DelayWhy {
    /// The minimum delay.
    Minimum,
    /// The host's robots.txt `Crawl-delay`.
    CrawlDelay,
    /// A multiple of its last response time.
    ResponseTime,
    /// The operator set it from the console.
    Operator,
    /// A 429 or 503 with `Retry-After` (or without: the first park).
    RetryAfter,
    /// It keeps failing and is parked.
    Parked,
}

impl DelayWhy {
    /// In words, for the console.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DelayWhy::Minimum => "minimum delay",
            DelayWhy::CrawlDelay => "robots.txt Crawl-delay",
            DelayWhy::ResponseTime => "response time x factor",
            DelayWhy::Operator => "set from the console",
            DelayWhy::RetryAfter => "Retry-After (429/503)",
            DelayWhy::Parked => "parked after failures",
        }
    }
}

impl Politeness {
    /// The delay after a response that took `last_response`, for a host asking `crawl_delay`.
    pub fn delay(&self, crawl_delay: Option<f64>, last_response: Duration) -> Duration {
        self.explain(crawl_delay, last_response, None).0
    }

    /// The delay and the rule that set it; an operator's delay replaces the minimum and the
    /// response-time rule, never robots.txt's `Crawl-delay` when that asks for more.
    pub(crate) fn explain(
        &self,
        crawl_delay: Option<f64>,
        last_response: Duration,
        operator: Option<Duration>,
    ) -> (Duration, DelayWhy) {
        let asked = crawl_delay.map(site_seconds).unwrap_or_default();
        let own = match operator {
            Some(d) => (d.min(MAX_HONOURED_DELAY), DelayWhy::Operator),
            None => {
                let adaptive = last_response
                    .mul_f64(self.factor.max(0.0))
                    .min(self.max_delay);
                if adaptive > self.min_delay {
                    (adaptive, DelayWhy::ResponseTime)
                } else {
                    (self.min_delay, DelayWhy::Minimum)
                }
            }
        };
        if asked > own.0 {
            (asked, DelayWhy::CrawlDelay)
        } else {
            own
        }
    }

    /// Whether a host's `Crawl-delay` is beyond what we honour.
    pub fn too_slow(&self, crawl_delay: Option<f64>) -> bool {
        crawl_delay.is_some_and(|s| s == f64::INFINITY || site_seconds(s) > self.crawl_delay_cap)
    }

    /// How long a host is parked after `failures` consecutive failures (timeouts, refused
    /// connections): the base (30 s), doubling, up to the cap (12 h).
    pub(crate) fn park_for(&self, failures: u32) -> Duration {
        let base = self
            .park_base
            .saturating_mul(1u32 << failures.saturating_sub(1).min(20));
        base.min(self.max_park)
    }

    /// The wait a `Retry-After` header asks for (seconds or an HTTP-date), capped; `None` when
    /// absent or unreadable.
    pub fn retry_after(&self, header: Option<&str>, now: DateTime<Utc>) -> Option<Duration> {
        let h = header?.trim();
        let wait = match h.parse::<u64>() {
            Ok(secs) => Duration::from_secs(secs),
            Err(_) => {
                let at = webcoop_protocol::dates::parse_http_date(h).ok()?;
                (at - now).to_std().unwrap_or_default()
            }
        };
        Some(wait.min(self.max_retry_after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_delay_replaces_the_policy_but_not_robots_txt() {
        let p = Politeness::default();
        let fast = Some(Duration::from_millis(100));
        assert_eq!(
            p.explain(None, Duration::from_secs(1), fast),
            (Duration::from_millis(100), DelayWhy::Operator)
        );
        assert_eq!(
            p.explain(Some(2.0), Duration::ZERO, fast),
            (Duration::from_secs(2), DelayWhy::CrawlDelay)
        );
        assert_eq!(
            p.explain(None, Duration::from_millis(400), None),
            (Duration::from_secs(2), DelayWhy::ResponseTime)
        );
        assert_eq!(
            p.explain(None, Duration::ZERO, None),
            (Duration::from_secs(1), DelayWhy::Minimum)
        );
        let huge = Some(Duration::from_secs(u64::MAX / 4));
        assert_eq!(p.explain(None, Duration::ZERO, huge).0, MAX_HONOURED_DELAY);
    }

    #[test]
    fn delays_take_the_largest_constraint() {
        let p = Politeness::default();
        assert_eq!(
            p.delay(None, Duration::from_millis(10)),
            Duration::from_secs(1)
        );
        assert_eq!(
            p.delay(Some(2.5), Duration::from_millis(10)),
            Duration::from_millis(2500)
        );
        assert_eq!(
            p.delay(None, Duration::from_millis(400)),
            Duration::from_secs(2),
            "5 x 400 ms"
        );
        assert_eq!(
            p.delay(None, Duration::from_secs(60)),
            Duration::from_secs(30),
            "capped"
        );
        assert_eq!(
            p.delay(Some(45.0), Duration::ZERO),
            Duration::from_secs(45),
            "robots.txt asked"
        );
        assert!(p.too_slow(Some(31.0)) && !p.too_slow(Some(30.0)) && !p.too_slow(None));
        // Whatever a robots.txt says, no panic: huge and infinite are too slow, NaN and
        // negatives are no delay at all.
        for huge in [1e30, f64::INFINITY, f64::MAX, 1e10] {
            assert!(p.too_slow(Some(huge)), "{huge}");
            assert_eq!(p.delay(Some(huge), Duration::ZERO), MAX_HONOURED_DELAY);
        }
        for nothing in [f64::NAN, -1.0, f64::NEG_INFINITY, -0.0] {
            assert!(!p.too_slow(Some(nothing)), "{nothing}");
            assert_eq!(
                p.delay(Some(nothing), Duration::ZERO),
                Duration::from_secs(1)
            );
        }
        let off = Politeness {
            min_delay: Duration::ZERO,
            factor: 0.0,
            ..p
        };
        assert_eq!(off.delay(None, Duration::from_secs(1)), Duration::ZERO);
    }

    #[test]
    fn failing_hosts_wait_longer_each_time_up_to_twelve_hours() {
        let p = Politeness::default();
        assert_eq!(p.park_for(1), Duration::from_secs(30));
        assert_eq!(p.park_for(3), Duration::from_secs(120));
        assert_eq!(p.park_for(40), Duration::from_secs(12 * 3600));
    }

    #[test]
    fn retry_after_in_both_forms() {
        let p = Politeness::default();
        let now = DateTime::parse_from_rfc3339("2026-11-21T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            p.retry_after(Some("120"), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            p.retry_after(Some("Sat, 21 Nov 2026 12:00:30 GMT"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            p.retry_after(Some("999999"), now),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(p.retry_after(Some("soon"), now), None);
        assert_eq!(p.retry_after(None, now), None);
    }
}

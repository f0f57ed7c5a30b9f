//! How often the state is saved. Each save writes every B-tree leaf its pages touch, and a
//! host's rows sit together (its queue, its pages by host, its counts): one host's batch of a
//! second touches a few leaves, while a second of a crawl of thousands of hosts, each with one
//! page in it, touches a leaf per page. The fingerprint index spreads any crawl's pages the
//! same way once it has more leaves than a save has rows. Where many hosts are crawled at once
//! or many pages were fetched, and the operator did not say, a save waits five times as long, so
//! that each leaf has a few rows in it.

use std::time::Duration;

/// Longest time between saves by default.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);
/// Results per save at most, by default.
const DEFAULT_RESULTS: usize = 2000;
/// Hosts crawled at once past which a save's pages are spread one a host.
const SPREAD_HOSTS: usize = 1000;
/// Pages fetched (revisits included) past which a save's pages are spread one a leaf of the
/// fingerprint index: about 150 fingerprints fill a leaf, so 300,000 pages are 2,000 leaves,
/// a default save's rows.
const SPREAD_PAGES: u64 = 300_000;
/// How much longer a save of a spread crawl waits (and how many more results it holds).
const SPREAD_FACTOR: u32 = 5;

/// When a save is due: the operator's bounds where given, else by the hosts crawled at once.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SavePace {
    /// Longest time between saves, where the operator set it.
    pub(crate) interval: Option<Duration>,
    /// Results per save at most, where the operator set it.
    pub(crate) results: Option<usize>,
}

impl SavePace {
    /// The longest time between saves and the most results in one, with `hosts_inside`
    /// hosts being crawled at once and `pages` fetched so far.
    pub(crate) fn bounds(&self, hosts_inside: usize, pages: u64) -> (Duration, usize) {
        let factor = if hosts_inside > SPREAD_HOSTS || pages > SPREAD_PAGES {
            SPREAD_FACTOR
        } else {
            1
        };
        (
            self.interval.unwrap_or(DEFAULT_INTERVAL * factor),
            self.results
                .unwrap_or(DEFAULT_RESULTS * factor as usize)
                .max(1),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_hosts_at_once_or_many_pages_fetched_save_five_times_less_often_unless_the_operator_said()
     {
        let default = SavePace::default();
        assert_eq!(default.bounds(3, 0), (Duration::from_secs(1), 2000));
        assert_eq!(
            default.bounds(SPREAD_HOSTS, SPREAD_PAGES),
            (Duration::from_secs(1), 2000)
        );
        assert_eq!(
            default.bounds(SPREAD_HOSTS + 1, 0),
            (Duration::from_secs(5), 10_000)
        );
        // One host whose pages fill more leaves of the fingerprint index than a save has rows.
        assert_eq!(
            default.bounds(1, SPREAD_PAGES + 1),
            (Duration::from_secs(5), 10_000)
        );
        let set = SavePace {
            interval: Some(Duration::from_millis(300)),
            results: Some(50),
        };
        assert_eq!(set.bounds(3, 0), (Duration::from_millis(300), 50));
        assert_eq!(set.bounds(3000, 1 << 30), (Duration::from_millis(300), 50));
        let zero = SavePace {
            interval: None,
            results: Some(0),
        };
        assert_eq!(
            zero.bounds(3000, 0),
            (Duration::from_secs(5), 1),
            "at least one result"
        );
    }
}

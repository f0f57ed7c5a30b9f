//! This run's counts. They move only through the events named here, so the rules tying them
//! hold in one place: a page request counts as started until it comes back unfetched; the
//! refreshes' share of requests is measured against the pages started; a response counts its
//! bytes and, when it is a 4xx or 5xx, an error; the network guard's refusals are saved once
//! per change.

/// What this run did so far, as read by the console, the metrics and the report.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct RunCounts {
    /// Responses received for pages.
    pub(super) fetched: u64,
    /// Pages queued again by the refresh schedule.
    pub(super) revisits: u64,
    /// Bytes received, pages and cooperation alike.
    pub(super) bytes: u64,
    /// Error responses and pages given up.
    pub(super) errors: u64,
    /// Records written after the last saved batch and read back at the start.
    pub(super) replayed: u64,
    /// Requests made for a site's cooperation (listings, feeds, deltas, hub).
    pub(super) coop_requests: u64,
    /// Changes pushed by hubs.
    pub(super) pushes: u64,
    /// Visits of pages fetched before.
    pub(super) known_visits: u64,
    /// Of those, the visits that found a change.
    pub(super) changes: u64,
}

/// This run's counts and the events that change them.
#[derive(Debug, Default)]
pub(super) struct RunCounters {
    counts: RunCounts,
    /// Page requests started and not returned unfetched.
    started: u64,
    /// Connections refused by the network guard in earlier runs, and the total last saved.
    net_refused_before: u64,
    net_refused_saved: u64,
}

impl RunCounters {
    /// A run that follows runs whose network guard refused `net_refused` connections.
    pub(super) fn resumed(net_refused: u64) -> RunCounters {
        RunCounters {
            net_refused_before: net_refused,
            net_refused_saved: net_refused,
            ..RunCounters::default()
        }
    }

    /// What the run did so far.
    pub(super) fn counts(&self) -> RunCounts {
        self.counts
    }

    /// A page request went to the fetching side.
    pub(super) fn page_started(&mut self) {
        self.started += 1;
    }

    /// A page request came back unfetched: it no longer counts as started.
    pub(super) fn page_returned(&mut self) {
        self.started = self.started.saturating_sub(1);
    }

    /// A due page was queued again.
    pub(super) fn revisit_queued(&mut self) {
        self.counts.revisits += 1;
    }

    /// How many more revisits the refreshes' `share` of the requests started allows.
    pub(super) fn revisits_allowed(&self, share: f64) -> u64 {
        let quota = (share * (self.started as f64 + 1.0)).ceil() as u64;
        quota.saturating_sub(self.counts.revisits)
    }

    /// A page's response of `size` bytes arrived; `error` when it is a 4xx or 5xx.
    pub(super) fn response(&mut self, size: u64, error: bool) {
        self.counts.fetched += 1;
        self.counts.bytes += size;
        self.counts.errors += u64::from(error);
    }

    /// A page was given up (refused, failing too often, out of attempts).
    pub(super) fn given_up(&mut self) {
        self.counts.errors += 1;
    }

    /// A page fetched before was visited again, `changed` or not.
    pub(super) fn visited_again(&mut self, changed: bool) {
        self.counts.known_visits += 1;
        self.counts.changes += u64::from(changed);
    }

    /// A cooperation request of `size` bytes answered.
    pub(super) fn coop_request(&mut self, size: u64) {
        self.counts.coop_requests += 1;
        self.counts.bytes += size;
    }

    /// Hubs pushed `pushes` changes carrying `bytes`.
    pub(super) fn pushed(&mut self, pushes: u64, bytes: u64) {
        self.counts.pushes += pushes;
        self.counts.bytes += bytes;
    }

    /// A record written after the last saved batch was read back.
    pub(super) fn record_replayed(&mut self) {
        self.counts.replayed += 1;
    }

    /// The total of refused connections to save, when `this_run` refusals changed it since
    /// the last save; it counts as saved from here (the batch carrying it is the next one).
    pub(super) fn net_refused_to_save(&mut self, this_run: u64) -> Option<u64> {
        let total = self.net_refused_before + this_run;
        (total != self.net_refused_saved).then(|| {
            self.net_refused_saved = total;
            total
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refreshes_share_is_of_the_pages_still_started() {
        let mut run = RunCounters::default();
        // One started page and a share of a half: one revisit now, the next after more pages.
        run.page_started();
        assert_eq!(run.revisits_allowed(0.5), 1);
        run.revisit_queued();
        assert_eq!(run.revisits_allowed(0.5), 0);
        run.page_started();
        run.page_started();
        assert_eq!(run.revisits_allowed(0.5), 1);
        // Pages that come back unfetched were not requests: the room shrinks with them.
        run.page_returned();
        run.page_returned();
        assert_eq!(run.revisits_allowed(0.5), 0);
        run.page_returned();
        run.page_returned();
        assert_eq!(run.revisits_allowed(0.5), 0, "never below nothing started");
    }

    #[test]
    fn responses_count_bytes_everywhere_and_errors_only_for_error_statuses() {
        let mut run = RunCounters::default();
        run.response(100, false);
        run.response(10, true);
        run.coop_request(5);
        run.pushed(3, 7);
        run.given_up();
        let c = run.counts();
        assert_eq!((c.fetched, c.bytes, c.errors), (2, 122, 2));
        assert_eq!((c.coop_requests, c.pushes), (1, 3));
    }

    #[test]
    fn refused_connections_are_saved_once_per_change_on_top_of_earlier_runs() {
        let mut run = RunCounters::resumed(4);
        assert_eq!(run.net_refused_to_save(0), None);
        assert_eq!(run.net_refused_to_save(2), Some(6));
        assert_eq!(run.net_refused_to_save(2), None);
        assert_eq!(run.net_refused_to_save(3), Some(7));
    }
}

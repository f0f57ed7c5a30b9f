//! What is under way on the fetching side, counted where a request starts and where it ends:
//! every request (resolutions, robots.txt, cooperation, pages), the pages among them, and the
//! revisits waiting in the queue. The loop waits for `requests() == 0` before it stops, the
//! page budget counts `pages()`, and the refresh room counts queued revisits, so each count
//! moves only through these methods and a page is always also a request.

/// The counts of what is under way.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    requests: usize,
    pages: usize,
    revisits_queued: usize,
}

impl InFlight {
    /// A request that is not a page's (a resolution, robots.txt, a cooperation request).
    pub(super) fn request_started(&mut self) {
        self.requests += 1;
    }

    /// A request that is not a page's came back.
    pub(super) fn request_ended(&mut self) {
        debug_assert!(
            self.requests > self.pages,
            "a request ended that never started"
        );
        self.requests = self.requests.saturating_sub(1);
    }

    /// A page's request.
    pub(super) fn page_started(&mut self) {
        self.requests += 1;
        self.pages += 1;
    }

    /// A page's request came back, fetched or not.
    pub(super) fn page_ended(&mut self) {
        debug_assert!(self.pages > 0, "a page ended that never started");
        self.requests = self.requests.saturating_sub(1);
        self.pages = self.pages.saturating_sub(1);
    }

    /// Requests under way, pages included.
    pub(super) fn requests(&self) -> usize {
        self.requests
    }

    /// Page requests under way.
    pub(super) fn pages(&self) -> usize {
        self.pages
    }

    /// A revisit went into the queue (scheduled, or back unfetched).
    pub(super) fn revisit_queued(&mut self) {
        self.revisits_queued += 1;
    }

    /// A revisit left the queue for its request.
    pub(super) fn revisit_dispatched(&mut self) {
        self.revisits_queued = self.revisits_queued.saturating_sub(1);
    }

    /// Revisits waiting in the queue.
    pub(super) fn revisits_queued(&self) -> usize {
        self.revisits_queued
    }
}

#[cfg(test)]
mod tests {
    use super::InFlight;

    #[test]
    fn pages_are_requests_and_both_come_back() {
        let mut f = InFlight::default();
        f.request_started();
        f.page_started();
        f.page_started();
        assert_eq!((f.requests(), f.pages()), (3, 2));
        f.page_ended();
        f.request_ended();
        assert_eq!((f.requests(), f.pages()), (1, 1));
        f.page_ended();
        assert_eq!((f.requests(), f.pages()), (0, 0));
    }

    #[test]
    fn revisits_are_counted_into_and_out_of_the_queue() {
        let mut f = InFlight::default();
        f.revisit_queued();
        f.revisit_queued();
        f.revisit_dispatched();
        assert_eq!(f.revisits_queued(), 1);
        f.revisit_dispatched();
        f.revisit_dispatched();
        assert_eq!(f.revisits_queued(), 0);
    }
}

//! The room pages' analysis may take at once. A page is analysed from its decoded content, a
//! buffer as large as the page (a gzip body states its size, up to the page limit), held while
//! its links are read, its digests taken and its record built. Pages analysed side by side add
//! up: on Debian's Rust documentation (55 pages over 1 MiB, the largest cut at the 4 MiB limit)
//! two to four large pages met now and then, and the crawl's peak moved by 10–20 MiB from one
//! run to the next. Here the decoded bytes under analysis are bounded by one page at its
//! largest: small pages pass side by side, a large one waits until the room it needs is free.

use tokio::sync::{Semaphore, SemaphorePermit};

/// The room is counted in parts of this many bytes.
const PART: usize = 64 << 10;

/// The most parts a room has: well under the semaphore's own bound, which is `usize::MAX >> 3`.
const MOST_PARTS: u32 = u32::MAX >> 3;

/// Decoded bytes under analysis at once, at most.
#[derive(Debug)]
pub(crate) struct AnalysisRoom {
    parts: Semaphore,
    total: u32,
}

impl AnalysisRoom {
    /// Room for `bytes` of decoded content at once (at least one part).
    pub(crate) fn new(bytes: usize) -> AnalysisRoom {
        let total = u32::try_from(bytes.div_ceil(PART))
            .unwrap_or(MOST_PARTS)
            .clamp(1, MOST_PARTS);
        AnalysisRoom {
            parts: Semaphore::new(total as usize),
            total,
        }
    }

    /// Waits until `bytes` more fit (all of the room for a page larger than it), and holds
    /// them until the returned guard is dropped; nothing for `0`.
    pub(crate) async fn take(&self, bytes: usize) -> Option<SemaphorePermit<'_>> {
        if bytes == 0 {
            return None;
        }
        let parts = u32::try_from(bytes.div_ceil(PART))
            .unwrap_or(self.total)
            .min(self.total);
        // The semaphore is never closed: it lives as long as the room.
        self.parts.acquire_many(parts).await.ok()
    }

    /// Parts free now.
    #[cfg(test)]
    fn free_parts(&self) -> usize {
        self.parts.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn large_pages_wait_for_each_other_and_small_ones_pass() {
        let room = AnalysisRoom::new(4 << 20);
        assert_eq!(room.free_parts(), 64);
        let big = room.take(3 << 20).await;
        assert!(big.is_some());
        assert_eq!(room.free_parts(), 16);
        // A second large page does not fit beside the first.
        let waits = tokio::time::timeout(Duration::from_millis(50), room.take(2 << 20)).await;
        assert!(waits.is_err(), "a second large page waits");
        // The twin: small pages fit beside it, and take nothing when they decode to nothing.
        let small = room.take(100 << 10).await;
        assert_eq!(room.free_parts(), 14);
        assert!(room.take(0).await.is_none());
        drop((big, small));
        assert_eq!(room.free_parts(), 64);
        let second = tokio::time::timeout(Duration::from_millis(50), room.take(2 << 20)).await;
        assert!(
            matches!(second, Ok(Some(_))),
            "it passes once the first is done"
        );
    }

    #[tokio::test]
    async fn a_page_larger_than_the_room_takes_all_of_it_and_none_is_starved() {
        let room = AnalysisRoom::new(1 << 20);
        let all = room.take(usize::MAX).await;
        assert_eq!(room.free_parts(), 0);
        drop(all);
        assert_eq!(room.free_parts(), 16);
        // A room of nothing still lets one page through at a time.
        let tiny = AnalysisRoom::new(0);
        let one = tiny.take(1 << 30).await;
        assert!(one.is_some());
        assert_eq!(tiny.free_parts(), 0);
    }
}

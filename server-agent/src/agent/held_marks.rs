//! Files judged again and found as they were, recorded together rather than each round.
//!
//! The rolling schedule asks about a million-file site's files about 13 a second, in rounds
//! of a few. Recording each round's "judged at" was a commit of its own, twice a second: 88 KB
//! a second written (WAL frames, then their checkpoint) on a site where nothing changed,
//! about 7.6 GB a day, and a checkpoint landing in an edit's second doubled what that edit
//! wrote. Held here, they are saved once a minute or every 4,096 files, in one commit whose
//! rows sit side by side (files judged together are neighbours in the index). Until then the
//! schedule reads past them by a cursor on the index's order, so none is asked twice. A
//! process killed first loses only the record: those files are asked about again, which is
//! what their turn would have done.

use std::time::{Duration, Instant};

/// How long a mark is held at most.
const HOLD_FOR: Duration = Duration::from_secs(60);

/// How many marks are held at most.
const HOLD_AT_MOST: usize = 4096;

/// The files judged again whose record waits, and where the schedule has read to.
#[derive(Default)]
pub(super) struct HeldMarks {
    paths: Vec<String>,
    since: Option<Instant>,
    /// The last listed file handed out: `(judged, path)` in the index's order.
    read_to: Option<(i64, String)>,
}

impl HeldMarks {
    /// Where the next round of listed files starts (after this key), if anywhere.
    pub(super) fn cursor(&self) -> Option<(i64, &str)> {
        self.read_to.as_ref().map(|(j, p)| (*j, p.as_str()))
    }

    /// A listed file was handed out to be judged again, with the time it was last judged.
    pub(super) fn handed_out(&mut self, judged: i64, path: &str) {
        self.read_to = Some((judged, path.to_string()));
    }

    /// `path` was judged again and found as it was: its record waits.
    pub(super) fn hold(&mut self, path: String) {
        self.since.get_or_insert_with(Instant::now);
        self.paths.push(path);
    }

    /// Whether the held marks are to be saved now.
    pub(super) fn due(&self, now: Instant) -> bool {
        self.paths.len() >= HOLD_AT_MOST
            || self
                .since
                .is_some_and(|s| now.duration_since(s) >= HOLD_FOR)
    }

    /// The marks to save, the cursor back at the start: once saved, the files sort after
    /// everything the schedule has not reached, and a file marked to be judged first (a
    /// rule changed) sorts before the cursor.
    pub(super) fn take(&mut self) -> Vec<String> {
        self.since = None;
        self.read_to = None;
        std::mem::take(&mut self.paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_held_until_a_minute_or_4096_files_and_taking_them_rewinds_the_cursor() {
        let mut m = HeldMarks::default();
        let now = Instant::now();
        assert!(!m.due(now), "nothing held, nothing due");
        assert_eq!(m.cursor(), None);
        m.handed_out(5, "a.html");
        m.hold("a.html".into());
        assert_eq!(m.cursor(), Some((5, "a.html")));
        assert!(!m.due(Instant::now()));
        assert!(m.due(Instant::now() + HOLD_FOR), "due after a minute");
        for i in 1..HOLD_AT_MOST {
            m.hold(format!("p{i}"));
        }
        assert!(m.due(Instant::now()), "due at 4,096 files");
        assert_eq!(m.take().len(), HOLD_AT_MOST);
        assert_eq!(m.cursor(), None, "rewound");
        assert!(!m.due(Instant::now() + HOLD_FOR), "the clock restarts");
        // A file handed out but not held (changed, refused) moves the cursor all the same.
        m.handed_out(7, "b.html");
        assert!(m.take().is_empty());
    }
}

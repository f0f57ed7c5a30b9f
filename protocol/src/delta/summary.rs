//! How much of a text changed: the fraction the changes feed carries, so a crawler can tell a
//! typo fix from a rewrite without fetching anything.

use similar::{ChangeTag, TextDiff};

/// What an edit did to a text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangeSummary {
    /// (bytes deleted + bytes inserted) / (old size + new size): 0 for no change, 1 for a
    /// complete rewrite.
    pub changed_fraction: f64,
    /// Bytes of the old version that are gone.
    pub bytes_deleted: usize,
    /// Bytes of the new version that are new.
    pub bytes_inserted: usize,
    /// Whether the figures are an upper bound (the changed region was too large to diff).
    pub approximate: bool,
}

/// Changed regions up to this size (both sides together) are diffed word by word.
const WORD_DIFF_MAX: usize = 64 << 10;
/// Changed regions up to this size are diffed line by line; larger ones are counted whole.
const LINE_DIFF_MAX: usize = 2 << 20;

/// Summarises the edit from `old` to `new`. Non-UTF-8 bytes are read as U+FFFD, which is
/// enough for an estimate. Cost is bounded: the common prefix and suffix are cut off in linear
/// time, and only the changed middle is diffed (by words when small, by lines when moderate,
/// and counted as wholly changed beyond [`LINE_DIFF_MAX`]).
pub fn summarize(old: &[u8], new: &[u8]) -> ChangeSummary {
    let old = String::from_utf8_lossy(old);
    let new = String::from_utf8_lossy(new);
    let total = old.len() + new.len();
    if total == 0 || old == new {
        return ChangeSummary {
            changed_fraction: 0.0,
            bytes_deleted: 0,
            bytes_inserted: 0,
            approximate: false,
        };
    }
    let (old_mid, new_mid) = changed_middle(&old, &new);
    let (deleted, inserted, approximate) = if old_mid.len() + new_mid.len() <= WORD_DIFF_MAX {
        count(&TextDiff::from_words(old_mid, new_mid))
    } else if old_mid.len() + new_mid.len() <= LINE_DIFF_MAX {
        count(&TextDiff::from_lines(old_mid, new_mid))
    } else {
        (old_mid.len(), new_mid.len(), true)
    };
    ChangeSummary {
        changed_fraction: ((deleted + inserted) as f64 / total as f64).min(1.0),
        bytes_deleted: deleted,
        bytes_inserted: inserted,
        approximate,
    }
}

fn count<'a>(diff: &TextDiff<'a, 'a, str>) -> (usize, usize, bool) {
    let (mut deleted, mut inserted) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Delete => deleted += change.value().len(),
            ChangeTag::Insert => inserted += change.value().len(),
            ChangeTag::Equal => {}
        }
    }
    (deleted, inserted, false)
}

/// The parts of `old` and `new` between their longest common prefix and suffix, widened to
/// word boundaries so a changed word is compared whole.
fn changed_middle<'a>(old: &'a str, new: &'a str) -> (&'a str, &'a str) {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let mut prefix = ob.iter().zip(nb).take_while(|(a, b)| a == b).count();
    let max_suffix = ob.len().min(nb.len()) - prefix;
    let mut suffix = ob
        .iter()
        .rev()
        .zip(nb.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let is_space = |b: u8| b.is_ascii_whitespace();
    while prefix > 0
        && !(is_space(ob[prefix - 1])
            && old.is_char_boundary(prefix)
            && new.is_char_boundary(prefix))
    {
        prefix -= 1;
    }
    while suffix > 0 {
        let (oe, ne) = (ob.len() - suffix, nb.len() - suffix);
        if is_space(ob[oe]) && old.is_char_boundary(oe) && new.is_char_boundary(ne) {
            break;
        }
        suffix -= 1;
    }
    (
        &old[prefix..ob.len() - suffix],
        &new[prefix..nb.len() - suffix],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_texts_changed_nothing() {
        let s = summarize(b"same text", b"same text");
        assert_eq!(s.changed_fraction, 0.0);
        assert_eq!(summarize(b"", b"").changed_fraction, 0.0);
    }

    #[test]
    fn a_version_string_in_a_long_line_is_a_small_change() {
        let old = format!(
            "<html>{}Python 3.11.4 documentation{}</html>",
            "x ".repeat(5000),
            " y".repeat(5000)
        );
        let new = old.replace("3.11.4", "3.11.5");
        let s = summarize(old.as_bytes(), new.as_bytes());
        assert_eq!((s.bytes_deleted, s.bytes_inserted), (6, 6));
        assert!(s.changed_fraction < 0.001, "{s:?}");
        assert!(!s.approximate);
    }

    #[test]
    fn a_rewrite_is_a_complete_change() {
        // Only the separating spaces survive a rewrite of every word.
        let s = summarize(b"alpha beta gamma", b"one two three four");
        assert!(s.changed_fraction > 0.85, "{s:?}");
        let s = summarize(b"alpha", b"omega");
        assert_eq!(s.changed_fraction, 1.0);
        let s = summarize(b"", b"created");
        assert_eq!(s.changed_fraction, 1.0);
    }

    #[test]
    fn huge_rewrites_are_bounded_and_marked_approximate() {
        let old: String = (0..300_000).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..300_000).map(|i| format!("row {i}\n")).collect();
        let s = summarize(old.as_bytes(), new.as_bytes());
        assert!(s.approximate);
        assert!(s.changed_fraction > 0.9);
    }

    #[test]
    fn multibyte_boundaries_do_not_panic() {
        let s = summarize("héllo wörld ü".as_bytes(), "héllo wörld é".as_bytes());
        assert!(s.changed_fraction > 0.0 && s.changed_fraction < 0.5);
        let s = summarize("ééé".as_bytes(), "éèé".as_bytes());
        assert!(s.changed_fraction > 0.0);
    }
}

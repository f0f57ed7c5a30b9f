//! Volatile parts learned from the page itself: two answers for one page, fetched moments
//! apart, differ only where the server writes something anew for every request (a generation
//! time, a counter, a rotating ad slot). Each region where they differ is remembered by the
//! text around it, taken from what both answers share (up to [`ANCHOR`] bytes on each side);
//! in later answers the text between the same two anchors does not count as a change.
//!
//! Limits, on purpose: a page is learned only when it is UTF-8, when the regions are few
//! ([`MAX_MASKS`]) and cover a small part of it ([`MAX_SHARE`]), and each region is bounded by
//! shared text on both sides; an edit inside a learned region (a new figure where a counter
//! was) is not seen until the page changes elsewhere too, which is why a difference an edit
//! made between two asks is not learned from ([`super::page_check`] asks a third time). When
//! an answer no longer has a region's anchors (the template changed), what was learned is
//! dropped and learned again.

use serde::{Deserialize, Serialize};
use similar::{DiffOp, TextDiff};

/// Bytes of shared text kept on each side of a region.
const ANCHOR: usize = 32;
/// Shortest anchor before a region: less would match anywhere.
const MIN_BEFORE: usize = 8;
/// Most regions learned for one page.
const MAX_MASKS: usize = 16;
/// Most of a page the regions may cover: beyond, the page is not a page with volatile parts
/// but one that changes.
const MAX_SHARE: f64 = 0.2;
/// Longest region replaced when applied (bytes between the anchors).
const MAX_SPAN: usize = 4096;
/// Largest page learned from (both answers together are diffed word by word).
const MAX_PAGE: usize = 1 << 20;

/// One volatile region: the text just before it and just after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mask {
    /// Shared text that ends right before the region.
    pub(crate) before: String,
    /// Shared text that starts right after it.
    pub(crate) after: String,
}

/// What was learned of one page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Learned {
    /// The regions, in page order.
    pub(crate) masks: Vec<Mask>,
}

/// Why two answers could not be told apart by volatile regions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unlearnable {
    /// In words.
    pub(crate) why: String,
    /// A short excerpt of where they differ, for the console.
    pub(crate) differs_at: String,
}

/// The largest char boundary of `s` at or below `i`.
fn floor(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i`.
fn ceil(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

fn excerpt(s: &str, start: usize, end: usize) -> String {
    let (a, b) = (
        floor(s, start.saturating_sub(24)),
        ceil(s, (end + 24).min(s.len())),
    );
    let text: String = s[a..b]
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(120)
        .collect();
    format!("…{text}…")
}

/// `s` cut into tokens that join back into it: whitespace runs, markup (`<` to `>`), quotes
/// and the words between. Cut at markup as well as spaces, since minified HTML puts a generated
/// timestamp right against `</footer></body></html>`: cut at spaces alone, the differing word
/// ran to the page's end and no shared text closed the region.
fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let end = if c == b'<' {
            // A tag, to its `>` (or the end).
            memchr_gt(bytes, i).map_or(bytes.len(), |j| j + 1)
        } else if c.is_ascii_whitespace() {
            i + bytes[i..]
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(bytes.len() - i)
        } else if c == b'"' || c == b'\'' {
            // A quote alone: a value in a script's JSON ends at one.
            i + 1
        } else {
            i + bytes[i..]
                .iter()
                .position(|b| matches!(*b, b'<' | b'"' | b'\'') || b.is_ascii_whitespace())
                .unwrap_or(bytes.len() - i)
        };
        // Every cut is at an ASCII byte (or the end), so at a char boundary.
        if end > start {
            out.push(&s[start..end]);
        }
        start = end;
        i = end;
    }
    out
}

/// The index of the first `>` at or after `from`.
fn memchr_gt(bytes: &[u8], from: usize) -> Option<usize> {
    bytes[from..]
        .iter()
        .position(|b| *b == b'>')
        .map(|j| from + j)
}

/// Learns the volatile regions of a page from two answers `a` and `b`.
pub(crate) fn learn(a: &[u8], b: &[u8]) -> Result<Learned, Unlearnable> {
    let unlearnable = |why: &str, at: String| Unlearnable {
        why: why.into(),
        differs_at: at,
    };
    if a.len() + b.len() > MAX_PAGE {
        return Err(unlearnable("too large to compare", String::new()));
    }
    let (Ok(a), Ok(b)) = (std::str::from_utf8(a), std::str::from_utf8(b)) else {
        return Err(unlearnable("not UTF-8 text", String::new()));
    };
    let (old, new) = (tokens(a), tokens(b));
    let diff = TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_slices(&old, &new);
    // Byte offsets of the tokens' starts, one past the last included.
    let starts = |n: usize, len: &dyn Fn(usize) -> usize| -> Vec<usize> {
        let mut v = Vec::with_capacity(n + 1);
        let mut at = 0;
        v.push(0);
        for i in 0..n {
            at += len(i);
            v.push(at);
        }
        v
    };
    let old_tokens = starts(diff.old_len(), &|i| diff.old_slice(i).map_or(0, str::len));
    let new_tokens = starts(diff.new_len(), &|i| diff.new_slice(i).map_or(0, str::len));
    let offset = |tokens: &[usize], upto: usize| -> usize { tokens[upto.min(tokens.len() - 1)] };
    let ops = diff.ops();
    let changed: Vec<usize> = (0..ops.len())
        .filter(|i| !matches!(ops[*i], DiffOp::Equal { .. }))
        .collect();
    let region = |i: usize| {
        let old = ops[i].old_range();
        (offset(&old_tokens, old.start), offset(&old_tokens, old.end))
    };
    // First how much differs: a page mostly different, or different in many places, is a page
    // that changes, whatever its regions look like.
    let covered: usize = changed
        .iter()
        .map(|&i| {
            let (start, end) = region(i);
            let new = ops[i].new_range();
            (end - start).max(offset(&new_tokens, new.end) - offset(&new_tokens, new.start))
        })
        .sum();
    let first_at = changed
        .first()
        .map(|&i| {
            let (s, e) = region(i);
            excerpt(a, s, e)
        })
        .unwrap_or_default();
    if covered as f64 > MAX_SHARE * a.len().max(b.len()) as f64 {
        return Err(unlearnable("too much of it differs", first_at));
    }
    if changed.len() > MAX_MASKS {
        return Err(unlearnable("too many parts differ", first_at));
    }
    let equal_len = |op: Option<&DiffOp>| match op {
        Some(DiffOp::Equal { old_index, len, .. }) => {
            offset(&old_tokens, *old_index + *len) - offset(&old_tokens, *old_index)
        }
        _ => 0,
    };
    let mut masks = Vec::new();
    for &i in &changed {
        let (start, end) = region(i);
        // The shared text around the region: the equal runs on each side.
        let before_run = equal_len(i.checked_sub(1).map(|j| &ops[j]));
        let after_run = equal_len(ops.get(i + 1));
        let before = &a[ceil(a, start - before_run.min(ANCHOR).min(start))..start];
        let after = &a[end..floor(a, end + after_run.min(ANCHOR))];
        if before.len() < MIN_BEFORE || after.is_empty() {
            return Err(unlearnable(
                "a differing part is not enclosed by shared text",
                excerpt(a, start, end),
            ));
        }
        masks.push(Mask {
            before: before.to_string(),
            after: after.to_string(),
        });
    }
    let learned = Learned { masks };
    // What was learned must make the two answers one: else a region is not what it seemed.
    match (apply(a.as_bytes(), &learned), apply(b.as_bytes(), &learned)) {
        (Some(x), Some(y)) if x == y => Ok(learned),
        _ => Err(unlearnable(
            "the differing parts do not recur at the same places",
            String::new(),
        )),
    }
}

/// `body` with each learned region replaced by a marker, in page order; `None` when a
/// region's anchors are no longer there (the template changed: learn again).
pub(crate) fn apply(body: &[u8], learned: &Learned) -> Option<Vec<u8>> {
    if learned.masks.is_empty() {
        return Some(body.to_vec());
    }
    let mut out = Vec::with_capacity(body.len());
    let mut cursor = 0;
    for m in &learned.masks {
        let rest = &body[cursor..];
        let b = find(rest, m.before.as_bytes())? + m.before.len();
        let tail = &rest[b..];
        let window = &tail[..tail.len().min(MAX_SPAN + m.after.len())];
        let e = find(window, m.after.as_bytes())?;
        out.extend_from_slice(&rest[..b]);
        out.extend_from_slice(b"\x00volatile\x00");
        cursor += b + e;
    }
    out.extend_from_slice(&body[cursor..]);
    Some(out)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    memchr::memmem::find(hay, needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(time: &str, counter: u32, text: &str) -> String {
        format!(
            "<html><body><h1>Post</h1><p>{text}</p>\n<footer><p>Page generated at {time} UTC.</p>\
             <p>You are visitor number {counter} of this page.</p></footer></body></html>"
        )
    }

    #[test]
    fn a_generation_time_and_a_counter_are_learned_and_an_edit_still_counts() {
        let a = page("21:43:05.118", 1041, "Hello world.");
        let b = page("21:43:05.377", 1042, "Hello world.");
        let learned = learn(a.as_bytes(), b.as_bytes()).unwrap();
        assert_eq!(learned.masks.len(), 2, "{learned:?}");
        let later = page("09:12:00.001", 5000, "Hello world.");
        assert_eq!(
            apply(later.as_bytes(), &learned),
            apply(a.as_bytes(), &learned)
        );
        // A real edit is still a change.
        let edited = page("09:12:00.001", 5000, "Hello, world!");
        assert_ne!(
            apply(edited.as_bytes(), &learned),
            apply(a.as_bytes(), &learned)
        );
        // A new template: the anchors are gone, learn again.
        let redesigned = later.replace("Page generated at", "Built");
        assert_eq!(apply(redesigned.as_bytes(), &learned), None);
    }

    #[test]
    fn a_page_that_is_mostly_different_or_not_text_is_not_learned() {
        let a = "<p>quote: the quick brown fox</p>".repeat(3);
        let b = "<p>quote: a lazy dog sleeps all day</p>".repeat(3);
        assert!(learn(a.as_bytes(), b.as_bytes()).is_err());
        // Enclosed by shared text, but most of the page: a page that changes.
        let big = |w: &str| {
            format!(
                "<html><body><p>the start of the page</p><div>{}</div><p>the end of it</p></body></html>",
                format!("{w} ").repeat(300)
            )
        };
        let e = learn(big("alpha").as_bytes(), big("omega").as_bytes()).unwrap_err();
        assert!(
            e.why.contains("too much") || e.why.contains("too many"),
            "{e:?}"
        );
        assert!(learn(&[0xff, 0xfe, 0x00], &[0xff, 0xfe, 0x01]).is_err());
        // A difference at the very start has no shared text before it.
        let e = learn(
            b"1 apple and a pear, said the page",
            b"2 apple and a pear, said the page",
        )
        .unwrap_err();
        assert!(e.why.contains("enclosed"), "{e:?}");
        assert!(!e.differs_at.is_empty());
    }

    #[test]
    fn a_timestamp_against_the_closing_markup_of_a_minified_page_is_learned() {
        let page = |t: &str| {
            format!(
                "<!DOCTYPE html><html><head><title>Report</title></head><body><main><p>{}</p></main><footer>Generated {t}</footer></body></html>",
                "The same words on every answer. ".repeat(20)
            )
        };
        let (a, b) = (page("2026-12-06T12:00:05Z"), page("2026-12-06T12:00:07Z"));
        let learned = learn(a.as_bytes(), b.as_bytes()).unwrap();
        assert_eq!(learned.masks.len(), 1);
        assert!(
            learned.masks[0].after.starts_with("</footer>"),
            "{learned:?}"
        );
        let c = page("2026-12-06T13:14:15Z");
        assert_eq!(apply(a.as_bytes(), &learned), apply(c.as_bytes(), &learned));
        // An edit of the text still counts.
        let edited = page("2026-12-06T12:00:09Z").replace("every answer", "one answer");
        assert_ne!(
            apply(a.as_bytes(), &learned),
            apply(edited.as_bytes(), &learned)
        );
        // The tokens join back into the page, whatever it holds.
        for s in [
            a.as_str(),
            "",
            "<",
            "a<b",
            "x >y< z",
            "é<é>é \t\n",
            "{\"t\":'1'}",
        ] {
            assert_eq!(tokens(s).concat(), s);
        }
    }

    #[test]
    fn identical_answers_learn_nothing_and_apply_keeps_the_page() {
        let a = page("t", 1, "x");
        let learned = learn(a.as_bytes(), a.as_bytes()).unwrap();
        assert!(learned.masks.is_empty());
        assert_eq!(apply(a.as_bytes(), &learned).unwrap(), a.as_bytes());
    }
}

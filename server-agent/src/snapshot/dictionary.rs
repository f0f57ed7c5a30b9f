//! The Zstandard dictionary of a snapshot. Each record is its own frame (so an index can point
//! at it and a crawler can skip one), so nothing is shared between records but the dictionary:
//! on a documentation site, where every page repeats the same navigation, it decides the size
//! of the file. It is trained on whole records (their WARC headers too, which are a fifth of a
//! small page's frame otherwise), by fastCOVER (see `webcoop_protocol::warc::train_fast_cover`), and
//! chosen by measure: a megabyte of dictionary is a loss on a small site, so it and zstd's
//! default small one are each measured on records held out of training, and the one that makes
//! the smallest file wins.

use super::{Plan, Source, content, entry_of, record_id};
use crate::content_type;
use chrono::{DateTime, Utc};
use url::Url;
use webcoop_protocol::warc::{frames_size, record_bytes, train_dictionary, train_fast_cover};

/// Size of the large candidate: a megabyte holds a documentation site's repeated navigation,
/// footers and scripts (Rust docs: 0.079 of the content against 0.099 with zstd's default
/// 110 KiB, and compressed faster).
const LARGE: usize = 1 << 20;
/// Size of the small candidate (zstd's own default).
const SMALL: usize = 112_640;
/// Bytes of records the large candidate is trained on at most: held twice while training
/// (the samples and their joined copy), besides the trainer's fixed 24 MiB; on the Rust
/// documentation 16 MiB made a file 1.2% smaller than 8 MiB did, 32 MiB 2.8% larger (with
/// COVER, the trainer before).
const TRAINING_BYTES: usize = 16 << 20;
/// Bytes of records the small candidate is trained on at most.
const SMALL_TRAINING_BYTES: usize = 8 << 20;
/// One record in this many of those sampled is held out of training, to measure the
/// candidates on (2.3 MiB at most).
const HELD_OUT_EVERY: usize = 8;
/// Bytes of records held out at most.
const HELD_OUT_BYTES: usize = TRAINING_BYTES / (HELD_OUT_EVERY - 1);
/// Below this many samples zstd cannot train; the file is then written without a dictionary.
const FEWEST_SAMPLES: usize = 16;
/// Largest file sampled (a few large files would otherwise be most of what is trained on).
const LARGEST_SAMPLE: u64 = 1 << 20;

/// Records sampled evenly over the site's text files: those to train on, joined (the trainer
/// takes them so), and those held out.
struct Samples {
    joined: Vec<u8>,
    lengths: Vec<usize>,
    held_out: Vec<Vec<u8>>,
    /// Bytes of text records in the whole snapshot.
    text_bytes: u64,
}

impl Samples {
    fn take(source: &Source, plan: &Plan, base: &Url, now: DateTime<Utc>) -> Samples {
        // Read twice rather than collected: at a million files a list of them was 48 MB at
        // the agent's peak.
        let is_text = |rel: &str, size: u64| {
            size <= LARGEST_SAMPLE && content_type::is_text(content_type::of_path(rel))
        };
        let mut text_bytes = 0u64;
        let counted = plan.files.for_each(|rel, _, size, _| {
            if is_text(rel, size) {
                text_bytes += size;
            }
            Ok(true)
        });
        let mut s = Samples {
            joined: Vec::new(),
            lengths: Vec::new(),
            held_out: Vec::new(),
            text_bytes,
        };
        if counted.is_err() {
            return s;
        }
        // Spread over the whole site, in path order: a sample that stopped early would not
        // know the last directories' pages.
        let wanted = (TRAINING_BYTES + HELD_OUT_BYTES) as u64;
        let step = (text_bytes / wanted).max(1) as usize;
        let (mut held_bytes, mut i, mut nth) = (0, 0usize, 0usize);
        // A sample cut short by a read error of the state is still a sample.
        let _ = plan.files.for_each(|rel, sha256, size, _| {
            if !is_text(rel, size) {
                return Ok(true);
            }
            nth += 1;
            if (nth - 1) % step != 0 {
                return Ok(true);
            }
            let held = i % HELD_OUT_EVERY == HELD_OUT_EVERY / 2;
            i += 1;
            let full = if held {
                held_bytes >= HELD_OUT_BYTES
            } else {
                s.joined.len() >= TRAINING_BYTES
            };
            if full {
                return Ok(held_bytes < HELD_OUT_BYTES || s.joined.len() < TRAINING_BYTES);
            }
            let Some(body) = content(source, rel, sha256, size) else {
                return Ok(true);
            };
            let entry = entry_of(base, rel, sha256, body);
            let fields = entry.fields(&record_id(), now);
            let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let record = record_bytes(&fields, &entry.body);
            if held {
                held_bytes += record.len();
                s.held_out.push(record);
            } else {
                s.lengths.push(record.len());
                s.joined.extend_from_slice(&record);
            }
            Ok(true)
        });
        s
    }

    /// The training records, every `every`-th from `first`, up to `limit` bytes.
    fn subset(&self, first: usize, every: usize, limit: usize) -> Vec<&[u8]> {
        let mut at = 0;
        let mut out = Vec::new();
        let mut taken = 0;
        for (i, len) in self.lengths.iter().enumerate() {
            let record = &self.joined[at..at + len];
            at += len;
            if i % every == first && taken < limit {
                taken += len;
                out.push(record);
            }
        }
        out
    }
}

/// The dictionary that makes the smallest snapshot of `plan` at `level`, or none.
pub(super) fn choose(
    source: &Source,
    plan: &Plan,
    base: &Url,
    level: i32,
    now: DateTime<Utc>,
) -> Option<Vec<u8>> {
    let samples = Samples::take(source, plan, base, now);
    if samples.lengths.len() < FEWEST_SAMPLES {
        return None;
    }
    let spread = (samples.joined.len() / SMALL_TRAINING_BYTES).max(1);
    let small = train_dictionary(&samples.subset(0, spread, SMALL_TRAINING_BYTES), SMALL);
    if samples.held_out.len() < FEWEST_SAMPLES / 2 {
        // Too small a site to measure a choice on: the small dictionary, as always before.
        return small;
    }
    let candidates = [
        train_fast_cover(&samples.subset(0, 1, TRAINING_BYTES), LARGE),
        small,
    ];
    let held: Vec<&[u8]> = samples.held_out.iter().map(Vec::as_slice).collect();
    let held_bytes: u64 = held.iter().map(|r| r.len() as u64).sum();
    // Each candidate's estimate of the file: the held-out records' frames scaled to the
    // site's text, plus the dictionary itself.
    let estimate = |dict: Option<&[u8]>| -> Option<f64> {
        let frames = frames_size(dict, level, &held).ok()?;
        let scaled = frames as f64 * samples.text_bytes as f64 / held_bytes.max(1) as f64;
        Some(scaled + dict.map_or(0, <[u8]>::len) as f64)
    };
    let mut best: (Option<Vec<u8>>, f64) = (None, estimate(None)?);
    for dict in candidates.into_iter().flatten() {
        if let Some(size) = estimate(Some(&dict))
            && size < best.1
        {
            best = (Some(dict), size);
        }
    }
    tracing::debug!(
        "snapshot dictionary: {} bytes, its text estimated at {:.0} bytes",
        best.0.as_ref().map_or(0, Vec::len),
        best.1
    );
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use webcoop_protocol::snapshot::Entry;
    use webcoop_protocol::validator::Sha256Digest;

    /// A documentation-like site of `n` pages in twelve sections, each section's pages sharing
    /// its navigation (together more than a small dictionary holds), each page with its own text.
    fn site(n: usize) -> (tempfile::TempDir, Plan) {
        let dir = tempfile::tempdir().expect("tempdir");
        let navs: Vec<String> = (0..12)
            .map(|s| {
                (0..400)
                    .map(|i| {
                        let name = (s * 1_000_003 + i * 7_919) % 9_999_991;
                        format!("<li><a href=\"/s{s}/item{name}.html\">item{name}</a></li>")
                    })
                    .collect()
            })
            .collect();
        let mut files = Vec::new();
        for p in 0..n {
            let nav = &navs[p % navs.len()];
            let text: String = (0..40)
                .map(|w| format!("w{} ", (p * 7919 + w * 104_729) % 100_003))
                .collect();
            let page = format!(
                "<!DOCTYPE html><html><head><title>Page {p}</title></head><body>\
                 <nav><ul>{nav}</ul></nav><main><h1>Page {p}</h1><p>{text}</p></main></body></html>"
            );
            let rel = format!("p{p:05}.html");
            std::fs::write(dir.path().join(&rel), &page).expect("write");
            let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
            files.push((
                rel,
                Sha256Digest::of(page.as_bytes()),
                page.len() as u64,
                at,
            ));
        }
        let plan = Plan {
            sequence: 1,
            files: files.into_iter().collect(),
            dump: false,
        };
        (dir, plan)
    }

    /// Every record of the site as frames with `dict`, plus the dictionary.
    fn file_size(dir: &std::path::Path, plan: &Plan, dict: Option<&[u8]>) -> u64 {
        let base = Url::parse("http://127.0.0.1/").unwrap();
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let records: Vec<Vec<u8>> = plan
            .files
            .listed()
            .into_iter()
            .map(|(rel, sha256, _, _)| {
                let entry = Entry {
                    url: crate::urls::url_of(&base, &rel).to_string(),
                    content_type: "text/html".into(),
                    sha256,
                    body: std::fs::read(dir.join(&rel)).unwrap(),
                };
                let fields = entry.fields(&record_id(), at);
                let fields: Vec<(&str, &str)> =
                    fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
                record_bytes(&fields, &entry.body)
            })
            .collect();
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        frames_size(dict, 12, &refs).unwrap() + dict.map_or(0, |d| d.len() as u64)
    }

    #[test]
    fn a_large_site_gets_the_dictionary_that_makes_the_smaller_file() {
        let (dir, plan) = site(1500);
        let base = Url::parse("http://127.0.0.1/").unwrap();
        let now = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let source = Source::Docroot(dir.path().to_path_buf());
        let chosen = choose(&source, &plan, &base, 12, now).expect("a dictionary");
        // The large candidate is the one measured best here (so the choice is exercised).
        assert!(chosen.len() > SMALL, "{} bytes", chosen.len());
        let texts: Vec<Vec<u8>> = plan
            .files
            .listed()
            .into_iter()
            .map(|(rel, ..)| std::fs::read(dir.path().join(rel)).unwrap())
            .collect();
        let refs: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
        let small = train_dictionary(&refs, SMALL).expect("small");
        let with_chosen = file_size(dir.path(), &plan, Some(&chosen));
        let with_small = file_size(dir.path(), &plan, Some(&small));
        let without = file_size(dir.path(), &plan, None);
        assert!(
            with_chosen < with_small && with_chosen < without,
            "{with_chosen} against {with_small} (small) and {without} (none)"
        );
    }

    #[test]
    fn a_small_site_gets_the_small_dictionary_or_none() {
        let base = Url::parse("http://127.0.0.1/").unwrap();
        let now = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let (dir, plan) = site(10);
        let source = Source::Docroot(dir.path().to_path_buf());
        assert_eq!(
            choose(&source, &plan, &base, 12, now),
            None,
            "too few to train"
        );
        let (dir, plan) = site(60);
        let source = Source::Docroot(dir.path().to_path_buf());
        let chosen = choose(&source, &plan, &base, 12, now).expect("a dictionary");
        assert!(chosen.len() <= SMALL, "{} bytes", chosen.len());
    }
}

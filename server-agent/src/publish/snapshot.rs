//! Where the agent's snapshots of the whole site are published (see
//! `webcoop_protocol::snapshot`): their directory under the output directory, the newest
//! complete one, and its URL. Building one is `crate::snapshot`.

use std::path::{Path, PathBuf};
use url::Url;
use webcoop_protocol::snapshot;

/// The directory snapshots are written to, under the output directory.
pub(crate) fn directory(out: &Path) -> PathBuf {
    out.join(snapshot::DIRECTORY)
}

/// The newest complete snapshot in `out` (its index written, which happens last), if any.
pub(crate) fn newest(out: &Path) -> Option<u64> {
    std::fs::read_dir(directory(out))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".cdxj"))
        .filter_map(|n| snapshot::sequence_of(&n))
        .filter(|seq| directory(out).join(snapshot::file_name(*seq)).is_file())
        .max()
}

/// The largest content the snapshot at `sequence` holds, as its `warcinfo` states it.
pub(crate) fn max_record_of(out: &Path, sequence: u64) -> Option<u64> {
    let file = std::fs::File::open(directory(out).join(snapshot::file_name(sequence))).ok()?;
    let first = webcoop_protocol::warc::ZstdWarcReader::new(file, 1 << 20)
        .ok()?
        .next_record()
        .ok()??;
    snapshot::SnapshotInfo::from_record(&first.record)
        .ok()?
        .max_record
}

/// Removes every snapshot and its index from `out` (what they hold was withdrawn); returns how
/// many files went.
pub(crate) fn remove_all(out: &Path) -> usize {
    let dir = directory(out);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| snapshot::sequence_of(n).is_some())
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// The URL of the snapshot at `sequence` for the site at `base`.
pub(crate) fn url_of(base: &Url, sequence: u64) -> Url {
    base.join(snapshot::DIRECTORY)
        .and_then(|d| d.join(&snapshot::file_name(sequence)))
        .unwrap_or_else(|_| base.clone())
}

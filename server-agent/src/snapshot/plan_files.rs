//! The files a snapshot is built from, copied from the inventory at one sequence number (the
//! build runs beside the watcher, which goes on changing the inventory): their paths in one
//! buffer rather than a string each, 40 bytes a file fewer at a million files.

use chrono::{DateTime, Utc};
use webcoop_protocol::validator::Sha256Digest;

/// Files in path order: path, digest, size, when each last changed.
#[derive(Debug, Default)]
pub(crate) struct PlanFiles {
    paths: String,
    ends: Vec<u32>,
    /// Digest, size and when it last changed (in ms, as the state keeps it: 8 bytes where a
    /// `DateTime` takes 12, and the tuple 48 where it took 56).
    meta: Vec<(Sha256Digest, u64, i64)>,
}

impl PlanFiles {
    /// Room for `n` files.
    pub(crate) fn with_capacity(n: usize) -> PlanFiles {
        PlanFiles {
            paths: String::with_capacity(n * 24),
            ends: Vec::with_capacity(n),
            meta: Vec::with_capacity(n),
        }
    }

    /// Adds a file; `false` (and nothing added) once the paths would pass 4 GiB.
    pub(crate) fn push(
        &mut self,
        path: &str,
        sha256: Sha256Digest,
        size: u64,
        modified: DateTime<Utc>,
    ) -> bool {
        let Ok(end) = u32::try_from(self.paths.len() + path.len()) else {
            return false;
        };
        self.paths.push_str(path);
        self.ends.push(end);
        self.meta.push((sha256, size, modified.timestamp_millis()));
        true
    }

    /// How many files.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The files, in the order added.
    pub(crate) fn iter(
        &self,
    ) -> impl Iterator<Item = (&str, &Sha256Digest, u64, DateTime<Utc>)> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .zip(&self.meta)
            .map(|((start, end), (sha, size, modified))| {
                (
                    &self.paths[start as usize..*end as usize],
                    sha,
                    *size,
                    DateTime::from_timestamp_millis(*modified).unwrap_or(DateTime::UNIX_EPOCH),
                )
            })
    }
}

impl FromIterator<(String, Sha256Digest, u64, DateTime<Utc>)> for PlanFiles {
    fn from_iter<I: IntoIterator<Item = (String, Sha256Digest, u64, DateTime<Utc>)>>(
        iter: I,
    ) -> Self {
        let mut files = PlanFiles::default();
        for (path, sha, size, modified) in iter {
            files.push(&path, sha, size, modified);
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_come_back_as_added() {
        let at = DateTime::from_timestamp_millis(1_800_000_000_123).unwrap();
        let given: Vec<(String, Sha256Digest, u64, DateTime<Utc>)> =
            ["", "a.html", "d/é.html", "x"]
                .iter()
                .enumerate()
                .map(|(i, p)| (p.to_string(), Sha256Digest::of(p.as_bytes()), i as u64, at))
                .collect();
        let files: PlanFiles = given.clone().into_iter().collect();
        assert_eq!(files.len(), 4);
        let back: Vec<_> = files
            .iter()
            .map(|(p, s, n, m)| (p.to_string(), *s, n, m))
            .collect();
        assert_eq!(back, given);
    }
}

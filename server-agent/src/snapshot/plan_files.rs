//! The files a snapshot is built from, at one sequence number (the build runs beside the
//! watcher, which goes on changing the inventory): read from the state inside one read
//! transaction (`store::FrozenFiles`), where a copy of the inventory held 69 MB at a million
//! files for the whole build; or, in the build's tests, listed.

use crate::store::FrozenFiles;
use chrono::{DateTime, Utc};
use webcoop_protocol::validator::Sha256Digest;

/// Files in path order: path, digest, size, when each last changed.
pub(crate) enum PlanFiles {
    /// Read from the state as of one commit.
    Frozen(FrozenFiles),
    /// Listed in memory.
    #[cfg(test)]
    Listed(Vec<(String, Sha256Digest, u64, DateTime<Utc>)>),
}

impl PlanFiles {
    /// How many files.
    pub(crate) fn len(&self) -> usize {
        match self {
            PlanFiles::Frozen(f) => f.len(),
            #[cfg(test)]
            PlanFiles::Listed(l) => l.len(),
        }
    }

    /// Each file in path order until `f` answers `false`.
    pub(crate) fn for_each(
        &self,
        f: impl FnMut(&str, &Sha256Digest, u64, DateTime<Utc>) -> std::io::Result<bool>,
    ) -> std::io::Result<()> {
        match self {
            PlanFiles::Frozen(frozen) => frozen.for_each(f),
            #[cfg(test)]
            PlanFiles::Listed(l) => {
                let mut f = f;
                for (path, sha, size, modified) in l {
                    if !f(path, sha, *size, *modified)? {
                        break;
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
impl PlanFiles {
    /// Every file, read into a list.
    pub(crate) fn listed(&self) -> Vec<(String, Sha256Digest, u64, DateTime<Utc>)> {
        let mut all = Vec::new();
        self.for_each(|p, sha, size, modified| {
            all.push((p.to_string(), *sha, size, modified));
            Ok(true)
        })
        .expect("listed");
        all
    }
}

#[cfg(test)]
impl FromIterator<(String, Sha256Digest, u64, DateTime<Utc>)> for PlanFiles {
    fn from_iter<I: IntoIterator<Item = (String, Sha256Digest, u64, DateTime<Utc>)>>(
        iter: I,
    ) -> Self {
        PlanFiles::Listed(iter.into_iter().collect())
    }
}

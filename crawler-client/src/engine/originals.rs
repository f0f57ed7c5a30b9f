//! Where each content digest was first met, held in memory so that the state needs no index
//! on digests: a duplicate's original is read through the fingerprint index instead.
//!
//! An index keyed by a content digest takes its entries at random keys, so each save dirtied
//! a leaf of it per page (a fifth of the log's frames at the web's shape, growing with the
//! pages saved). An entry here is the digest's low 32 bits and the first 32 bits of the
//! original's fingerprint, the eight bytes the set of whole digests held before. Two digests
//! that share their low bits keep the first: the second's duplicates are then not found (they
//! are archived whole, as a page never met before), about a hundred pages in a million.
//! A match is only ever a question: the state answers it from the page's row, which must
//! still hold that digest, content with the same SHA-256, and be an original.

use crate::ids::Fp;
use std::collections::HashMap;

/// The first page met with each content digest, as a prefix of its fingerprint.
#[derive(Default)]
pub(super) struct Originals {
    by_digest: HashMap<u32, u32>,
}

impl Originals {
    /// Records that `digest` was met at page `fp`; true if it was not met before (no page to
    /// ask about).
    pub(super) fn first_met(&mut self, digest: u64, fp: Fp) -> bool {
        match self.by_digest.entry(digest as u32) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(fp.prefix());
                true
            }
        }
    }

    /// The fingerprint prefix of the page `digest` may have been first met at.
    pub(super) fn candidate(&self, digest: u64) -> Option<u32> {
        self.by_digest.get(&(digest as u32)).copied()
    }

    /// Digests held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_digest.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_first_met_once_and_names_the_prefix_of_its_page() {
        let mut o = Originals::default();
        let page = Fp(0xdead_beef_0000_0001);
        assert!(o.first_met(0x1111_2222_3333_4444, page));
        assert!(!o.first_met(0x1111_2222_3333_4444, Fp(7)), "met before");
        assert_eq!(o.candidate(0x1111_2222_3333_4444), Some(0xdead_beef));
        // The twin: a digest never met names no page.
        assert_eq!(o.candidate(0x1111_2222_3333_4445), None);
        assert_eq!(o.len(), 1);
    }

    #[test]
    fn digests_sharing_their_low_bits_keep_the_first_page() {
        let mut o = Originals::default();
        assert!(o.first_met(0xaaaa_aaaa_0000_0005, Fp(1 << 32)));
        // Another content whose digest ends alike is not "first met": the state is asked,
        // and its row's whole digest tells the two apart.
        assert!(!o.first_met(0xbbbb_bbbb_0000_0005, Fp(2 << 32)));
        assert_eq!(o.candidate(0xbbbb_bbbb_0000_0005), Some(1));
    }
}

//! Nonces seen, so that a signature is accepted once: a replayed request (anyone who saw one
//! can resend it until it expires) is refused. Kept until their signature expires, at most
//! [`MAX_NONCES`]; when full, a new nonce is refused rather than an old one forgotten.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Nonces kept at most.
pub(crate) const MAX_NONCES: usize = 200_000;

#[derive(Default)]
struct Seen {
    by_nonce: HashMap<String, i64>,
    by_expiry: BTreeMap<(i64, String), ()>,
}

/// The nonces of signatures still valid.
#[derive(Default)]
pub(crate) struct Replays(Mutex<Seen>);

impl Replays {
    /// Records `nonce` of `identity`'s signature valid until `expires`; `Err` if it was seen,
    /// or if no more can be kept.
    pub(crate) fn first_use(
        &self,
        identity: &str,
        nonce: &str,
        expires: i64,
        now: i64,
    ) -> Result<(), &'static str> {
        let Ok(mut seen) = self.0.lock() else {
            return Err("the replay check is unavailable");
        };
        while let Some(((t, key), ())) = seen.by_expiry.first_key_value() {
            if *t > now {
                break;
            }
            let key = key.clone();
            let t = *t;
            seen.by_expiry.remove(&(t, key.clone()));
            seen.by_nonce.remove(&key);
        }
        let key = format!("{identity} {nonce}");
        if seen.by_nonce.contains_key(&key) {
            return Err("the signature was used before (a replay)");
        }
        if seen.by_nonce.len() >= MAX_NONCES {
            return Err("too many signatures in flight to check for replays");
        }
        seen.by_nonce.insert(key.clone(), expires);
        seen.by_expiry.insert((expires, key), ());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_good_once_until_it_expires() {
        let r = Replays::default();
        assert!(r.first_use("a", "n1", 100, 10).is_ok());
        assert!(r.first_use("a", "n1", 100, 20).is_err());
        assert!(
            r.first_use("b", "n1", 100, 20).is_ok(),
            "another signer's nonce"
        );
        // Once the signature expired it cannot verify anyway; the nonce is forgotten.
        assert!(r.first_use("a", "n1", 200, 101).is_ok());
    }
}

//! A site's IndexNow submissions, as a receiving engine keeps them: its keys and whether each
//! was proved by its key file (fetched from the site, politely, once per key and again a day
//! later), and the URLs waiting for their key's proof. Unproved submissions change nothing; a key whose file does not hold it is refused for an
//! hour, its URLs dropped. The owner of these rules, saved with the site
//! ([`super::site::SiteCoop`]); the coordinator asks for key files and makes URLs due
//! (`super::indexnow_reading`).

use serde::{Deserialize, Serialize};
use url::Url;

/// Keys kept per site.
const MAX_KEYS: usize = 4;

/// URLs waiting for their key's proof, per site.
const MAX_PENDING: usize = 10_000;

/// How long a proof holds before the key file is fetched again (ms).
const PROOF_MS: i64 = 86_400_000;

/// How long a refused key stays refused (ms).
const REFUSAL_MS: i64 = 3_600_000;

/// Whether a key's file proved it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Proof {
    /// Asked for, not answered yet.
    Asked,
    /// Its file holds the key.
    Proved,
    /// Its file does not (missing, or another content).
    Refused,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Key {
    key: String,
    file: String,
    located: bool,
    proof: Proof,
    /// When it was last asked or answered (ms).
    at: i64,
}

/// What a submission comes to.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Taken {
    /// URLs to make due now (their key is proved).
    pub(crate) due: Vec<Url>,
    /// The key file to fetch (a key not proved, or proved more than a day ago).
    pub(crate) fetch: Option<Url>,
    /// Whether the key is refused (the submission changes nothing).
    pub(crate) refused: bool,
    /// URLs dropped: outside the key's folder, or past the waiting room's bound.
    pub(crate) dropped: usize,
}

/// A site's IndexNow state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SiteIndexNow {
    keys: Vec<Key>,
    /// URLs waiting: (key file, URL).
    pending: Vec<(String, String)>,
}

impl SiteIndexNow {
    /// Whether a key of the site is proved now.
    pub(crate) fn proved(&self) -> bool {
        self.keys.iter().any(|k| k.proof == Proof::Proved)
    }

    /// A submission of `urls` under `key`, proved by `file` (`located`: a key location, which
    /// covers only its folder), at `now`.
    pub(crate) fn submitted(
        &mut self,
        (key, file, located): (&str, &Url, bool),
        urls: &[Url],
        now: i64,
    ) -> Taken {
        let mut out = Taken::default();
        let covered: Vec<&Url> = urls
            .iter()
            .filter(|u| webcoop_protocol::indexnow::covers(file, located, u))
            .collect();
        out.dropped = urls.len() - covered.len();
        let at = match self
            .keys
            .iter()
            .position(|k| k.key == key && k.file == file.as_str())
        {
            Some(i) => i,
            None => {
                // A new key takes the place of the oldest one not proved; a site whose keys are
                // all proved takes no more (a stranger's keys cannot push out the site's own).
                if self.keys.len() >= MAX_KEYS {
                    match self.keys.iter().position(|k| k.proof != Proof::Proved) {
                        Some(i) => {
                            let old = self.keys.remove(i);
                            self.pending.retain(|(f, _)| *f != old.file);
                        }
                        None => {
                            out.refused = true;
                            out.dropped = urls.len();
                            return out;
                        }
                    }
                }
                self.keys.push(Key {
                    key: key.to_string(),
                    file: file.to_string(),
                    located,
                    proof: Proof::Asked,
                    at: now,
                });
                out.fetch = Some(file.clone());
                self.keys.len() - 1
            }
        };
        let k = &mut self.keys[at];
        match k.proof {
            Proof::Refused if now - k.at < REFUSAL_MS => {
                out.refused = true;
                out.dropped = urls.len();
                return out;
            }
            Proof::Refused => {
                k.proof = Proof::Asked;
                k.at = now;
                out.fetch = Some(file.clone());
            }
            Proof::Proved if now - k.at >= PROOF_MS => {
                // Still proved while its file is fetched again.
                k.at = now;
                out.fetch = Some(file.clone());
            }
            _ => {}
        }
        let proved = k.proof == Proof::Proved;
        if proved {
            out.due = covered.iter().map(|u| (*u).clone()).collect();
        } else {
            let room = MAX_PENDING
                .saturating_sub(self.pending.len())
                .min(covered.len());
            out.dropped += covered.len() - room;
            self.pending.extend(
                covered[..room]
                    .iter()
                    .map(|u| (file.to_string(), u.to_string())),
            );
        }
        out
    }

    /// The key file at `file` answered at `now` with `body` (none: no file, or an error): the
    /// key it was asked for, whether the file proves it, and the URLs that waited for it (to
    /// make due when proved; dropped otherwise).
    pub(crate) fn answered(
        &mut self,
        file: &Url,
        body: Option<&[u8]>,
        now: i64,
    ) -> (Option<String>, bool, Vec<Url>) {
        let mut key = None;
        let mut proved = false;
        for k in self.keys.iter_mut().filter(|k| k.file == file.as_str()) {
            proved = body.is_some_and(|b| webcoop_protocol::indexnow::proves(b, &k.key));
            k.proof = if proved {
                Proof::Proved
            } else {
                Proof::Refused
            };
            k.at = now;
            key = Some(k.key.clone());
        }
        let (waiting, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(f, _)| f == file.as_str());
        self.pending = rest;
        if !proved {
            return (key, false, Vec::new());
        }
        let due = waiting
            .into_iter()
            .filter_map(|(_, u)| Url::parse(&u).ok())
            .collect();
        (key, true, due)
    }

    /// The key answering `key` at `file`, as the server tells a submitter.
    #[cfg(test)]
    pub(crate) fn proof_of(&self, key: &str, file: &Url) -> Option<Proof> {
        self.keys
            .iter()
            .find(|k| k.key == key && k.file == file.as_str())
            .map(|k| k.proof)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn urls_wait_for_their_key_and_a_refused_key_changes_nothing() {
        let mut s = SiteIndexNow::default();
        let file = u("http://a.test/k0123456789.txt");
        let key = ("k0123456789", &file, false);
        let t = s.submitted(key, &[u("http://a.test/1"), u("http://a.test/2")], 0);
        assert_eq!(t.fetch, Some(file.clone()));
        assert!(t.due.is_empty() && !t.refused && t.dropped == 0);
        // A second submission before the proof: waits too, no second fetch.
        let t = s.submitted(key, &[u("http://a.test/3")], 10);
        assert_eq!((t.fetch, t.due.len()), (None, 0));
        assert_eq!(s.proof_of("k0123456789", &file), Some(Proof::Asked));
        let (key_of, proved, due) = s.answered(&file, Some(b"k0123456789\n"), 20);
        assert_eq!(
            (key_of.as_deref(), proved, due.len()),
            (Some("k0123456789"), true, 3)
        );
        assert!(s.proved());
        // Proved: due at once.
        let t = s.submitted(key, &[u("http://a.test/4")], 30);
        assert_eq!(t.due, [u("http://a.test/4")]);
        assert_eq!(t.fetch, None);
        // A day later, the file is fetched again while the key still counts.
        let t = s.submitted(key, &[u("http://a.test/5")], 30 + PROOF_MS);
        assert_eq!((t.fetch.is_some(), t.due.len()), (true, 1));
        // Its file no longer holds it: refused for an hour.
        assert!(!s.answered(&file, Some(b"another key"), 40 + PROOF_MS).1);
        let t = s.submitted(key, &[u("http://a.test/6")], 50 + PROOF_MS);
        assert!(t.refused && t.due.is_empty() && t.fetch.is_none());
        assert!(!s.proved());
    }

    #[test]
    fn keys_submitted_by_strangers_never_push_out_a_proved_one() {
        let mut s = SiteIndexNow::default();
        let own = u("http://a.test/own0000000.txt");
        s.submitted(("own0000000", &own, false), &[u("http://a.test/1")], 0);
        s.answered(&own, Some(b"own0000000"), 1);
        for i in 0..10 {
            let file = u(&format!("http://a.test/k{i}00000000.txt"));
            let t = s.submitted(
                (&format!("k{i}00000000"), &file, false),
                &[u("http://a.test/2")],
                2,
            );
            assert!(t.due.is_empty());
        }
        assert_eq!(s.keys.len(), MAX_KEYS);
        assert_eq!(s.proof_of("own0000000", &own), Some(Proof::Proved));
        let t = s.submitted(("own0000000", &own, false), &[u("http://a.test/3")], 3);
        assert_eq!(t.due, [u("http://a.test/3")]);
        // Evicted keys take their waiting URLs with them.
        assert!(s.pending.len() <= MAX_KEYS);
        // Every key proved: a new one is refused, not fetched.
        for k in s.keys.clone() {
            let f = u(&k.file);
            s.answered(&f, Some(k.key.as_bytes()), 4);
        }
        let extra = u("http://a.test/x000000000.txt");
        let t = s.submitted(("x000000000", &extra, false), &[u("http://a.test/4")], 5);
        assert!(t.refused && t.fetch.is_none());
    }

    #[test]
    fn a_key_location_covers_its_folder_and_the_waiting_room_is_bounded() {
        let mut s = SiteIndexNow::default();
        let file = u("http://a.test/blog/key0000000.txt");
        let key = ("key0000000", &file, true);
        let many: Vec<Url> = (0..MAX_PENDING + 5)
            .map(|i| u(&format!("http://a.test/blog/{i}")))
            .chain([u("http://a.test/shop/z")])
            .collect();
        let t = s.submitted(key, &many, 0);
        assert_eq!(t.dropped, 6);
        assert_eq!(
            s.answered(&file, Some(b"key0000000"), 1).2.len(),
            MAX_PENDING
        );
        let t = s.submitted(
            key,
            &[u("http://a.test/blog/y"), u("http://a.test/shop/z")],
            2,
        );
        assert_eq!((t.due.len(), t.dropped), (1, 1));
    }
}

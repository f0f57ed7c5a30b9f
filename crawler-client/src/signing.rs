//! Signing each request (Web Bot Auth) with the newest valid key of the operator's key file.
//!
//! The file is read again when it changes (looked at once a second at most), so a key added by
//! `webcoop-crawl keys new` is used from its `nbf` on without a restart: keys rotate during a
//! crawl. A file that stops parsing keeps the keys read last, and says so once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use url::Url;
use webcoop_protocol::bot_auth::keys::{ActiveKey, KeySet};
use webcoop_protocol::bot_auth::sign::{
    Component, Ed25519Key, PAGE_REQUEST, STATE_CHANGING, SignParams, SignatureHeaders, Target,
    requested_components, sign_request,
};

/// How long a signature is valid: long enough for a slow request, short against replays.
pub(crate) const LIFETIME_SECS: i64 = 300;
/// How often the key file is looked at.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// Which requests are signed.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum SignWhen {
    /// Every request.
    #[default]
    Always,
    /// Requests to sites that asked, with `Accept-Signature`.
    Asked,
}

/// What the signer was set up with.
#[derive(Debug, Clone)]
pub(crate) struct SigningSettings {
    /// The key file (a private JWK Set).
    pub(crate) key_file: PathBuf,
    /// The origin whose well-known directory publishes the keys.
    pub(crate) agent: Url,
    /// Which requests to sign.
    pub(crate) when: SignWhen,
}

struct Loaded {
    keys: KeySet,
    modified: Option<SystemTime>,
    checked: Instant,
    /// The key signing now, until the time it may change: making it from the file's JWK
    /// costs a scalar multiplication, as much as a signature.
    active: Option<(Arc<FastKey>, Option<i64>)>,
}

impl Loaded {
    fn active(&mut self, now: i64) -> Option<Arc<FastKey>> {
        let stale = match &self.active {
            None => true,
            Some((_, until)) => until.is_some_and(|t| now >= t),
        };
        if stale {
            self.active = self
                .keys
                .active(now)
                .and_then(|k| FastKey::of(&k))
                .map(|k| (Arc::new(k), self.keys.next_change(now)));
        }
        self.active.as_ref().map(|(k, _)| k.clone())
    }
}

/// The signing key in AWS-LC, whose Ed25519 signs in half the time of ed25519-dalek on this
/// machine (9.4 against 18.7 microseconds; docs/ARCHITECTURE.md): signing is most of what a
/// signed request costs. The signatures are the same bytes (Ed25519 is deterministic).
pub(crate) struct FastKey {
    pair: aws_lc_rs::signature::Ed25519KeyPair,
    keyid: String,
}

impl FastKey {
    fn of(key: &ActiveKey) -> Option<FastKey> {
        let pair = aws_lc_rs::signature::Ed25519KeyPair::from_seed_and_public_key(
            &key.key.to_bytes(),
            key.key.verifying_key().as_bytes(),
        )
        .ok()?;
        Some(FastKey {
            pair,
            keyid: key.keyid.clone(),
        })
    }
}

impl Ed25519Key for FastKey {
    fn keyid(&self) -> &str {
        &self.keyid
    }

    fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        let mut out = [0; 64];
        out.copy_from_slice(self.pair.sign(message).as_ref());
        out
    }
}

/// The signer the HTTP client holds.
pub(crate) struct Signer {
    settings: SigningSettings,
    agent: String,
    loaded: Mutex<Loaded>,
    /// What each origin asked signatures to cover (`Accept-Signature`).
    asked: Mutex<HashMap<String, Vec<Component>>>,
    /// Requests signed.
    pub(crate) signed: AtomicU64,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({})", self.agent)
    }
}

fn read_keys(path: &std::path::Path) -> Result<(KeySet, Option<SystemTime>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let keys = KeySet::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    Ok((keys, modified))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Signer {
    /// Reads the key file; refuses one that does not parse or holds no key valid now.
    pub(crate) fn new(settings: SigningSettings) -> Result<Signer, String> {
        let (keys, modified) = read_keys(&settings.key_file)?;
        if keys.active(unix_now()).is_none() {
            return Err(format!(
                "{}: no key is valid now (their nbf lies ahead or exp passed)",
                settings.key_file.display()
            ));
        }
        let agent = settings.agent.as_str().trim_end_matches('/').to_string();
        Ok(Signer {
            agent,
            settings,
            loaded: Mutex::new(Loaded {
                keys,
                modified,
                checked: Instant::now(),
                active: None,
            }),
            asked: Mutex::default(),
            signed: AtomicU64::new(0),
        })
    }

    /// The headers that sign a GET of `url`, when it is to be signed.
    pub(crate) fn headers_for(&self, url: &Url) -> Option<SignatureHeaders> {
        self.headers_for_request("GET", url, None)
    }

    /// The headers that sign a request, when it is to be signed: a page request covers what
    /// its site asked (the draft's minimum otherwise), a request with a body (a hub
    /// subscription) covers its method, target and `Content-Digest` as well.
    pub(crate) fn headers_for_request(
        &self,
        method: &str,
        url: &Url,
        content_digest: Option<&str>,
    ) -> Option<SignatureHeaders> {
        let origin = url.origin().ascii_serialization();
        let asked = self.asked.lock().ok().and_then(|a| a.get(&origin).cloned());
        if self.settings.when == SignWhen::Asked && asked.is_none() {
            return None;
        }
        let mut components = asked.unwrap_or_else(|| PAGE_REQUEST.to_vec());
        if content_digest.is_some() {
            for c in STATE_CHANGING {
                if !components.contains(c) {
                    components.push(*c);
                }
            }
        }
        let now = unix_now();
        let key = {
            let mut loaded = self.loaded.lock().ok()?;
            self.reload_if_changed(&mut loaded);
            loaded.active(now)?
        };
        // The draft's nonce: base64url of 64 random bytes.
        let nonce: [u8; 64] = rand::random();
        let nonce = data_encoding::BASE64URL_NOPAD.encode(&nonce);
        let headers = sign_request(
            key.as_ref(),
            &Target {
                method,
                url,
                content_digest,
            },
            &components,
            SignParams {
                agent: &self.agent,
                created: now,
                lifetime: LIFETIME_SECS,
                nonce: &nonce,
            },
        )?;
        self.signed.fetch_add(1, Ordering::Relaxed);
        Some(headers)
    }

    /// Notes what `url`'s site asked signatures to cover (its `Accept-Signature` value);
    /// returns whether that is news, so the request may be sent again signed as asked. A
    /// request for a component this signer cannot provide is not news: sending again would
    /// be refused again.
    pub(crate) fn asked_by(&self, url: &Url, accept_signature: &str) -> bool {
        let components = match requested_components(accept_signature) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("{}: {e}", url.origin().ascii_serialization());
                return false;
            }
        };
        let Ok(mut asked) = self.asked.lock() else {
            return false;
        };
        let origin = url.origin().ascii_serialization();
        let before = asked
            .get(&origin)
            .cloned()
            .or_else(|| (self.settings.when == SignWhen::Always).then(|| PAGE_REQUEST.to_vec()));
        let news = before
            .as_ref()
            .is_none_or(|b| !components.iter().all(|c| b.contains(c)));
        if news {
            let mut merged = before.unwrap_or_default();
            for c in components {
                if !merged.contains(&c) {
                    merged.push(c);
                }
            }
            asked.insert(origin, merged);
        }
        news
    }

    fn reload_if_changed(&self, loaded: &mut Loaded) {
        if loaded.checked.elapsed() < RELOAD_CHECK {
            return;
        }
        loaded.checked = Instant::now();
        let modified = std::fs::metadata(&self.settings.key_file)
            .and_then(|m| m.modified())
            .ok();
        if modified == loaded.modified {
            return;
        }
        match read_keys(&self.settings.key_file) {
            Ok((keys, modified)) => {
                tracing::info!(
                    "signing keys read again from {} ({} keys)",
                    self.settings.key_file.display(),
                    keys.keys.len()
                );
                loaded.keys = keys;
                loaded.modified = modified;
                loaded.active = None;
            }
            Err(e) => {
                // Keep signing with the keys read last; say so once per change of the file.
                tracing::warn!("{e}: signing with the keys read before");
                loaded.modified = modified;
            }
        }
    }
}

/// Reads the signer's settings: the key file must be readable and the agent an origin.
pub(crate) fn check_agent(agent: &str) -> Result<Url, String> {
    let url = Url::parse(agent).map_err(|e| format!("--signature-agent {agent}: {e}"))?;
    if !matches!(url.scheme(), "https" | "http")
        || url.host_str().is_none()
        || !matches!(url.path(), "" | "/")
        || url.query().is_some()
        || url.fragment().is_some()
    {
        return Err(format!(
            "--signature-agent {agent} is not an origin (https://HOST[:PORT]): its key \
             directory is at {}",
            webcoop_protocol::bot_auth::DIRECTORY_PATH
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_lc_signs_the_same_bytes_as_the_reference_key() {
        let mut set = KeySet::default();
        set.add([9; 32], 0);
        let reference = set.active(1).unwrap();
        let fast = FastKey::of(&reference).unwrap();
        for message in [&b""[..], b"\"@authority\": example.com", &[0xff; 1000]] {
            assert_eq!(fast.sign_bytes(message), reference.sign_bytes(message));
        }
        assert_eq!(fast.keyid(), reference.keyid);
    }

    #[test]
    fn the_key_file_is_read_again_and_the_newest_valid_key_signs() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys.json");
        let mut set = KeySet::default();
        let first = set.add([1; 32], 0);
        std::fs::write(&file, set.to_json()).unwrap();
        let signer = Signer::new(SigningSettings {
            key_file: file.clone(),
            agent: Url::parse("https://crawler.example").unwrap(),
            when: SignWhen::Always,
        })
        .unwrap();
        let url = Url::parse("http://site.example:8080/page").unwrap();
        let keyid_of = |h: &SignatureHeaders| {
            h.input
                .split("keyid=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap()
                .to_string()
        };
        assert_eq!(keyid_of(&signer.headers_for(&url).unwrap()), first);
        // A new key in the file signs once the file is looked at again.
        let second = set.add([2; 32], 0);
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&file, set.to_json()).unwrap();
        std::thread::sleep(RELOAD_CHECK + Duration::from_millis(50));
        assert_eq!(keyid_of(&signer.headers_for(&url).unwrap()), second);
        // A file that stops parsing keeps the keys read last.
        std::fs::write(&file, "{ not json").unwrap();
        std::thread::sleep(RELOAD_CHECK + Duration::from_millis(50));
        assert_eq!(keyid_of(&signer.headers_for(&url).unwrap()), second);
        assert_eq!(signer.signed.load(Ordering::Relaxed), 3);
        // The authority signed carries the port.
        let h = signer.headers_for(&url).unwrap();
        assert!(h.agent == "sig1=\"https://crawler.example\"", "{}", h.agent);
        // Asked mode: nothing signed until the site asks.
        let asked = Signer::new(SigningSettings {
            key_file: dir.path().join("keys2.json"),
            agent: Url::parse("https://crawler.example").unwrap(),
            when: SignWhen::Asked,
        });
        assert!(asked.is_err(), "a missing key file is refused");
        std::fs::write(dir.path().join("keys2.json"), set.to_json()).unwrap();
        let asked = Signer::new(SigningSettings {
            key_file: dir.path().join("keys2.json"),
            agent: Url::parse("https://crawler.example").unwrap(),
            when: SignWhen::Asked,
        })
        .unwrap();
        let page_ask = r#"sig1=("@authority" "signature-agent";key="sig1");tag="web-bot-auth""#;
        assert!(asked.headers_for(&url).is_none());
        assert!(asked.asked_by(&url, page_ask), "news: send again signed");
        assert!(!asked.asked_by(&url, page_ask), "no longer news");
        let h = asked.headers_for(&url).unwrap();
        assert!(
            h.input
                .starts_with(r#"sig1=("@authority" "signature-agent";key="sig1")"#)
        );
        // A site asking for more is news, and is answered.
        let more = r#"sig1=("@method" "@target-uri" "@authority");tag="web-bot-auth""#;
        assert!(asked.asked_by(&url, more));
        let h = asked.headers_for(&url).unwrap();
        assert!(
            h.input.contains(r#""@method" "@target-uri""#),
            "{}",
            h.input
        );
        // A component this signer cannot provide is not news (it would be refused again).
        assert!(!asked.asked_by(&url, r#"sig1=("@query-param";name="x");tag="web-bot-auth""#));
        // Always mode: a site asking only for what is signed anyway is not news.
        assert!(!signer.asked_by(&url, page_ask));
        // The nonce is base64url of 64 bytes.
        let nonce = h
            .input
            .split("nonce=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap();
        assert_eq!(
            data_encoding::BASE64URL_NOPAD
                .decode(nonce.as_bytes())
                .unwrap()
                .len(),
            64
        );
    }
}

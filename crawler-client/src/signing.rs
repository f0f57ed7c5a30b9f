//! Signing each request (Web Bot Auth) with the newest valid key of the operator's key file.
//!
//! The file is read again when it changes (looked at once a second at most), so a key added by
//! `webcoop-crawl keys new` is used from its `nbf` on without a restart: keys rotate during a
//! crawl. A file that stops parsing keeps the keys read last, and says so once.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};
use url::Url;
use webcoop_protocol::bot_auth::keys::KeySet;
use webcoop_protocol::bot_auth::sign::{SignParams, SignatureHeaders, sign};

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
pub struct SigningSettings {
    /// The key file (a private JWK Set).
    pub key_file: PathBuf,
    /// The origin whose well-known directory publishes the keys.
    pub agent: Url,
    /// Which requests to sign.
    pub when: SignWhen,
}

struct Loaded {
    keys: KeySet,
    modified: Option<SystemTime>,
    checked: Instant,
}

/// The signer the HTTP client holds.
pub(crate) struct Signer {
    settings: SigningSettings,
    agent: String,
    loaded: Mutex<Loaded>,
    asked: Mutex<HashSet<String>>,
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
            }),
            asked: Mutex::default(),
            signed: AtomicU64::new(0),
        })
    }

    /// The headers that sign a request to `url`, when it is to be signed.
    pub(crate) fn headers_for(&self, url: &Url) -> Option<SignatureHeaders> {
        let host = url.host_str()?;
        let authority = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        if self.settings.when == SignWhen::Asked
            && !self
                .asked
                .lock()
                .is_ok_and(|a| a.contains(&url.origin().ascii_serialization()))
        {
            return None;
        }
        let now = unix_now();
        let key = {
            let mut loaded = self.loaded.lock().ok()?;
            self.reload_if_changed(&mut loaded);
            loaded.keys.active(now)?
        };
        let nonce: [u8; 24] = rand::random();
        let nonce = data_encoding::BASE64.encode(&nonce);
        let headers = sign(
            &key,
            &authority,
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

    /// Notes that `url`'s site asked for signatures (`Accept-Signature`); returns whether
    /// that is news, so the request may be sent again signed.
    pub(crate) fn asked_by(&self, url: &Url) -> bool {
        self.asked
            .lock()
            .is_ok_and(|mut a| a.insert(url.origin().ascii_serialization()))
            && self.settings.when == SignWhen::Asked
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

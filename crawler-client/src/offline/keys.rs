//! `webcoop-crawl keys`: make a key, retire one, and write what the operator's web server
//! publishes (the key directory and the Signature Agent Card), or serve the directory signed.
//!
//! Rotation without a gap: `keys new --activate-in 86400` adds a key usable tomorrow;
//! `keys directory` is published at once with both keys, so verifiers holding the directory
//! know the new key before it signs; `keys retire --keyid OLD --in 86400` ends the old one
//! once the new one signs. A running crawl reads the key file again when it changes.

use std::io::Write;
use std::path::{Path, PathBuf};
use webcoop_protocol::bot_auth::card::{Card, Extension, Keys};
use webcoop_protocol::bot_auth::directory::Directory;
use webcoop_protocol::bot_auth::keys::KeySet;

/// `keys` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum KeysCommand {
    /// Add a new Ed25519 key to the key file (made, mode 0600, if absent); prints its key id.
    New {
        /// The key file (a private JWK Set: keep it secret).
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// Seconds before the key may sign (publish the directory first).
        #[arg(long, value_name = "SECS", default_value_t = 0)]
        activate_in: u64,
    },
    /// End a key: it stops signing and leaves the directory after SECS.
    Retire {
        /// The key file.
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// The key's id (its thumbprint, as `keys list` prints).
        #[arg(long, value_name = "KEYID")]
        keyid: String,
        /// Seconds before it ends.
        #[arg(long = "in", value_name = "SECS", default_value_t = 0)]
        in_secs: u64,
    },
    /// Print the keys: id, usable from, until.
    List {
        /// The key file.
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
    },
    /// Write the key directory to serve at /.well-known/http-message-signatures-directory
    /// (as application/http-message-signatures-directory+json).
    Directory {
        /// The key file.
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// Where to write it (standard output if absent); replaced atomically.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Serve the key directory at /.well-known/http-message-signatures-directory, signed by
    /// each of its keys for the authority asked (tag http-message-signatures-directory).
    Serve {
        /// The key file.
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// Where to listen (port 0: any free port, printed).
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8443")]
        listen: std::net::SocketAddr,
        /// A PEM certificate chain: serve HTTPS (with --tls-key).
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The certificate's PEM private key.
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Seconds verifiers may keep the directory.
        #[arg(long, value_name = "SECS", default_value_t = 3600,
              value_parser = clap::value_parser!(u32).range(60..=86_100))]
        max_age: u32,
    },
    /// Write a Signature Agent Card describing the crawler and its keys.
    Card {
        /// The key file.
        #[arg(long, value_name = "FILE")]
        key_file: PathBuf,
        /// The origin publishing the key directory (as --signature-agent).
        #[arg(long, value_name = "URL")]
        signature_agent: String,
        /// The crawler's name.
        #[arg(long, default_value = "webcoop-crawl")]
        name: String,
        /// A page about the crawler.
        #[arg(long, value_name = "URL")]
        about: Option<String>,
        /// How to reach its operator (repeatable), e.g. mailto:crawler@example.com.
        #[arg(long, value_name = "URI")]
        contact: Vec<String>,
        /// The User-Agent it sends.
        #[arg(long, default_value = crate::fetch::DEFAULT_USER_AGENT)]
        user_agent: String,
        /// What it collects for (search, ai-input, ai-train).
        #[arg(long)]
        purpose: Option<String>,
        /// Where to write it (standard output if absent).
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

fn read(path: &Path) -> Result<KeySet, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    KeySet::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `text` to `path` through a temporary file and a rename, private when `secret`.
fn write_atomic(path: &Path, text: &str, secret: bool) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !secret {
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

fn emit(output: Option<&Path>, text: &str) -> Result<(), String> {
    match output {
        Some(p) => write_atomic(p, text, false),
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| e.to_string()),
    }
}

/// Lists the keys of `key_file`, the one signing now marked.
fn list(key_file: &std::path::Path) -> Result<(), String> {
    let set = read(key_file)?;
    let when = |t: Option<i64>, none: &str| {
        t.and_then(|t| chrono::DateTime::from_timestamp(t, 0))
            .map_or(none.to_string(), |d| d.to_rfc3339())
    };
    let active = set.active(now()).map(|k| k.keyid);
    for k in &set.keys {
        let id = k.thumbprint();
        let mark = if active.as_deref() == Some(id.as_str()) {
            " (signing)"
        } else {
            ""
        };
        println!(
            "{id}  from {}  until {}{mark}",
            when(k.nbf, "always"),
            when(k.exp, "retired")
        );
    }
    Ok(())
}

/// Retires `keyid` `in_secs` from now, unless no key would be left to sign with.
fn retire(key_file: &std::path::Path, keyid: &str, in_secs: u64) -> Result<(), String> {
    let mut set = read(key_file)?;
    let end = now().saturating_add(in_secs as i64);
    let key = set
        .keys
        .iter_mut()
        .find(|k| k.thumbprint() == *keyid)
        .ok_or_else(|| format!("{}: no key {keyid}", key_file.display()))?;
    key.exp = Some(end);
    if set.active(end).is_none() {
        return Err(format!(
            "retiring {keyid} would leave no key to sign with: add one first (keys new)"
        ));
    }
    write_atomic(key_file, &set.to_json(), true)
}

/// Runs a `keys` subcommand.
pub fn run(command: &KeysCommand) -> Result<(), String> {
    match command {
        KeysCommand::New {
            key_file,
            activate_in,
        } => {
            let mut set = if key_file.exists() {
                read(key_file)?
            } else {
                KeySet::default()
            };
            let secret: [u8; 32] = rand::random();
            let kid = set.add(secret, now().saturating_add(*activate_in as i64));
            // tempfile makes files 0600: the private keys stay the operator's.
            write_atomic(key_file, &set.to_json(), true)?;
            println!("{kid}");
            Ok(())
        }
        KeysCommand::Retire {
            key_file,
            keyid,
            in_secs,
        } => retire(key_file, keyid, *in_secs),
        KeysCommand::List { key_file } => list(key_file),
        KeysCommand::Directory { key_file, output } => {
            let set = read(key_file)?;
            emit(output.as_deref(), &Directory::write(&set.public(now())))
        }
        KeysCommand::Serve {
            key_file,
            listen,
            tls_cert,
            tls_key,
            max_age,
        } => super::key_server::serve(&super::key_server::ServeSettings {
            key_file: key_file.clone(),
            listen: *listen,
            tls: tls_cert.clone().zip(tls_key.clone()),
            max_age: *max_age,
        }),
        KeysCommand::Card {
            key_file,
            signature_agent,
            name,
            about,
            contact,
            user_agent,
            purpose,
            output,
        } => {
            let set = read(key_file)?;
            let agent = crate::signing::check_agent(signature_agent)?;
            let directory = agent
                .join(webcoop_protocol::bot_auth::DIRECTORY_PATH)
                .map_err(|e| e.to_string())?;
            let card = Card {
                client_id: None,
                client_name: name.clone(),
                client_uri: about.clone(),
                contacts: contact.clone(),
                jwks_uri: directory.to_string(),
                jwks: Keys {
                    keys: set.public(now()),
                },
                web_bot_auth: Extension {
                    expected_user_agent: user_agent.clone(),
                    product_token: crate::frontier::robots::product_token(user_agent),
                    compliance: true,
                    trigger: "crawler".into(),
                    purpose: purpose.clone(),
                    rate_control: "429".into(),
                },
            };
            emit(output.as_deref(), &card.to_json())
        }
    }
}

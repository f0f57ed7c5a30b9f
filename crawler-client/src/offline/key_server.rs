//! `webcoop-crawl keys serve`: the key directory served with its own signatures, as the
//! draft asks ("binding keys to the directory authority"): each response is signed by every
//! published key over the authority it was asked for and its `Content-Digest`, so a verifier
//! knows the keys' owner answers for that origin. Plain HTTP behind a TLS-terminating proxy,
//! or HTTPS itself with `--tls-cert` and `--tls-key`.
//!
//! The key file is read again when it changes, so `keys new` and `keys retire` show at once.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use webcoop_protocol::bot_auth::binding::signed_directory;
use webcoop_protocol::bot_auth::keys::KeySet;
use webcoop_protocol::bot_auth::{DIRECTORY_MEDIA_TYPE, DIRECTORY_PATH};

/// The longest `Host` answered: a DNS name with a port.
const MAX_AUTHORITY: usize = 261;
/// Time allowed for a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What `keys serve` was told.
#[derive(Debug, Clone)]
pub(crate) struct ServeSettings {
    /// The key file.
    pub(crate) key_file: PathBuf,
    /// Where to listen.
    pub(crate) listen: SocketAddr,
    /// A PEM certificate chain and its PEM private key, to serve HTTPS.
    pub(crate) tls: Option<(PathBuf, PathBuf)>,
    /// Seconds verifiers may keep the directory (its binding signatures live as long, plus
    /// five minutes).
    pub(crate) max_age: u32,
}

struct Keys {
    path: PathBuf,
    read: Mutex<(Option<SystemTime>, Arc<KeySet>)>,
}

impl Keys {
    /// The key set, read again when the file changed; a file that stops parsing keeps the
    /// keys read last (a half-written file must not empty the directory).
    fn current(&self) -> Arc<KeySet> {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        let Ok(mut read) = self.read.lock() else {
            return Arc::new(KeySet::default());
        };
        if modified != read.0 {
            match std::fs::read_to_string(&self.path)
                .map_err(|e| e.to_string())
                .and_then(|t| KeySet::parse(&t).map_err(|e| e.to_string()))
            {
                Ok(set) => *read = (modified, Arc::new(set)),
                Err(e) => {
                    tracing::warn!("{}: {e}: serving the keys read before", self.path.display());
                    read.0 = modified;
                }
            }
        }
        read.1.clone()
    }
}

struct Served {
    keys: Keys,
    max_age: u32,
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

async fn directory(State(s): State<Arc<Served>>, headers: HeaderMap) -> Response {
    let Some(authority) = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_ascii_lowercase)
        .filter(|a| !a.is_empty() && a.len() <= MAX_AUTHORITY)
        .filter(|a| a.bytes().all(|b| b.is_ascii_graphic()))
    else {
        return (
            StatusCode::BAD_REQUEST,
            "a Host naming this origin is needed: the signatures bind the keys to it\n",
        )
            .into_response();
    };
    let keys = s.keys.current();
    let lifetime = i64::from(s.max_age) + 300;
    let Some((body, fields)) = signed_directory(&keys, &authority, unix_now(), lifetime) else {
        return (StatusCode::BAD_REQUEST, "this Host cannot be signed\n").into_response();
    };
    let mut response = body.into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(DIRECTORY_MEDIA_TYPE),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("max-age={}", s.max_age)) {
        h.insert(header::CACHE_CONTROL, v);
    }
    for (name, value) in fields {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
    response
}

/// Runs the server until interrupted; prints the directory's URL once listening.
pub(crate) fn serve(settings: &ServeSettings) -> Result<(), String> {
    let text = std::fs::read_to_string(&settings.key_file)
        .map_err(|e| format!("{}: {e}", settings.key_file.display()))?;
    let set = KeySet::parse(&text).map_err(|e| format!("{}: {e}", settings.key_file.display()))?;
    if set.published(unix_now()).is_empty() {
        return Err(format!(
            "{}: no key to publish (all expired)",
            settings.key_file.display()
        ));
    }
    let modified = std::fs::metadata(&settings.key_file)
        .and_then(|m| m.modified())
        .ok();
    let acceptor = match &settings.tls {
        Some((cert, key)) => Some(tls_acceptor(cert, key)?),
        None => None,
    };
    let served = Arc::new(Served {
        keys: Keys {
            path: settings.key_file.clone(),
            read: Mutex::new((modified, Arc::new(set))),
        },
        max_age: settings.max_age,
    });
    let app = axum::Router::new()
        .route(DIRECTORY_PATH, axum::routing::get(directory))
        .with_state(served);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(settings.listen)
            .await
            .map_err(|e| format!("{}: {e}", settings.listen))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        println!("serving the key directory at {scheme}://{addr}{DIRECTORY_PATH}");
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        match acceptor {
            None => axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(|e| e.to_string()),
            Some(acceptor) => axum::serve(TlsListener::new(listener, acceptor), app)
                .with_graceful_shutdown(shutdown)
                .await
                .map_err(|e| e.to_string()),
        }
    })
}

fn tls_acceptor(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{}: no certificate", cert.display()));
    }
    let private =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| format!("{} and {}: {e}", cert.display(), key.display()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Connections whose TLS handshakes ran in their own tasks (a slow client must not hold
/// the others up), handed to axum once established.
struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(
        tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
        SocketAddr,
    )>,
    local: SocketAddr,
}

impl TlsListener {
    fn new(listener: tokio::net::TcpListener, acceptor: tokio_rustls::TlsAcceptor) -> TlsListener {
        let local = listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        let (tx, ready) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, peer)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    if let Ok(Ok(tls)) =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await
                    {
                        let _ = tx.send((tls, peer)).await;
                    }
                });
            }
        });
        TlsListener { ready, local }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            if let Some(conn) = self.ready.recv().await {
                return conn;
            }
            // The accepting task ended: nothing more will arrive.
            std::future::pending::<()>().await;
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

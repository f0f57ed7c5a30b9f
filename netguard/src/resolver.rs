//! Name resolution for an HTTP client, keeping only the addresses the policy allows: the
//! check happens where the connection's address is chosen, so a name that resolves to a
//! private address now (or only some of the time) is refused each time it does.

use crate::policy::{NetPolicy, Refusal, RefusalCounter};
use std::net::SocketAddr;
use std::sync::Arc;
use url::{Host, Url};

/// A resolver for reqwest that applies a [`NetPolicy`] to every address, after the host
/// overrides the operator gave (`--resolve`), which are checked like any other address.
#[derive(Clone)]
pub struct GuardedResolver {
    policy: NetPolicy,
    overrides: Arc<Vec<(String, SocketAddr)>>,
    refusals: Arc<RefusalCounter>,
}

impl GuardedResolver {
    /// A resolver applying `policy`, resolving `overrides` (lower-case host, address) itself.
    pub fn new(policy: NetPolicy, overrides: Vec<(String, SocketAddr)>) -> GuardedResolver {
        GuardedResolver {
            policy,
            overrides: Arc::new(overrides),
            refusals: Arc::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &NetPolicy {
        &self.policy
    }

    /// The refusals so far.
    pub fn refusals(&self) -> &Arc<RefusalCounter> {
        &self.refusals
    }

    /// Checks a URL about to be requested: an address host now (HTTP clients connect to
    /// those without resolving); a name is checked when the client resolves it. Refusals are
    /// counted.
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        self.policy
            .check_url(url)
            .inspect_err(|r| self.refusals.note(r))
    }

    /// Every address `host` resolves to (the override first), or the refusal of the first one
    /// when none is allowed.
    pub async fn resolve_checked(
        &self,
        host: &str,
        port: u16,
    ) -> Result<Vec<SocketAddr>, ResolveError> {
        let name = host.trim_matches(['[', ']']).to_ascii_lowercase();
        let found: Vec<SocketAddr> = match self.overrides.iter().find(|(h, _)| *h == name) {
            Some((_, addr)) => vec![*addr],
            None => tokio::net::lookup_host((name.as_str(), port))
                .await
                .map_err(|e| ResolveError::Lookup(format!("{name} does not resolve: {e}")))?
                .collect(),
        };
        let mut first_refusal = None;
        let allowed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| match self.policy.check(&name, a.ip()) {
                Ok(()) => true,
                Err(r) => {
                    first_refusal.get_or_insert(r);
                    false
                }
            })
            .collect();
        match (allowed.is_empty(), first_refusal) {
            (true, Some(r)) => {
                self.refusals.note(&r);
                Err(ResolveError::Refused(r))
            }
            (true, None) => Err(ResolveError::Lookup(format!("{name} has no address"))),
            (false, _) => Ok(allowed),
        }
    }

    /// Checks every address a URL leads to, resolving a name now: for a URL given by an
    /// operator (a seed) or kept for later (a callback), to refuse it at once with the reason.
    pub async fn check_url_resolving(&self, url: &Url) -> Result<(), ResolveError> {
        match url.host() {
            Some(Host::Domain(name)) => {
                let port = url.port_or_known_default().unwrap_or(80);
                self.resolve_checked(name, port).await.map(drop)
            }
            Some(_) => self.check_url(url).map_err(ResolveError::Refused),
            None => Err(ResolveError::Lookup(format!("{url} has no host"))),
        }
    }
}

/// Why a name gave no address to connect to.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    /// It resolves only to refused addresses.
    #[error(transparent)]
    Refused(Refusal),
    /// It does not resolve.
    #[error("{0}")]
    Lookup(String),
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = this.resolve_checked(&host, 0).await?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(overrides: Vec<(String, SocketAddr)>) -> GuardedResolver {
        GuardedResolver::new(NetPolicy::new(Vec::new(), "--allow-net"), overrides)
    }

    #[tokio::test]
    async fn overrides_are_checked_like_any_address() {
        let r = strict(vec![(
            "metadata.test".into(),
            "169.254.169.254:80".parse().unwrap(),
        )]);
        let e = r.resolve_checked("metadata.test", 80).await.unwrap_err();
        assert!(
            e.to_string().contains("link-local") && e.to_string().contains("--allow-net"),
            "{e}"
        );
        assert_eq!(r.refusals().count(), 1);
        let e = r.resolve_checked("localhost", 80).await.unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        assert_eq!(r.refusals().count(), 2);
    }

    #[tokio::test]
    async fn a_refused_destination_is_never_connected_to() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // A listener on loopback that counts connections.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let resolver = strict(vec![(
            "inside.test".into(),
            SocketAddr::from(([127, 0, 0, 1], port)),
        )]);
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(resolver.clone()))
            .build()
            .unwrap();
        let e = client
            .get(format!("http://inside.test:{port}/"))
            .send()
            .await
            .unwrap_err();
        assert!(e.is_connect() || e.is_request(), "{e:?}");
        assert!(
            matches!(listener.accept(), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock)
        );
        assert_eq!(resolver.refusals().count(), 1);
        // Allowed by the operator: the same request connects.
        let allowed = GuardedResolver::new(
            NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net"),
            vec![(
                "inside.test".into(),
                SocketAddr::from(([127, 0, 0, 1], port)),
            )],
        );
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(std::time::Duration::from_millis(300))
            .dns_resolver(Arc::new(allowed))
            .build()
            .unwrap();
        let _ = client
            .get(format!("http://inside.test:{port}/"))
            .send()
            .await;
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(listener.accept().is_ok(), "the allowed request connected");
    }
}

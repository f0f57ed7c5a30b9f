//! Name resolution for an HTTP client, keeping only the addresses the policy allows: the
//! check happens where the connection's address is chosen, so a name that resolves to a
//! private address now (or only some of the time) is refused each time it does.

use crate::policy::{NetPolicy, Refusal, RefusalCounter};
use hickory_resolver::TokioResolver;
use hickory_resolver::config::{LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use std::net::SocketAddr;
use std::sync::Arc;
use url::{Host, Url};

/// Answers kept by a name server's resolver: a crawl of many hosts asks each name once per TTL
/// rather than once per connection (the system's resolver keeps nothing without nscd).
const NAME_CACHE_ENTRIES: u64 = 65_536;

/// A resolver for reqwest that applies a [`NetPolicy`] to every address, after the host
/// overrides the operator gave (`--resolve`), which are checked like any other address.
#[derive(Clone)]
pub struct GuardedResolver {
    policy: NetPolicy,
    overrides: Arc<Vec<(String, SocketAddr)>>,
    refusals: Arc<RefusalCounter>,
    server: Option<Arc<TokioResolver>>,
}

impl GuardedResolver {
    /// A resolver applying `policy`, resolving `overrides` (lower-case host, address) itself.
    pub fn new(policy: NetPolicy, overrides: Vec<(String, SocketAddr)>) -> GuardedResolver {
        GuardedResolver {
            policy,
            overrides: Arc::new(overrides),
            refusals: Arc::default(),
            server: None,
        }
    }

    /// The same resolver asking the DNS server at `server` (UDP, then TCP for long answers)
    /// instead of the system's resolver, keeping answers for their TTL; `/etc/hosts` is not
    /// read, so what the server says is what is used.
    pub fn with_name_server(mut self, server: SocketAddr) -> GuardedResolver {
        let mut ns = NameServerConfig::udp_and_tcp(server.ip());
        for c in &mut ns.connections {
            c.port = server.port();
        }
        let mut builder = TokioResolver::builder_with_config(
            ResolverConfig::from_name_servers(vec![ns]),
            TokioRuntimeProvider::default(),
        );
        let opts = builder.options_mut();
        opts.use_hosts_file = ResolveHosts::Never;
        // One question per name (AAAA only for a name without A), not A and AAAA each time:
        // half the lookups over a crawl of many hosts.
        opts.ip_strategy = LookupIpStrategy::Ipv4thenIpv6;
        opts.cache_size = NAME_CACHE_ENTRIES;
        // A crawl resolves hundreds of new names at once over one socket.
        opts.max_active_requests = 1024;
        self.server = builder.build().ok().map(Arc::new);
        self
    }

    /// Every address `host` resolves to, the override first, before any policy check.
    pub async fn lookup(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, ResolveError> {
        let name = host.trim_matches(['[', ']']).to_ascii_lowercase();
        if let Some((_, addr)) = self.overrides.iter().find(|(h, _)| *h == name) {
            return Ok(vec![*addr]);
        }
        if let Some(server) = &self.server
            && name.parse::<std::net::IpAddr>().is_err()
        {
            // A name ending in a dot is absolute; without one, no search list applies either,
            // since none is configured.
            let found = server
                .lookup_ip(format!("{}.", name.trim_end_matches('.')))
                .await
                .map_err(|e| ResolveError::Lookup(format!("{name} does not resolve: {e}")))?;
            return Ok(found.iter().map(|ip| SocketAddr::new(ip, port)).collect());
        }
        Ok(tokio::net::lookup_host((name.as_str(), port))
            .await
            .map_err(|e| ResolveError::Lookup(format!("{name} does not resolve: {e}")))?
            .collect())
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
        let found = self.lookup(&name, port).await?;
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

    fn loopback_allowed() -> GuardedResolver {
        GuardedResolver::new(
            NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net"),
            Vec::new(),
        )
    }

    /// A DNS server on loopback answering every A question with `answer` (NXDOMAIN for
    /// none), counting the questions.
    async fn name_server(
        answer: Option<std::net::Ipv4Addr>,
    ) -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
        use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
        use hickory_proto::rr::rdata::A;
        use hickory_proto::rr::{RData, Record, RecordType};
        let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = asked.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1500];
            while let Ok((n, from)) = sock.recv_from(&mut buf).await {
                let q = Message::from_vec(&buf[..n]).unwrap();
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut r = Message::new(q.metadata.id, MessageType::Response, OpCode::Query);
                r.metadata.recursion_available = true;
                for query in &q.queries {
                    r.add_query(query.clone());
                    match answer {
                        Some(ip) if query.query_type() == RecordType::A => {
                            r.add_answer(Record::from_rdata(
                                query.name().clone(),
                                300,
                                RData::A(A(ip)),
                            ));
                        }
                        Some(_) => {}
                        None => r.metadata.response_code = ResponseCode::NXDomain,
                    }
                }
                let _ = sock.send_to(&r.to_vec().unwrap(), from).await;
            }
        });
        (addr, asked)
    }

    #[tokio::test]
    async fn a_name_server_is_asked_once_per_ttl_and_its_answers_are_checked() {
        let (server, asked) = name_server(Some([127, 1, 2, 3].into())).await;
        let allowed = loopback_allowed().with_name_server(server);
        for _ in 0..3 {
            let found = allowed.resolve_checked("Site.Test", 8080).await.unwrap();
            assert_eq!(found, vec![SocketAddr::from(([127, 1, 2, 3], 8080))]);
        }
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
        // The same answer to a crawler that may not reach loopback: refused, and counted.
        let strict = strict(Vec::new()).with_name_server(server);
        let e = strict.resolve_checked("site.test", 80).await.unwrap_err();
        assert!(e.to_string().contains("loopback"), "{e}");
        assert_eq!(strict.refusals().count(), 1);
    }

    #[tokio::test]
    async fn a_name_server_pointing_at_the_metadata_address_is_refused() {
        let (server, _) = name_server(Some([169, 254, 169, 254].into())).await;
        let r = loopback_allowed().with_name_server(server);
        let e = r.resolve_checked("metadata.test", 80).await.unwrap_err();
        assert!(matches!(e, ResolveError::Refused(_)), "{e}");
        assert!(e.to_string().contains("link-local"), "{e}");
    }

    #[tokio::test]
    async fn a_name_the_server_does_not_know_is_named_in_the_error() {
        let (server, _) = name_server(None).await;
        let r = strict(Vec::new()).with_name_server(server);
        let e = r.resolve_checked("nowhere.test", 80).await.unwrap_err();
        assert!(matches!(e, ResolveError::Lookup(_)), "{e}");
        assert!(
            e.to_string().contains("nowhere.test does not resolve"),
            "{e}"
        );
        // An address literal needs no server.
        assert!(r.lookup("192.0.2.1", 80).await.is_ok());
    }

    /// A hostile name server: what it answers depends on the question's first label.
    async fn hostile_name_server() -> SocketAddr {
        use hickory_proto::op::{Message, MessageType, OpCode};
        use hickory_proto::rr::rdata::{A, CNAME};
        use hickory_proto::rr::{Name, RData, Record};
        let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        tokio::spawn(async move {
            let mut buf = [0u8; 1500];
            while let Ok((n, from)) = sock.recv_from(&mut buf).await {
                let Ok(q) = Message::from_vec(&buf[..n]) else {
                    continue;
                };
                let Some(query) = q.queries.first().cloned() else {
                    continue;
                };
                let qname = query.name().clone();
                let label = qname.to_ascii().split('.').next().unwrap_or("").to_string();
                let mut r = Message::new(q.metadata.id, MessageType::Response, OpCode::Query);
                r.metadata.recursion_available = true;
                r.add_query(query);
                let a = |name: &Name, ttl, ip: [u8; 4]| {
                    Record::from_rdata(name.clone(), ttl, RData::A(A(ip.into())))
                };
                let bytes = match label.as_str() {
                    "garbage" => (0..64u8).map(|b| b.wrapping_mul(37) ^ 0x5a).collect(),
                    "wrongid" => {
                        r.metadata.id = q.metadata.id.wrapping_add(1);
                        r.add_answer(a(&qname, 300, [127, 1, 2, 3]));
                        r.to_vec().unwrap()
                    }
                    "short" => {
                        // The header promises an answer the message does not hold.
                        r.add_answer(a(&qname, 300, [127, 1, 2, 3]));
                        let mut v = r.to_vec().unwrap();
                        v.truncate(12);
                        v
                    }
                    "other" => {
                        // An answer for a name nobody asked about.
                        let evil = Name::from_ascii("evil.test.").unwrap();
                        r.add_answer(a(&evil, 300, [127, 9, 9, 9]));
                        r.to_vec().unwrap()
                    }
                    "loop" => {
                        r.add_answer(Record::from_rdata(
                            qname.clone(),
                            300,
                            RData::CNAME(CNAME(qname.clone())),
                        ));
                        r.to_vec().unwrap()
                    }
                    "mixed" => {
                        r.add_answer(a(&qname, 300, [169, 254, 169, 254]));
                        r.add_answer(a(&qname, 300, [127, 1, 2, 3]));
                        r.to_vec().unwrap()
                    }
                    _ => {
                        r.add_answer(a(&qname, u32::MAX, [127, 1, 2, 4]));
                        r.to_vec().unwrap()
                    }
                };
                let _ = sock.send_to(&bytes, from).await;
            }
        });
        addr
    }

    /// What a hostile name server sends is never an address: garbage, a spoofed id, a message
    /// shorter than its header says, an answer for another name and a CNAME to itself each end
    /// in "does not resolve" (after the resolver's timeout at worst); a metadata address among
    /// loopback ones is dropped; the honest twin, an answer with the longest TTL, resolves.
    #[tokio::test]
    async fn a_hostile_name_server_gives_no_address() {
        let server = hostile_name_server().await;
        let r = loopback_allowed().with_name_server(server);
        let mut asked = Vec::new();
        for name in ["garbage", "wrongid", "short", "other", "loop"] {
            let r = r.clone();
            asked.push((
                name,
                tokio::spawn(async move { r.resolve_checked(&format!("{name}.test"), 80).await }),
            ));
        }
        for (name, answer) in asked {
            match answer.await.unwrap() {
                Err(ResolveError::Lookup(why)) => assert!(
                    why.contains(name) && why.contains("does not resolve"),
                    "{name}: {why}"
                ),
                other => panic!("{name}: {other:?}"),
            }
        }
        let mixed = r.resolve_checked("mixed.test", 80).await.unwrap();
        assert_eq!(mixed, vec![SocketAddr::from(([127, 1, 2, 3], 80))]);
        let honest = r.resolve_checked("honest.test", 80).await.unwrap();
        assert_eq!(honest, vec![SocketAddr::from(([127, 1, 2, 4], 80))]);
    }
}

//! Which addresses the hub may call back: public ones, and networks the operator allows.
//!
//! A subscription names a URL the hub then fetches; without a check anyone could make the hub
//! probe the network it sits in (SSRF). Host names are checked when they are resolved for each
//! connection, so a name that later resolves to a private address is refused too.

use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use url::{Host, Url};

/// The policy.
#[derive(Debug, Clone, Default)]
pub struct CallbackPolicy {
    allowed: Arc<Vec<IpNet>>,
}

fn v4_is_public(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xC0) == 64) // shared address space 100.64.0.0/10
        || o[0] >= 240)
}

fn v6_is_public(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_is_public(v4);
    }
    let s = ip.segments();
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] == 0x2001 && s[1] == 0x0db8)) // documentation
}

/// Whether an address is reachable by anyone on the internet (not loopback, private,
/// link-local, reserved or multicast).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_is_public(v4),
        IpAddr::V6(v6) => v6_is_public(v6),
    }
}

impl CallbackPolicy {
    /// Public addresses plus `allowed`.
    pub fn new(allowed: Vec<IpNet>) -> Self {
        CallbackPolicy {
            allowed: Arc::new(allowed),
        }
    }

    /// Whether the hub may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allowed.iter().any(|n| n.contains(&ip))
    }

    /// Checks a callback URL: its scheme, and every address its host resolves to.
    pub async fn check(&self, url: &Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("callback {url} is not http or https"));
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs: Vec<IpAddr> = match url.host() {
            Some(Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
            Some(Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
            Some(Host::Domain(name)) => tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| format!("callback host {name} does not resolve: {e}"))?
                .map(|a| a.ip())
                .collect(),
            None => return Err(format!("callback {url} has no host")),
        };
        match addrs.iter().find(|ip| !self.permits(**ip)) {
            Some(ip) => Err(format!(
                "callback {url} resolves to {ip}, which is not a public address; the operator can allow its network with --allow-callback-net"
            )),
            None if addrs.is_empty() => Err(format!("callback host of {url} has no address")),
            None => Ok(()),
        }
    }
}

/// Resolves host names for the hub's HTTP client, keeping only permitted addresses.
impl reqwest::dns::Resolve for CallbackPolicy {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let permitted: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| policy.permits(a.ip()))
                .collect();
            if permitted.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            Ok(Box::new(permitted.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn loopback_callbacks_need_the_operators_consent() {
        let url = Url::parse("http://127.0.0.1:9/cb").unwrap();
        let strict = CallbackPolicy::default();
        let err = strict.check(&url).await.unwrap_err();
        assert!(err.contains("--allow-callback-net"), "{err}");
        assert!(
            strict
                .check(&Url::parse("http://localhost:9/cb").unwrap())
                .await
                .is_err()
        );
        assert!(
            strict
                .check(&Url::parse("ftp://8.8.8.8/").unwrap())
                .await
                .is_err()
        );
        let lenient = CallbackPolicy::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(lenient.check(&url).await.is_ok());
        assert!(
            lenient
                .check(&Url::parse("http://10.0.0.1/cb").unwrap())
                .await
                .is_err()
        );
    }
}

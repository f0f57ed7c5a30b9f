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

/// IANA's IPv4 Special-Purpose Address Registry (RFC 6890 and updates), every entry, whether
/// or not the registry calls it globally reachable: a callback has no business at an anycast
/// relay or a benchmarking network either. Multicast and the reserved 240/4 are added.
const V4_SPECIAL: &[(u32, u8)] = &[
    (0x0000_0000, 8),  // 0.0.0.0/8 "this network"
    (0x0A00_0000, 8),  // 10.0.0.0/8 private
    (0x6440_0000, 10), // 100.64.0.0/10 shared address space (CGN)
    (0x7F00_0000, 8),  // 127.0.0.0/8 loopback
    (0xA9FE_0000, 16), // 169.254.0.0/16 link-local
    (0xAC10_0000, 12), // 172.16.0.0/12 private
    (0xC000_0000, 24), // 192.0.0.0/24 IETF protocol assignments (incl. DS-Lite, NAT64 discovery)
    (0xC000_0200, 24), // 192.0.2.0/24 documentation
    (0xC01F_C400, 24), // 192.31.196.0/24 AS112
    (0xC034_C100, 24), // 192.52.193.0/24 AMT
    (0xC058_6300, 24), // 192.88.99.0/24 6to4 relay anycast (deprecated)
    (0xC0A8_0000, 16), // 192.168.0.0/16 private
    (0xC0AF_3000, 24), // 192.175.48.0/24 AS112 direct delegation
    (0xC612_0000, 15), // 198.18.0.0/15 benchmarking
    (0xC633_6400, 24), // 198.51.100.0/24 documentation
    (0xCB00_7100, 24), // 203.0.113.0/24 documentation
    (0xE000_0000, 4),  // 224.0.0.0/4 multicast
    (0xF000_0000, 4),  // 240.0.0.0/4 reserved, and 255.255.255.255
];

fn v4_is_public(ip: Ipv4Addr) -> bool {
    let n = u32::from(ip);
    !V4_SPECIAL
        .iter()
        .any(|&(net, len)| n >> (32 - len) == net >> (32 - len))
}

/// IANA's IPv6 Special-Purpose Address Registry, inside the only range allocated for global
/// unicast (2000::/3); everything outside it (loopback, `::/96` IPv4-compatible, NAT64
/// `64:ff9b::/96` and `64:ff9b:1::/48`, discard `100::/64`, ULA, link-local, multicast) is
/// refused by that rule alone.
const V6_SPECIAL: &[(u128, u8)] = &[
    (0x2001_0000 << 96, 23), // 2001::/23 IETF protocol assignments (Teredo, ORCHID...)
    (0x2001_0db8 << 96, 32), // 2001:db8::/32 documentation
    (0x2002 << 112, 16),     // 2002::/16 6to4
    (0x2620_004f_8000 << 80, 48), // 2620:4f:8000::/48 AS112
    (0x3fff << 112, 20),     // 3fff::/20 documentation
];

fn v6_is_public(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_is_public(v4);
    }
    let n = u128::from(ip);
    n >> 125 == 0b001
        && !V6_SPECIAL
            .iter()
            .any(|&(net, len)| n >> (128 - len) == net >> (128 - len))
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
            // Beyond the obvious: every special-purpose range of IANA's registries.
            "192.0.0.1",
            "192.0.0.170",
            "198.18.0.1",
            "198.19.255.255",
            "192.88.99.1",
            "192.31.196.1",
            "192.175.48.1",
            "240.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "::127.0.0.1",
            "::7f00:1",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "100::1",
            "fec0::1",
            "ff02::1",
            "3fff::1",
            "2620:4f:8000::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "198.20.0.1",
            "192.0.1.1",
            "2a00:1450:4001:80b::200e",
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

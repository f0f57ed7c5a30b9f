//! Who is asking: the address a request's rate limits, grants and logs are keyed by.

use axum::http::HeaderMap;
use std::net::{IpAddr, SocketAddr};

/// The client's address: the peer, or, when the peer is a proxy the operator trusts
/// (`--trusted-proxy`), the last address in `X-Forwarded-For` that is not itself a trusted
/// proxy. Anyone else's `X-Forwarded-For` is what its sender chose to write, and is ignored.
pub(crate) fn client_ip(peer: SocketAddr, headers: &HeaderMap, trusted: &[ipnet::IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    if !is_trusted(&peer.ip()) {
        return peer.ip();
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|a| a.trim().parse::<IpAddr>())
        .collect::<Result<_, _>>()
        // One word that is not an address: the header cannot be read, the peer counts.
        .unwrap_or_default();
    forwarded
        .iter()
        .rev()
        .find(|ip| !is_trusted(ip))
        .copied()
        .unwrap_or(peer.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", v.parse().unwrap());
        }
        h
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_trusted_proxies() {
        let local: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let far: SocketAddr = "203.0.113.9:5000".parse().unwrap();
        let trusted: Vec<ipnet::IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // No proxy trusted: a loopback peer's header is its own word, and ignored.
        assert_eq!(
            client_ip(local, &headers(&["198.51.100.7"]), &[]),
            ip("127.0.0.1")
        );
        // A trusted proxy: the address it appended, whatever the client wrote before it.
        assert_eq!(
            client_ip(local, &headers(&["1.1.1.1, 198.51.100.7"]), &trusted),
            ip("198.51.100.7")
        );
        assert_eq!(
            client_ip(local, &headers(&["1.1.1.1", "198.51.100.7"]), &trusted),
            ip("198.51.100.7")
        );
        // Proxies of the chain that are trusted are skipped.
        assert_eq!(
            client_ip(local, &headers(&["198.51.100.7, 127.0.0.1"]), &trusted),
            ip("198.51.100.7")
        );
        // Not from the proxy: the header is ignored.
        assert_eq!(
            client_ip(far, &headers(&["1.1.1.1"]), &trusted),
            ip("203.0.113.9")
        );
        // Garbage, or none: the peer.
        assert_eq!(
            client_ip(local, &headers(&["1.1.1.1, evil"]), &trusted),
            ip("127.0.0.1")
        );
        assert_eq!(client_ip(local, &headers(&[]), &trusted), ip("127.0.0.1"));
    }
}

//! The address ranges no outgoing connection reaches unless allowed: IANA's special-purpose
//! registries for IPv4 and IPv6, multicast, and every IPv6 form that embeds an IPv4 address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What kind of address an IP is, for the refusal's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Reachable by anyone on the internet.
    Public,
    /// A special-purpose range: its CIDR and what it is.
    Special(&'static str, &'static str),
}

/// IANA's IPv4 Special-Purpose Address Registry (RFC 6890 and updates), every entry, whether
/// or not the registry calls it globally reachable: a crawler or a callback has no business
/// at an anycast relay or a benchmarking network either. Multicast and the reserved 240/4 are
/// added.
const V4_SPECIAL: &[(u32, u8, &str, &str)] = &[
    (0x0000_0000, 8, "0.0.0.0/8", "\"this network\""),
    (0x0A00_0000, 8, "10.0.0.0/8", "private"),
    (
        0x6440_0000,
        10,
        "100.64.0.0/10",
        "shared address space (CGNAT)",
    ),
    (0x7F00_0000, 8, "127.0.0.0/8", "loopback"),
    (0xA9FE_0000, 16, "169.254.0.0/16", "link-local"),
    (0xAC10_0000, 12, "172.16.0.0/12", "private"),
    (0xC000_0000, 24, "192.0.0.0/24", "IETF protocol assignments"),
    (0xC000_0200, 24, "192.0.2.0/24", "documentation"),
    (0xC01F_C400, 24, "192.31.196.0/24", "AS112"),
    (0xC034_C100, 24, "192.52.193.0/24", "AMT"),
    (0xC058_6300, 24, "192.88.99.0/24", "6to4 relay anycast"),
    (0xC0A8_0000, 16, "192.168.0.0/16", "private"),
    (0xC0AF_3000, 24, "192.175.48.0/24", "AS112"),
    (0xC612_0000, 15, "198.18.0.0/15", "benchmarking"),
    (0xC633_6400, 24, "198.51.100.0/24", "documentation"),
    (0xCB00_7100, 24, "203.0.113.0/24", "documentation"),
    (0xE000_0000, 4, "224.0.0.0/4", "multicast"),
    (0xF000_0000, 4, "240.0.0.0/4", "reserved"),
];

/// IANA's IPv6 Special-Purpose Address Registry inside the only range allocated for global
/// unicast (2000::/3); everything outside it is refused by that rule alone, with the names
/// below for the words.
const V6_SPECIAL: &[(u128, u8, &str, &str)] = &[
    (
        0x2001_0000 << 96,
        32,
        "2001::/32",
        "Teredo (embeds an IPv4 address)",
    ),
    (
        0x2001_0000 << 96,
        23,
        "2001::/23",
        "IETF protocol assignments",
    ),
    (0x2001_0db8 << 96, 32, "2001:db8::/32", "documentation"),
    (
        0x2002 << 112,
        16,
        "2002::/16",
        "6to4 (embeds an IPv4 address)",
    ),
    (0x2620_004f_8000 << 80, 48, "2620:4f:8000::/48", "AS112"),
    (0x3fff << 112, 20, "3fff::/20", "documentation"),
];

/// IPv6 ranges outside 2000::/3 with a name of their own.
const V6_OUTSIDE: &[(u128, u8, &str, &str)] = &[
    (0, 128, "::/128", "unspecified"),
    (1, 128, "::1/128", "loopback"),
    (0, 96, "::/96", "IPv4-compatible (embeds an IPv4 address)"),
    (
        0x0064_ff9b << 96,
        96,
        "64:ff9b::/96",
        "NAT64 (embeds an IPv4 address)",
    ),
    (
        0x0064_ff9b_0001 << 80,
        48,
        "64:ff9b:1::/48",
        "local NAT64 (embeds an IPv4 address)",
    ),
    (0x0100 << 112, 64, "100::/64", "discard-only"),
    (0xfc00 << 112, 7, "fc00::/7", "unique local (private)"),
    (0xfe80 << 112, 10, "fe80::/10", "link-local"),
    (0xfec0 << 112, 10, "fec0::/10", "site-local (deprecated)"),
    (0xff00 << 112, 8, "ff00::/8", "multicast"),
];

fn v4(ip: Ipv4Addr) -> Class {
    let n = u32::from(ip);
    V4_SPECIAL
        .iter()
        .find(|&&(net, len, ..)| n >> (32 - len) == net >> (32 - len))
        .map_or(Class::Public, |&(_, _, cidr, what)| {
            Class::Special(cidr, what)
        })
}

fn in_range(n: u128, net: u128, len: u8) -> bool {
    len == 0 || n >> (128 - u32::from(len)) == net >> (128 - u32::from(len))
}

fn v6(ip: Ipv6Addr) -> Class {
    // `::ffff:a.b.c.d` is the IPv4 address itself on a dual-stack socket: judged as that.
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return v4(mapped);
    }
    let n = u128::from(ip);
    if n >> 125 != 0b001 {
        return V6_OUTSIDE
            .iter()
            .find(|&&(net, len, ..)| in_range(n, net, len))
            .map_or(
                Class::Special("outside 2000::/3", "not global unicast"),
                |&(_, _, cidr, what)| Class::Special(cidr, what),
            );
    }
    V6_SPECIAL
        .iter()
        .find(|&&(net, len, ..)| in_range(n, net, len))
        .map_or(Class::Public, |&(_, _, cidr, what)| {
            Class::Special(cidr, what)
        })
}

/// The class of an address.
pub fn classify(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(a) => v4(a),
        IpAddr::V6(a) => v6(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(ip: &str) -> bool {
        classify(ip.parse().unwrap()) == Class::Public
    }

    #[test]
    fn every_special_purpose_range_and_embedding_is_refused() {
        for ip in [
            "127.0.0.1",
            "127.255.255.254",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "100.127.255.255",
            "255.255.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "192.0.0.1",
            "192.0.0.170",
            "192.0.2.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "192.88.99.1",
            "192.31.196.1",
            "192.52.193.1",
            "192.175.48.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "fc00::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::7f00:1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::1",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:db8::1",
            "3fff::1",
            "2620:4f:8000::1",
        ] {
            assert!(!public(ip), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "198.20.0.1",
            "192.0.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2a00:1450:4001:80b::200e",
        ] {
            assert!(public(ip), "{ip}");
        }
    }

    #[test]
    fn refusals_name_the_range() {
        assert_eq!(
            classify("127.0.0.1".parse().unwrap()),
            Class::Special("127.0.0.0/8", "loopback")
        );
        assert_eq!(
            classify("::ffff:169.254.169.254".parse().unwrap()),
            Class::Special("169.254.0.0/16", "link-local")
        );
        assert_eq!(
            classify("::1".parse().unwrap()),
            Class::Special("::1/128", "loopback")
        );
        assert_eq!(
            classify("2001:0:4136:e378::1".parse().unwrap()),
            Class::Special("2001::/32", "Teredo (embeds an IPv4 address)")
        );
    }
}

//! Whether an address rule could let the judge in: the judge asks from an address of its own
//! on this machine, so a rule that grants loopback, this machine's own addresses, or a network
//! holding the judge's address would let it in where a stranger is refused. Such a rule hides
//! what it governs; one that grants only other networks refuses the judge as it refuses the
//! world, and is left to the judge.

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Who the judge is, as a web server sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeFacts {
    /// The address it asks from.
    pub source: IpAddr,
    /// This machine's own addresses (any of which a server may treat as itself).
    pub local: Vec<IpAddr>,
}

impl Default for JudgeFacts {
    fn default() -> JudgeFacts {
        JudgeFacts {
            source: IpAddr::V4(Ipv4Addr::LOCALHOST),
            local: Vec::new(),
        }
    }
}

/// What an address rule grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Everyone alike (`all`, `0.0.0.0/0`).
    Everyone,
    /// Some network that holds the judge (why, in words).
    Judge(String),
    /// Only others: the judge is refused as a stranger is.
    Others,
}

fn loopback_nets() -> [IpNet; 3] {
    [
        IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(127, 0, 0, 0), 8)),
        IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::LOCALHOST, 128)),
        // IPv4-mapped loopback, which a dual-stack socket reports.
        IpNet::V6(Ipv6Net::new_assert(
            Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0x7f00, 0),
            104,
        )),
    ]
}

fn overlap(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// The IPv4-mapped form of an address, so `::ffff:10.0.0.1/128` rules are judged as IPv4.
fn contains(net: &IpNet, addr: IpAddr) -> bool {
    if net.contains(&addr) {
        return true;
    }
    match addr {
        IpAddr::V4(v4) => net.contains(&IpAddr::V6(v4.to_ipv6_mapped())),
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .is_some_and(|v4| net.contains(&IpAddr::V4(v4))),
    }
}

impl JudgeFacts {
    /// What a rule granting `net` grants.
    pub(crate) fn grant(&self, net: &IpNet) -> Grant {
        if net.prefix_len() == 0 {
            return Grant::Everyone;
        }
        if loopback_nets().iter().any(|l| overlap(l, net)) {
            return Grant::Judge(format!("{net} is loopback, where the judge asks from"));
        }
        if contains(net, self.source) {
            return Grant::Judge(format!("{net} holds the judge's address {}", self.source));
        }
        if let Some(a) = self.local.iter().find(|a| contains(net, **a)) {
            return Grant::Judge(format!("{net} holds this machine's address {a}"));
        }
        Grant::Others
    }

    /// The strongest of several grants: the judge's if any lets it in.
    fn strongest(&self, nets: impl IntoIterator<Item = IpNet>) -> Grant {
        let mut out = Grant::Others;
        for n in nets {
            match self.grant(&n) {
                g @ Grant::Judge(_) => return g,
                Grant::Everyone => out = Grant::Everyone,
                Grant::Others => {}
            }
        }
        out
    }

    /// nginx's `allow` argument: an address, a CIDR network, `unix:` or `all`.
    pub(crate) fn nginx_allow(&self, arg: &str) -> Result<Grant, String> {
        let a = arg.trim();
        if a.eq_ignore_ascii_case("all") {
            return Ok(Grant::Everyone);
        }
        if a == "unix:" {
            // Clients on a UNIX socket are this machine's own.
            return Ok(Grant::Judge("unix: is this machine's own".into()));
        }
        let net = parse_net(a).ok_or_else(|| format!("allow {a} is not an address"))?;
        Ok(self.grant(&net))
    }

    /// Apache's `Require ip` arguments (and `Allow from`'s addresses): full and partial
    /// addresses (`10.1`), `network/bits`, `network/netmask`, IPv6.
    pub(crate) fn apache_ip(&self, args: &[&str]) -> Result<Grant, String> {
        let mut nets = Vec::new();
        for a in args {
            nets.push(apache_net(a).ok_or_else(|| format!("{a} is not an address"))?);
        }
        Ok(self.strongest(nets))
    }
}

/// An address or a CIDR network (`10.0.0.0/8`, `::1`, `[::1]`).
fn parse_net(s: &str) -> Option<IpNet> {
    let s = s.trim_start_matches('[').replace(']', "");
    if let Ok(n) = s.parse::<IpNet>() {
        return Some(n.trunc());
    }
    s.parse::<IpAddr>().ok().map(IpNet::from)
}

/// One of Apache's address forms as a network.
pub(crate) fn apache_net(s: &str) -> Option<IpNet> {
    if let Some(n) = parse_net(s) {
        return Some(n);
    }
    if let Some((addr, mask)) = s.split_once('/') {
        // network/netmask.
        let addr: Ipv4Addr = addr.parse().ok()?;
        let mask: Ipv4Addr = mask.parse().ok()?;
        let bits = u32::from(mask);
        let len = bits.leading_ones();
        if bits.checked_shl(len).unwrap_or(0) != 0 {
            return None;
        }
        return Ipv4Net::new(addr, len as u8)
            .ok()
            .map(|n| IpNet::V4(n.trunc()));
    }
    // A partial address: its first one to three octets.
    let octets: Vec<&str> = s.trim_end_matches('.').split('.').collect();
    if octets.is_empty() || octets.len() > 3 {
        return None;
    }
    let mut bytes = [0u8; 4];
    for (i, o) in octets.iter().enumerate() {
        bytes[i] = o.parse().ok()?;
    }
    Ipv4Net::new(Ipv4Addr::from(bytes), (octets.len() * 8) as u8)
        .ok()
        .map(IpNet::V4)
}

/// This machine's own addresses, from its interfaces.
pub fn local_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below; each entry is read only
    // while the list lives.
    unsafe {
        if libc::getifaddrs(&mut head) != 0 {
            return out;
        }
        let mut cur = head;
        while !cur.is_null() {
            let addr = (*cur).ifa_addr;
            if !addr.is_null() {
                match i32::from((*addr).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(addr as *const libc::sockaddr_in);
                        out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                            sin.sin_addr.s_addr,
                        ))));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(addr as *const libc::sockaddr_in6);
                        out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            cur = (*cur).ifa_next;
        }
        libc::freeifaddrs(head);
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> JudgeFacts {
        JudgeFacts {
            source: "127.83.14.201".parse().unwrap(),
            local: vec!["192.0.2.2".parse().unwrap(), "2001:db8::2".parse().unwrap()],
        }
    }

    #[test]
    fn grants_that_hold_the_judge_are_named() {
        let f = facts();
        for a in [
            "127.0.0.1",
            "127.0.0.0/8",
            "::1",
            "[::1]",
            "192.0.2.2",
            "192.0.2.0/24",
            "2001:db8::/32",
            "::ffff:127.0.0.1",
            "unix:",
            "0.0.0.0/1",
        ] {
            assert!(
                matches!(f.nginx_allow(a), Ok(Grant::Judge(_))),
                "{a}: {:?}",
                f.nginx_allow(a)
            );
        }
        for a in ["10.0.0.0/8", "203.0.113.7", "2001:db9::/32"] {
            assert_eq!(f.nginx_allow(a), Ok(Grant::Others), "{a}");
        }
        assert_eq!(f.nginx_allow("all"), Ok(Grant::Everyone));
        assert_eq!(f.nginx_allow("0.0.0.0/0"), Ok(Grant::Everyone));
        assert!(f.nginx_allow("example.org").is_err());
    }

    #[test]
    fn apaches_address_forms() {
        let f = facts();
        assert!(matches!(f.apache_ip(&["127"]), Ok(Grant::Judge(_))));
        assert!(matches!(
            f.apache_ip(&["10.1", "127.0"]),
            Ok(Grant::Judge(_))
        ));
        assert!(matches!(
            f.apache_ip(&["192.0.2.0/255.255.255.0"]),
            Ok(Grant::Judge(_))
        ));
        assert_eq!(f.apache_ip(&["10.1", "172.16.0.0/12"]), Ok(Grant::Others));
        assert_eq!(apache_net("10.1"), Some("10.1.0.0/16".parse().unwrap()));
        assert_eq!(
            apache_net("10.1.2.3/255.255.0.0"),
            Some("10.1.0.0/16".parse().unwrap())
        );
        assert_eq!(apache_net("10.1.2.3/255.0.255.0"), None);
        assert!(f.apache_ip(&["localhost"]).is_err());
    }

    #[test]
    fn this_machine_has_a_loopback_address() {
        assert!(local_addresses().iter().any(IpAddr::is_loopback));
    }
}

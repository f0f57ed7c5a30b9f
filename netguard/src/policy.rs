//! The operator's policy: public addresses, plus the networks named on the command line.

use crate::ranges::{Class, classify};
use ipnet::IpNet;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use url::{Host, Url};

/// A destination refused, with the words that say why and how to allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} leads to {address}, {kind} ({cidr}); allow its network with {flag} {cidr}")]
pub struct Refusal {
    /// The host as named (a URL's host, or a name that resolved to the address).
    pub what: String,
    /// The address refused.
    pub address: IpAddr,
    /// What the range is (`loopback`, `private`...).
    pub kind: &'static str,
    /// The range.
    pub cidr: &'static str,
    /// The option that allows it.
    pub flag: &'static str,
}

/// Public addresses, and the networks the operator allows.
#[derive(Debug, Clone)]
pub struct NetPolicy {
    allowed: Arc<Vec<IpNet>>,
    flag: &'static str,
}

impl NetPolicy {
    /// Public addresses plus `allowed`; `flag` is the option that names allowed networks
    /// (`--allow-net`), quoted in refusals.
    pub fn new(allowed: Vec<IpNet>, flag: &'static str) -> NetPolicy {
        NetPolicy {
            allowed: Arc::new(allowed),
            flag,
        }
    }

    /// The networks allowed beyond the public ones.
    pub fn allowed(&self) -> &[IpNet] {
        &self.allowed
    }

    /// Whether a connection to `ip` is allowed; `what` names the host for the refusal.
    pub fn check(&self, what: &str, ip: IpAddr) -> Result<(), Refusal> {
        let (cidr, kind) = match classify(ip) {
            Class::Public => return Ok(()),
            Class::Special(cidr, kind) => (cidr, kind),
        };
        // `::ffff:10.1.2.3` is 10.1.2.3 on the wire: an allowed IPv4 network covers it.
        let plain = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        if self
            .allowed
            .iter()
            .any(|n| n.contains(&ip) || n.contains(&plain))
        {
            return Ok(());
        }
        Err(Refusal {
            what: what.to_string(),
            address: ip,
            kind,
            cidr,
            flag: self.flag,
        })
    }

    /// Checks a URL's host when it is an address; a name is checked when it is resolved
    /// ([`crate::GuardedResolver`]), since HTTP clients do not resolve addresses.
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        match url.host() {
            Some(Host::Ipv4(ip)) => self.check(url.as_str(), IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.check(url.as_str(), IpAddr::V6(ip)),
            _ => Ok(()),
        }
    }
}

/// Destinations kept for the console.
const KEPT: usize = 50;

/// How many connections were refused, and the latest of them.
#[derive(Debug, Default)]
pub struct RefusalCounter {
    count: AtomicU64,
    latest: Mutex<VecDeque<Refusal>>,
}

impl RefusalCounter {
    /// Counts a refusal.
    pub fn note(&self, r: &Refusal) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        if latest.len() == KEPT {
            latest.pop_front();
        }
        latest.push_back(r.clone());
    }

    /// Refusals so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The latest refusals, oldest first.
    pub fn latest(&self) -> Vec<Refusal> {
        let latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        latest.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_loopback_is_refused_and_named() {
        let p = NetPolicy::new(Vec::new(), "--allow-net");
        for u in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[::1]:8080/",
            "http://[::]/",
            "http://0.0.0.0/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00::1]/",
        ] {
            let url = Url::parse(u).unwrap();
            let e = p.check_url(&url).unwrap_err();
            assert!(e.to_string().contains("--allow-net"), "{u}: {e}");
        }
        let e = p
            .check_url(&Url::parse("http://2130706433/").unwrap())
            .unwrap_err();
        assert_eq!(e.kind, "loopback");
        assert_eq!(e.cidr, "127.0.0.0/8");
        // Names are the resolver's to check.
        assert!(
            p.check_url(&Url::parse("http://localhost/").unwrap())
                .is_ok()
        );
        assert!(
            p.check_url(&Url::parse("http://93.184.216.34/").unwrap())
                .is_ok()
        );
    }

    #[test]
    fn an_allowed_network_covers_its_mapped_form_and_nothing_else() {
        let p = NetPolicy::new(vec!["127.0.0.0/8".parse().unwrap()], "--allow-net");
        assert!(p.check("x", "127.0.0.1".parse().unwrap()).is_ok());
        assert!(p.check("x", "::ffff:127.0.0.2".parse().unwrap()).is_ok());
        assert!(p.check("x", "::1".parse().unwrap()).is_err());
        assert!(p.check("x", "10.0.0.1".parse().unwrap()).is_err());
        assert!(p.check("x", "169.254.169.254".parse().unwrap()).is_err());
        // 6to4 carries the address inside another route: not the allowed network.
        assert!(p.check("x", "2002:7f00:1::1".parse().unwrap()).is_err());
    }

    #[test]
    fn refusals_are_counted_and_the_latest_kept() {
        let c = RefusalCounter::default();
        let p = NetPolicy::new(Vec::new(), "--allow-net");
        for i in 0..60u8 {
            let r = p
                .check(&format!("h{i}"), IpAddr::from([10, 0, 0, i]))
                .unwrap_err();
            c.note(&r);
        }
        assert_eq!(c.count(), 60);
        let latest = c.latest();
        assert_eq!(latest.len(), KEPT);
        assert_eq!(latest.last().map(|r| r.what.as_str()), Some("h59"));
    }
}

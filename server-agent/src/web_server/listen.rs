//! Where a stranger's request for the site lands: on which of the server's sockets, and so
//! which server block or virtual host answers it. The judge asks there, and only that block's
//! rules are read: a monitoring host that listens on loopback over the same docroot answers
//! neither the world nor the judge.
//!
//! nginx and Apache choose alike: the connection's local address and port pick the sockets
//! (one bound to that exact address wins over one bound to every address), then the `Host`
//! picks among the blocks listening there (else the default one, else the first).

use crate::server_config::{ServerKind, Vhost, names_match};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

/// Where a block listens: an address (unspecified: every address of its family, or of both
/// for Apache's `*`) and a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Socket {
    /// The address.
    pub(crate) addr: IpAddr,
    /// Whether an unspecified address covers both families (Apache's `*`).
    pub(crate) both: bool,
    /// The port.
    pub(crate) port: u16,
    /// Marked `default_server`.
    pub(crate) default: bool,
}

impl Socket {
    fn lands(&self, d: IpAddr) -> bool {
        if self.addr.is_unspecified() {
            self.both || self.addr.is_ipv4() == d.is_ipv4()
        } else {
            self.addr == d
        }
    }
}

/// An address written in a configuration: a literal, `*`, or a name resolved as the server
/// resolved it when it started.
fn address(host: &str) -> Option<(IpAddr, bool)> {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    match h {
        "*" | "_default_" | "" => Some((IpAddr::V4(Ipv4Addr::UNSPECIFIED), true)),
        _ => match h.parse::<IpAddr>() {
            Ok(a) => Some((a, false)),
            Err(_) => (h, 0u16)
                .to_socket_addrs()
                .ok()?
                .next()
                .map(|s| (s.ip(), false)),
        },
    }
}

/// One nginx `listen` (`80`, `127.0.0.1:8080 default_server`, `[::]:80`, `*:443 ssl`).
pub(crate) fn nginx_socket(listen: &str) -> Option<Socket> {
    let mut words = listen.split_whitespace();
    let first = words.next()?;
    let default = listen
        .split_whitespace()
        .any(|w| w == "default_server" || w == "default");
    if first.starts_with("unix:") {
        return None;
    }
    let (addr, port) = if let Ok(port) = first.parse::<u16>() {
        (IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)
    } else if let Some(rest) = first.strip_prefix('[') {
        let (a, p) = rest.split_once(']')?;
        let port = p.strip_prefix(':').map_or(Some(80), |p| p.parse().ok())?;
        (a.parse::<Ipv6Addr>().ok().map(IpAddr::V6)?, port)
    } else {
        let (host, port) = match first.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().ok()?),
            None => (first, 80),
        };
        let (a, _) = address(host)?;
        (a, port)
    };
    Some(Socket {
        addr,
        both: false,
        port,
        default,
    })
}

/// An Apache `<VirtualHost>` address (`*:80`, `127.0.0.1:8080`, `[::1]:80`, `_default_`);
/// `port` when it names none.
pub(crate) fn apache_socket(addr: &str, port: u16) -> Option<Socket> {
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let (a, p) = rest.split_once(']')?;
        (
            a,
            p.strip_prefix(':').map_or(Some(port), |p| p.parse().ok())?,
        )
    } else {
        match addr.rsplit_once(':') {
            Some((h, "*")) => (h, port),
            Some((h, p)) => (h, p.parse().ok()?),
            None => (addr, port),
        }
    };
    let (a, both) = address(host)?;
    Some(Socket {
        addr: a,
        both,
        port,
        default: false,
    })
}

/// The sockets of a block.
fn sockets(
    kind: ServerKind,
    v: &Vhost,
    port: u16,
    resolved: &HashMap<(String, usize), String>,
) -> Vec<Socket> {
    match kind {
        ServerKind::Nginx if v.listens.is_empty() => vec![Socket {
            addr: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            both: false,
            port: 80,
            default: false,
        }],
        ServerKind::Nginx => v.listens.iter().filter_map(|l| nginx_socket(l)).collect(),
        ServerKind::Apache => {
            let written = match resolved.get(&v.at) {
                Some(a) => vec![a.clone()],
                None => v.listens.clone(),
            };
            written
                .iter()
                .filter_map(|a| apache_socket(a, port))
                .collect()
        }
    }
}

/// Where the judge asks, and which block answers there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The address and port asked.
    pub(crate) destination: SocketAddr,
    /// The block that answers (file, line).
    pub(crate) vhost: (String, usize),
    /// Its `root` or `DocumentRoot`, as written.
    pub(crate) docroot: Option<String>,
    /// Why, in words.
    pub(crate) why: String,
}

/// What the choice is made from.
pub(crate) struct Facts<'a> {
    /// nginx or Apache.
    pub(crate) kind: ServerKind,
    /// Every block of the configuration.
    pub(crate) vhosts: &'a [Vhost],
    /// Apache's own account of each virtual host's address.
    pub(crate) resolved: &'a HashMap<(String, usize), String>,
    /// The site's host and port.
    pub(crate) host: &'a str,
    /// The site's port.
    pub(crate) port: u16,
    /// The addresses the site's name has.
    pub(crate) name_addrs: &'a [IpAddr],
    /// This machine's addresses.
    pub(crate) local: &'a [IpAddr],
    /// The address the judge asks from.
    pub(crate) source: IpAddr,
}

/// Where a stranger's request for the site lands, and so where the judge asks.
pub(crate) fn choose(f: &Facts) -> Option<Choice> {
    let on_port: Vec<(usize, Socket)> = f
        .vhosts
        .iter()
        .enumerate()
        .flat_map(|(i, v)| {
            sockets(f.kind, v, f.port, f.resolved)
                .into_iter()
                .map(move |s| (i, s))
        })
        .filter(|(_, s)| s.port == f.port)
        .collect();
    let landing = |d: IpAddr| -> Vec<(usize, Socket)> {
        let exact: Vec<(usize, Socket)> = on_port
            .iter()
            .copied()
            .filter(|(_, s)| !s.addr.is_unspecified() && s.addr == d)
            .collect();
        if !exact.is_empty() {
            return exact;
        }
        on_port
            .iter()
            .copied()
            .filter(|(_, s)| s.addr.is_unspecified() && s.lands(d))
            .collect()
    };
    let is_local = |a: &IpAddr| a.is_loopback() || f.local.contains(a);
    let mut names: Vec<IpAddr> = f.name_addrs.iter().copied().filter(is_local).collect();
    names.sort_by_key(IpAddr::is_loopback);
    // 1. The site's name is this machine: exactly where the world's requests land.
    for d in names {
        let group = landing(d);
        if !group.is_empty() {
            return pick(f, &group, d, format!("{} is this machine's address", d));
        }
    }
    // 2. Every address: the judge's own address lands there, as an address nothing names.
    let any = landing(f.source);
    if !any.is_empty() {
        return pick(
            f,
            &any,
            f.source,
            "the site is served on every address of the machine".into(),
        );
    }
    // 3. A public address the configuration names, then a loopback one.
    for want_loopback in [false, true] {
        let specific: Vec<(usize, Socket)> = on_port
            .iter()
            .copied()
            .filter(|(_, s)| !s.addr.is_unspecified() && s.addr.is_loopback() == want_loopback)
            .collect();
        let named: Vec<(usize, Socket)> = specific
            .iter()
            .copied()
            .filter(|(i, _)| serves(f, *i))
            .collect();
        let chosen = if named.is_empty() { &specific } else { &named };
        if let Some((_, s)) = chosen.first() {
            let d = s.addr;
            return pick(
                f,
                &landing(d),
                d,
                format!("the configuration serves the site on {d}"),
            );
        }
    }
    None
}

/// Whether block `i` names the site's host (nginx's `_` names nothing).
fn serves(f: &Facts, i: usize) -> bool {
    let names: Vec<&String> = f.vhosts[i].names.iter().filter(|n| *n != "_").collect();
    !names.is_empty() && names_match(&names, f.host)
}

/// The block among `group` (the blocks listening where `d` lands) that answers the site:
/// one naming its host, else the default, else the first.
fn pick(f: &Facts, group: &[(usize, Socket)], d: IpAddr, why: String) -> Option<Choice> {
    let named = group.iter().find(|(i, _)| serves(f, *i));
    let default = group.iter().find(|(_, s)| s.default);
    let (i, _) = named.or(default).or_else(|| group.first())?;
    let v = &f.vhosts[*i];
    Some(Choice {
        destination: SocketAddr::new(d, f.port),
        vhost: v.at.clone(),
        docroot: v.docroot.clone(),
        why: format!("{why}; {}:{} answers there", v.at.0, v.at.1),
    })
}

/// Blocks other than `chosen` that listen only on loopback: a monitoring or intranet host,
/// which answers neither the world nor the judge.
pub(crate) fn loopback_only<'a>(
    kind: ServerKind,
    vhosts: &'a [Vhost],
    resolved: &HashMap<(String, usize), String>,
    port: u16,
    chosen: &(String, usize),
) -> Vec<(&'a Vhost, Vec<Socket>)> {
    vhosts
        .iter()
        .filter(|v| v.at != *chosen)
        .filter_map(|v| {
            let s = sockets(kind, v, port, resolved);
            (!s.is_empty() && s.iter().all(|s| s.addr.is_loopback())).then_some((v, s))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(line: usize, listens: &[&str], names: &[&str]) -> Vhost {
        Vhost {
            at: ("site.conf".into(), line),
            listens: listens.iter().map(|s| s.to_string()).collect(),
            names: names.iter().map(|s| s.to_string()).collect(),
            docroot: Some("/var/www".into()),
        }
    }

    fn facts<'a>(
        kind: ServerKind,
        vhosts: &'a [Vhost],
        names: &'a [IpAddr],
        resolved: &'a HashMap<(String, usize), String>,
    ) -> Facts<'a> {
        Facts {
            kind,
            vhosts,
            resolved,
            host: "www.example.org",
            port: 80,
            name_addrs: names,
            local: &[],
            source: "127.83.14.201".parse().unwrap(),
        }
    }

    #[test]
    fn the_public_block_answers_not_the_loopback_one() {
        let none = HashMap::new();
        let blocks = [
            v(1, &["127.0.0.1:80"], &["www.example.org"]),
            v(5, &["80"], &["www.example.org"]),
        ];
        // The name is not this machine's: the judge's own address lands on the wildcard.
        let c = choose(&facts(ServerKind::Nginx, &blocks, &[], &none)).unwrap();
        assert_eq!(c.vhost.1, 5);
        assert_eq!(c.destination, "127.83.14.201:80".parse().unwrap());
        // A name that is 127.0.0.1: there, the loopback block answers, as for anyone.
        let lo = ["127.0.0.1".parse().unwrap()];
        let c = choose(&facts(ServerKind::Nginx, &blocks, &lo, &none)).unwrap();
        assert_eq!(c.vhost.1, 1);
        let others = loopback_only(
            ServerKind::Nginx,
            &blocks,
            &none,
            80,
            &("site.conf".into(), 5),
        );
        assert_eq!(others.len(), 1);
        assert_eq!(others[0].0.at.1, 1);
    }

    #[test]
    fn names_and_defaults_pick_among_blocks_on_one_socket() {
        let none = HashMap::new();
        let blocks = [
            v(1, &["80"], &["other.org"]),
            v(2, &["80 default_server"], &["_"]),
            v(3, &["80"], &["*.example.org"]),
        ];
        let c = choose(&facts(ServerKind::Nginx, &blocks, &[], &none)).unwrap();
        assert_eq!(c.vhost.1, 3);
        let blocks = [
            v(1, &["80"], &["other.org"]),
            v(2, &["80 default_server"], &["x"]),
        ];
        let c = choose(&facts(ServerKind::Nginx, &blocks, &[], &none)).unwrap();
        assert_eq!(c.vhost.1, 2);
    }

    #[test]
    fn apache_hosts_by_address_then_name() {
        let mut resolved = HashMap::new();
        resolved.insert(("site.conf".to_string(), 9), "192.0.2.2:80".to_string());
        let blocks = [
            v(1, &["127.0.0.1:80"], &["www.example.org"]),
            v(5, &["*:80"], &["www.example.org"]),
            v(9, &["www.example.org:80"], &["www.example.org"]),
        ];
        let public = ["192.0.2.2".parse().unwrap()];
        let mut f = facts(ServerKind::Apache, &blocks, &public, &resolved);
        let local = ["192.0.2.2".parse().unwrap()];
        f.local = &local;
        let c = choose(&f).unwrap();
        assert_eq!(c.vhost.1, 9);
        assert_eq!(c.destination, "192.0.2.2:80".parse().unwrap());
        f.name_addrs = &[];
        assert_eq!(choose(&f).unwrap().vhost.1, 5);
    }

    #[test]
    fn a_site_served_on_loopback_only_is_asked_there() {
        let none = HashMap::new();
        let blocks = [v(1, &["127.0.0.1:8080"], &[])];
        let mut f = facts(ServerKind::Nginx, &blocks, &[], &none);
        f.port = 8080;
        let c = choose(&f).unwrap();
        assert_eq!(c.destination, "127.0.0.1:8080".parse().unwrap());
        f.port = 9090;
        assert_eq!(choose(&f), None);
    }

    #[test]
    fn listen_forms() {
        let s = nginx_socket("[::1]:8080 ipv6only=on").unwrap();
        assert_eq!((s.addr, s.port), ("::1".parse().unwrap(), 8080));
        let s = nginx_socket("*:443 ssl default_server").unwrap();
        assert!(s.addr.is_unspecified() && s.default && s.port == 443);
        assert_eq!(nginx_socket("8080").unwrap().port, 8080);
        assert_eq!(
            nginx_socket("127.0.0.1").unwrap().addr,
            "127.0.0.1".parse::<IpAddr>().unwrap()
        );
        assert!(nginx_socket("unix:/run/x.sock").is_none());
        let a = apache_socket("*:80", 80).unwrap();
        assert!(a.both && a.addr.is_unspecified());
        assert_eq!(apache_socket("_default_", 8080).unwrap().port, 8080);
        assert_eq!(apache_socket("[::1]:81", 80).unwrap().port, 81);
    }
}

//! Politeness keyed by server address (`--politeness-key ip`): host names served by one
//! machine share one delay and one connection limit between them, as Heritrix's and BUbiNG's
//! users ask for when a shared host serves thousands of names. A host's address is looked up
//! before its first request; hosts of one address then take turns.

use crate::ids::HostId;
use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

/// What politeness is keyed by.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PolitenessKey {
    /// Each host name on its own.
    #[default]
    Host,
    /// Each server address: its host names share the delay and the connection limit.
    Ip,
}

/// Where a host's address lookup stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Address {
    /// Not looked up.
    #[default]
    Unknown,
    /// Being looked up.
    Resolving,
    /// Looked up: the address, or none (the host is then paced on its own).
    Known(Option<IpAddr>),
}

impl Address {
    /// The address its politeness is keyed by, if any.
    pub(crate) fn ip(self) -> Option<IpAddr> {
        match self {
            Address::Known(ip) => ip,
            _ => None,
        }
    }
}

/// One server address: its clock and connections, and the hosts waiting for a connection.
#[derive(Debug)]
struct Server {
    next_allowed: Instant,
    in_flight: usize,
    waiting: Vec<HostId>,
}

/// Whether a request to a host of a server may start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Yes.
    Go,
    /// Not before this instant.
    Until(Instant),
    /// The server has as many requests under way as its limit: wait for one to end.
    Full,
}

/// The servers of a crawl keyed by address.
#[derive(Debug, Default)]
pub(crate) struct Servers {
    by_ip: HashMap<IpAddr, Server>,
}

impl Servers {
    /// Whether `host` of server `ip` may be contacted at `now`, with `limit` connections to
    /// the server; a host turned away for a full server is remembered, to be woken when a
    /// request ends.
    pub(crate) fn gate(&mut self, ip: IpAddr, host: HostId, now: Instant, limit: usize) -> Gate {
        let s = self.by_ip.entry(ip).or_insert(Server {
            next_allowed: now,
            in_flight: 0,
            waiting: Vec::new(),
        });
        if s.next_allowed > now {
            Gate::Until(s.next_allowed)
        } else if s.in_flight >= limit {
            if !s.waiting.contains(&host) {
                s.waiting.push(host);
            }
            Gate::Full
        } else {
            Gate::Go
        }
    }

    /// A request to the server started.
    pub(crate) fn started(&mut self, ip: IpAddr) {
        if let Some(s) = self.by_ip.get_mut(&ip) {
            s.in_flight += 1;
        }
    }

    /// A request to the server ended; it may be contacted again no earlier than `not_before`.
    /// Returns the hosts that waited for a connection.
    pub(crate) fn ended(&mut self, ip: IpAddr, not_before: Instant) -> Vec<HostId> {
        let Some(s) = self.by_ip.get_mut(&ip) else {
            return Vec::new();
        };
        s.in_flight = s.in_flight.saturating_sub(1);
        s.next_allowed = s.next_allowed.max(not_before);
        std::mem::take(&mut s.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hosts_of_one_address_share_its_clock_and_its_connections() {
        let mut servers = Servers::default();
        let ip: IpAddr = [10, 0, 0, 1].into();
        let now = Instant::now();
        assert_eq!(servers.gate(ip, HostId(1), now, 1), Gate::Go);
        servers.started(ip);
        assert_eq!(servers.gate(ip, HostId(2), now, 1), Gate::Full);
        let later = now + Duration::from_secs(1);
        assert_eq!(servers.ended(ip, later), vec![HostId(2)]);
        assert_eq!(servers.gate(ip, HostId(2), now, 1), Gate::Until(later));
        assert_eq!(servers.gate(ip, HostId(2), later, 1), Gate::Go);
        let other: IpAddr = [10, 0, 0, 2].into();
        assert_eq!(
            servers.gate(other, HostId(3), now, 1),
            Gate::Go,
            "another server"
        );
    }
}

//! The shared frontier of a fleet: any number of `webcoop-crawl` processes working on one
//! crawl, with Redis (one server, or a Redis Cluster) holding what they share. `leases` keeps
//! every host polite whichever process contacts it; `queue` keeps the seen-set and the queue so
//! that each URL is fetched once, taken under a lease that returns it if its taker dies.
//!
//! Every key of a crawl starts with a hash tag: `{crawl:crawl}` for what the crawl has one of,
//! `{crawl:qgN}` for the queues of one of `queue::HOST_GROUPS` groups of hosts (a saved batch
//! is one script per group), `{crawl:ID}` for a host's robots.txt and pages kept fresh, and
//! `{crawl:lgN}` for the host leases of one of `leases::GROUPS` groups (renewed a group at a
//! time), so that every script touches one slot of a cluster and the hosts spread over its
//! masters.

/// The Lua line that reads the Redis server's clock into `now` (ms), which every script that
/// dates a lease starts with: the fleet's machines need not agree on the time.
macro_rules! server_now {
    () => {
        "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    };
}

pub(crate) mod leases;
pub(crate) mod members;
pub(crate) mod names;
pub(crate) mod process;
mod put_writer;
pub(crate) mod queue;
mod queue_scripts;
pub(crate) mod redis_link;
pub(crate) mod shards;
pub(crate) mod status;

use redis_link::RedisLink;

/// Why the shared frontier could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The address is not a Redis URL.
    #[error("frontier {url}: {why}")]
    Address {
        /// As given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The crawl's keys were laid out by a build with another layout.
    #[error(
        "frontier {url}: crawl {crawl:?} was begun by a webcoop-crawl whose frontier layout is \
         {found}, this one's is {}: finish it with that version, or start a crawl of another name",
        queue::LAYOUT
    )]
    Layout {
        /// The frontier.
        url: String,
        /// The crawl.
        crawl: String,
        /// The layout its keys follow.
        found: String,
    },
    /// The thread writing saved batches to the frontier stopped.
    #[error("frontier: {0}")]
    Thread(String),
    /// A fleet split by owner refused this process (another number of shards, an index
    /// held by a live process, a membership lapsed).
    #[error("{0}")]
    Shards(String),
    /// This process's name in the fleet is held by another live process, or was lost to one.
    #[error("{0}")]
    Name(String),
    /// Redis refused or did not answer.
    #[error("frontier {url}: {source}")]
    Redis {
        /// The frontier.
        url: String,
        /// Why.
        source: redis::RedisError,
    },
}

/// A connection to the frontier at `url` (`redis://HOST:PORT/DB`, or
/// `redis+cluster://H1:P1,H2:P2,...` for a Redis Cluster) for crawl `crawl`.
pub(crate) fn connect(url: &str, crawl: &str) -> Result<RedisLink, FleetError> {
    let address = |why: String| FleetError::Address {
        url: shown(url),
        why,
    };
    if crawl.is_empty() || crawl.contains(['{', '}']) {
        return Err(address(format!(
            "{crawl:?} is not a crawl name (non-empty, no braces)"
        )));
    }
    match url.strip_prefix("redis+cluster://") {
        Some(nodes) if nodes.split(',').all(|n| n.trim_end_matches('/').is_empty()) => {
            Err(address("no node named".into()))
        }
        Some(_) => RedisLink::open(url),
        None if url.starts_with("redis://") => RedisLink::open(url),
        None => Err(address(
            "expected redis://HOST:PORT/DB or redis+cluster://H1:P1,H2:P2".into(),
        )),
    }
}

/// The frontier's address as logs and errors show it: a password in it is hidden.
pub(crate) fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// The hash tag of a host's keys (`host` is its politeness key or its id).
pub(crate) fn tag(crawl: &str, host: &str) -> String {
    format!("{{{crawl}:{host}}}")
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn a_password_in_the_frontier_address_is_never_shown() {
        assert_eq!(
            shown("redis://:s3cret@10.0.0.5:6379/0"),
            "redis://***@10.0.0.5:6379/0"
        );
        assert_eq!(shown("redis://user:pw@h:1/2"), "redis://***@h:1/2");
        assert_eq!(shown("redis://h:1/2"), "redis://h:1/2");
        assert_eq!(shown("redis+cluster://a:1,b:2"), "redis+cluster://a:1,b:2");
    }
}

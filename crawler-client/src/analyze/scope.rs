//! Which links a crawl follows: the scope (the seeds' hosts, their domains, anything, or a
//! regular expression), the trap guards, and the depth limits (the thesis recommends 5 levels
//! for dynamic pages and 15 for static ones).

use crate::analyze::url_norm::{self, Refusal};
use std::collections::HashSet;
use std::str::FromStr;
use url::{Host, Url};

/// Where a crawl may go.
#[derive(Debug, Clone)]
pub enum Scope {
    /// Only the seeds' hosts.
    Host,
    /// The seeds' hosts and every subdomain of their domain (`www.` removed).
    Domain,
    /// Anywhere.
    Any,
    /// URLs matching the expression.
    Pattern(regex::Regex),
}

/// A `--scope` that is none of the words and not a regular expression either.
#[derive(Debug, thiserror::Error)]
#[error("scope is not host, domain, any nor a valid regular expression: {0}")]
pub struct ScopeError(#[from] regex::Error);

impl FromStr for Scope {
    type Err = ScopeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "host" => Ok(Scope::Host),
            "domain" => Ok(Scope::Domain),
            "any" => Ok(Scope::Any),
            pattern => Ok(Scope::Pattern(regex::Regex::new(pattern)?)),
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Host => f.write_str("host"),
            Scope::Domain => f.write_str("domain"),
            Scope::Any => f.write_str("any"),
            Scope::Pattern(r) => f.write_str(r.as_str()),
        }
    }
}

/// Why a link is not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// A crawler trap or an unusable URL.
    Trap(Refusal),
    /// Outside the scope.
    OutOfScope,
    /// Deeper than the limit for its kind.
    TooDeep,
}

/// The limits links are checked against.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest URL followed.
    pub(crate) max_url_len: usize,
    /// Deepest static page (links from a seed).
    pub(crate) max_depth: u32,
    /// Deepest dynamic page (with a query string).
    pub(crate) max_dynamic_depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_url_len: 2048,
            max_depth: 15,
            max_dynamic_depth: 5,
        }
    }
}

/// The scope and limits of one crawl.
#[derive(Debug, Clone)]
pub struct LinkPolicy {
    scope: Scope,
    hosts: HashSet<String>,
    domains: Vec<String>,
    limits: Limits,
    /// The crawler's product token, for directives addressed to it (`X-Robots-Tag`).
    agent: String,
}

fn domain_of(host: &str) -> String {
    host.strip_prefix("www.").unwrap_or(host).to_string()
}

impl LinkPolicy {
    /// The policy of a crawl from `seeds`.
    pub fn new(scope: Scope, seeds: &[Url], limits: Limits) -> LinkPolicy {
        let hosts: HashSet<String> = seeds
            .iter()
            .filter_map(|u| u.host_str().map(str::to_string))
            .collect();
        let mut domains: Vec<String> = hosts.iter().map(|h| domain_of(h)).collect();
        domains.sort();
        domains.dedup();
        LinkPolicy {
            scope,
            hosts,
            domains,
            limits,
            agent: String::new(),
        }
    }

    /// The same policy for the crawler whose product token is `agent`.
    pub(crate) fn for_agent(mut self, agent: &str) -> LinkPolicy {
        self.agent = agent.to_string();
        self
    }

    /// The crawler's product token (empty: only directives for every crawler apply).
    pub(crate) fn agent(&self) -> &str {
        &self.agent
    }

    /// The limits.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether a URL is within the scope (depth aside).
    pub(crate) fn in_scope(&self, url: &Url) -> bool {
        let host = url.host_str().unwrap_or("");
        match &self.scope {
            Scope::Any => true,
            Scope::Host => self.hosts.contains(host),
            Scope::Domain => match url.host() {
                Some(Host::Domain(h)) => self.domains.iter().any(|d| {
                    h == d
                        || (h.len() > d.len()
                            && h.ends_with(d.as_str())
                            && h.as_bytes()[h.len() - d.len() - 1] == b'.')
                }),
                _ => self.hosts.contains(host),
            },
            Scope::Pattern(re) => re.is_match(url.as_str()),
        }
    }

    /// Whether a link found at `depth` may be followed.
    pub fn admit(&self, url: &Url, depth: u32) -> Result<(), Refused> {
        url_norm::check(url, self.limits.max_url_len).map_err(Refused::Trap)?;
        let limit = if url_norm::is_dynamic(url) {
            self.limits.max_dynamic_depth.min(self.limits.max_depth)
        } else {
            self.limits.max_depth
        };
        if depth > limit {
            return Err(Refused::TooDeep);
        }
        if !self.in_scope(url) {
            return Err(Refused::OutOfScope);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn scopes() {
        let seeds = [u("http://www.example.com/"), u("http://127.0.0.1:8080/")];
        let host = LinkPolicy::new(Scope::Host, &seeds, Limits::default());
        assert!(host.in_scope(&u("https://www.example.com/x")));
        assert!(host.in_scope(&u("http://127.0.0.1:9/x")));
        assert!(!host.in_scope(&u("http://docs.example.com/x")));
        let domain = LinkPolicy::new(Scope::Domain, &seeds, Limits::default());
        assert!(domain.in_scope(&u("http://docs.example.com/x")));
        assert!(domain.in_scope(&u("http://example.com/x")));
        assert!(!domain.in_scope(&u("http://badexample.com/x")));
        assert!(!domain.in_scope(&u("http://127.0.0.2/x")));
        let re: Scope = r"^https?://[^/]*example\.com/docs/".parse().unwrap();
        let pattern = LinkPolicy::new(re, &seeds, Limits::default());
        assert!(pattern.in_scope(&u("http://www.example.com/docs/a")));
        assert!(!pattern.in_scope(&u("http://www.example.com/blog/a")));
        assert!(
            "([".parse::<Scope>()
                .unwrap_err()
                .to_string()
                .contains("regular expression")
        );
        assert!(
            LinkPolicy::new(Scope::Any, &seeds, Limits::default())
                .in_scope(&u("http://anything.org/"))
        );
    }

    #[test]
    fn depth_limits_are_tighter_for_dynamic_pages() {
        let p = LinkPolicy::new(Scope::Any, &[], Limits::default());
        assert_eq!(p.admit(&u("http://e.com/a"), 15), Ok(()));
        assert_eq!(p.admit(&u("http://e.com/a"), 16), Err(Refused::TooDeep));
        assert_eq!(p.admit(&u("http://e.com/cal?d=1"), 5), Ok(()));
        assert_eq!(
            p.admit(&u("http://e.com/cal?d=1"), 6),
            Err(Refused::TooDeep)
        );
        assert_eq!(
            p.admit(&u("http://e.com/x/x/x"), 1),
            Err(Refused::Trap(Refusal::RepeatedSegments))
        );
        let shallow = LinkPolicy::new(
            Scope::Any,
            &[],
            Limits {
                max_depth: 2,
                ..Limits::default()
            },
        );
        assert_eq!(
            shallow.admit(&u("http://e.com/cal?d=1"), 3),
            Err(Refused::TooDeep)
        );
    }
}

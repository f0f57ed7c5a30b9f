//! robots.txt as RFC 9309 has a crawler treat it: parsed once per host (texting_robots),
//! kept 24 hours; a 4xx (or more than five redirects) means no rules (allow all), a 5xx or no
//! answer means complete disallow until it can be fetched again; at most 500 KiB is parsed.
//! The same file's usage preferences (`Content-Usage`, `Content-Signal`) are read beside the
//! rules, for the crawler's product token.

use std::sync::Arc;
use url::Url;
use webcoop_protocol::usage::{Prefs, RobotsUsage};

/// RFC 9309's minimum parse limit, which we also use as our maximum.
pub(crate) const MAX_BYTES: usize = 500 << 10;

/// The rules for one host.
#[derive(Clone)]
pub enum Rules {
    /// A robots.txt that parsed.
    Parsed(Arc<Parsed>),
    /// No robots.txt (4xx): everything allowed.
    AllowAll,
    /// The server failed (5xx, no answer): nothing allowed for now.
    DisallowAll,
}

/// A parsed robots.txt: its rules and its usage preferences.
pub struct Parsed {
    robot: texting_robots::Robot,
    usage: RobotsUsage,
    token: String,
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rules::Parsed(r) => write!(f, "Parsed(delay={:?})", r.robot.delay),
            Rules::AllowAll => f.write_str("AllowAll"),
            Rules::DisallowAll => f.write_str("DisallowAll"),
        }
    }
}

impl Rules {
    /// The rules given a fetch's outcome: its status (none for a network failure) and body.
    pub fn from_fetch(status: Option<u16>, body: &[u8], agent: &str) -> Rules {
        match status {
            Some(200..=299) => {
                let body = &body[..body.len().min(MAX_BYTES)];
                match texting_robots::Robot::new(agent, body) {
                    Ok(robot) => Rules::Parsed(Arc::new(Parsed {
                        robot,
                        usage: RobotsUsage::parse(&String::from_utf8_lossy(body)),
                        token: product_token(agent),
                    })),
                    // Unparseable content is treated as no rules, like an empty file.
                    Err(_) => Rules::AllowAll,
                }
            }
            // "Unavailable" (RFC 9309 2.3.1.3), which includes a redirect chain too long to
            // follow.
            Some(300..=499) => Rules::AllowAll,
            _ => Rules::DisallowAll,
        }
    }

    /// Whether these rules are a robots.txt the site served (not a default for an absent or
    /// unreachable one): what they forbid is forbidden until the site says otherwise.
    pub(crate) fn is_served(&self) -> bool {
        matches!(self, Rules::Parsed(_))
    }

    /// Whether `url` may be fetched.
    pub fn allows(&self, url: &Url) -> bool {
        match self {
            Rules::Parsed(r) => {
                let mut path = url.path().to_string();
                if let Some(q) = url.query() {
                    path.push('?');
                    path.push_str(q);
                }
                r.robot.allowed(&path)
            }
            Rules::AllowAll => true,
            Rules::DisallowAll => false,
        }
    }

    /// The `Crawl-delay` in seconds, if given.
    pub fn crawl_delay(&self) -> Option<f64> {
        match self {
            Rules::Parsed(r) => r.robot.delay.map(f64::from),
            _ => None,
        }
    }

    /// `Sitemap:` lines.
    pub fn sitemaps(&self) -> Vec<String> {
        match self {
            Rules::Parsed(r) => r.robot.sitemaps.clone(),
            _ => Vec::new(),
        }
    }

    /// The usage preferences robots.txt states for `url` (its path and query, matched as
    /// RFC 9309 matches paths), for this crawler.
    pub fn usage_at(&self, url: &Url) -> Prefs {
        match self {
            Rules::Parsed(r) => {
                let mut path = url.path().to_string();
                if let Some(q) = url.query() {
                    path.push('?');
                    path.push_str(q);
                }
                r.usage.at(&r.token, &path)
            }
            _ => Prefs::NONE,
        }
    }

    /// Usage lines robots.txt has that could not be read (a few, for one log line).
    pub(crate) fn usage_problems(&self) -> &[String] {
        match self {
            Rules::Parsed(r) => &r.usage.problems,
            _ => &[],
        }
    }
}

/// The product token robots.txt groups are matched against: the user agent's first word
/// without its version.
pub(crate) fn product_token(user_agent: &str) -> String {
    user_agent
        .split(['/', ' '])
        .next()
        .unwrap_or(user_agent)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn statuses_map_as_rfc9309_says() {
        let txt = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\nSitemap: http://e.com/sitemap.xml\n\nUser-agent: webcoop\nDisallow: /nocrawl\n";
        let r = Rules::from_fetch(Some(200), txt, "webcoop");
        assert!(!r.allows(&u("http://e.com/nocrawl/x")));
        assert!(
            r.allows(&u("http://e.com/private/x")),
            "our own group applies, not *"
        );
        let other = Rules::from_fetch(Some(200), txt, "otherbot");
        assert!(!other.allows(&u("http://e.com/private/x")));
        assert_eq!(other.crawl_delay(), Some(2.0));
        assert_eq!(other.sitemaps(), ["http://e.com/sitemap.xml"]);
        assert!(Rules::from_fetch(Some(404), b"", "w").allows(&u("http://e.com/anything")));
        assert!(Rules::from_fetch(Some(403), b"", "w").allows(&u("http://e.com/anything")));
        assert!(!Rules::from_fetch(Some(500), b"", "w").allows(&u("http://e.com/anything")));
        assert!(!Rules::from_fetch(None, b"", "w").allows(&u("http://e.com/anything")));
        // Query strings are part of what rules match.
        let q = Rules::from_fetch(Some(200), b"User-agent: *\nDisallow: /*?sort=\n", "w");
        assert!(!q.allows(&u("http://e.com/list?sort=asc")));
        assert!(q.allows(&u("http://e.com/list")));
        assert_eq!(
            product_token("webcoop-crawl/0.1 (+https://e.com/bot)"),
            "webcoop-crawl"
        );
    }

    #[test]
    fn only_the_first_500_kib_count() {
        let mut txt = b"User-agent: *\nDisallow: /early\n".to_vec();
        txt.extend(std::iter::repeat_n(b'#', MAX_BYTES));
        txt.extend_from_slice(b"\nDisallow: /late\n");
        let r = Rules::from_fetch(Some(200), &txt, "w");
        assert!(!r.allows(&u("http://e.com/early")));
        assert!(r.allows(&u("http://e.com/late")));
    }
}

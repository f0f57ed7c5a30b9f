//! Who in an access log is a visitor: a client (address and user agent) that read a page with
//! a successful anonymous `GET`, and is not a crawler. Crawlers are told by their user agent
//! (the words crawlers put there, and known crawlers' names), by having fetched robots.txt, or
//! by a verified Web Bot Auth signature on their requests to the agent's service (the service
//! notes such clients in [`crate::activity::Activity`]).

use crate::access_log::line::LogLine;
use regex::Regex;
use std::collections::{HashMap, VecDeque};
use std::sync::LazyLock;

/// Clients remembered as robots.txt readers at most (the oldest forgotten first).
const MAX_ROBOTS_CLIENTS: usize = 100_000;
/// How long a robots.txt reader stays a crawler after its last reading of it.
const ROBOTS_MEMORY: i64 = 30 * 86_400;

/// Words and names in the user agents of crawlers, tools and monitors.
static CRAWLER_AGENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)bot\b|bot/|crawl|spider|slurp|archiv|scrap|fetch|preview|monitor|uptime|pingdom|headless|lighthouse|python-|go-http-client|java/|okhttp|libwww|httpclient|curl/|wget/|facebookexternalhit|feedparser|webcoop",
    )
    .ok()
});

/// Whether a user agent is a crawler's or a tool's (none at all counts as one).
pub(crate) fn crawler_agent(agent: Option<&str>) -> bool {
    match (agent, CRAWLER_AGENT.as_ref()) {
        (None, _) => true,
        (Some(a), Some(re)) => a.trim().is_empty() || re.is_match(a),
        // The pattern is a constant checked by the tests: without it, nobody is a visitor.
        (Some(_), None) => true,
    }
}

/// The client a line is from, as counting knows it: address and user agent.
pub(crate) fn client_of(line: &LogLine) -> String {
    format!("{} {}", line.client, line.agent.as_deref().unwrap_or(""))
}

/// Crawlers learned from the log itself.
#[derive(Debug, Default)]
pub(crate) struct Visitors {
    /// Clients that fetched robots.txt, with when they last did.
    robots_readers: HashMap<String, i64>,
    /// The same clients in the order they were first noted, the oldest forgotten first when
    /// there are too many (a flood of forged readers costs no more than the bound).
    robots_order: VecDeque<String>,
}

impl Visitors {
    /// Whether `line` is a visitor reading a page: a successful anonymous `GET` by a client
    /// that is not a crawler. A robots.txt request is noted (its client is a crawler).
    /// `verified` tells the clients the service saw sign their requests.
    pub(crate) fn is_read(
        &mut self,
        line: &LogLine,
        now: i64,
        verified: impl Fn(&str) -> bool,
    ) -> bool {
        let at = line.time.min(now);
        let client = client_of(line);
        if line.target == "/robots.txt" || line.target.starts_with("/robots.txt?") {
            if !self.robots_readers.contains_key(&client) {
                while self.robots_readers.len() >= MAX_ROBOTS_CLIENTS {
                    match self.robots_order.pop_front() {
                        Some(k) => self.robots_readers.remove(&k),
                        None => break,
                    };
                }
                self.robots_order.push_back(client.clone());
            }
            self.robots_readers.insert(client, at);
            return false;
        }
        if line.user
            || line.method != "GET"
            || !matches!(line.status, 200 | 304)
            || crawler_agent(line.agent.as_deref())
        {
            return false;
        }
        if self
            .robots_readers
            .get(&client)
            .is_some_and(|t| at - t <= ROBOTS_MEMORY)
        {
            return false;
        }
        !verified(&client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::line::parse;

    fn line(client: &str, target: &str, status: u16, agent: &str) -> LogLine {
        parse(&format!(
            "{client} - - [26/Nov/2026:12:00:00 +0000] \"GET {target} HTTP/1.1\" {status} 10 \"-\" \"{agent}\""
        ))
        .unwrap()
    }

    #[test]
    fn visitors_are_people_and_crawlers_are_not() {
        let mut v = Visitors::default();
        let nobody = |_: &str| false;
        let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
        assert!(v.is_read(&line("10.0.0.1", "/a.html", 200, firefox), 0, nobody));
        assert!(v.is_read(&line("10.0.0.1", "/a.html", 304, firefox), 0, nobody));
        assert!(!v.is_read(&line("10.0.0.1", "/a.html", 404, firefox), 0, nobody));
        for agent in [
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 (compatible; bingbot/2.0)",
            "webcoop-crawl/0.1",
            "curl/8.5.0",
            "python-requests/2.31",
            "",
        ] {
            assert!(
                !v.is_read(&line("10.0.0.2", "/a.html", 200, agent), 0, nobody),
                "{agent}"
            );
        }
        // A client that fetched robots.txt is a crawler, whatever it says it is.
        assert!(!v.is_read(&line("10.0.0.3", "/robots.txt", 200, firefox), 0, nobody));
        assert!(!v.is_read(&line("10.0.0.3", "/a.html", 200, firefox), 0, nobody));
        // The same address with another browser is another client.
        assert!(v.is_read(
            &line("10.0.0.3", "/a.html", 200, "Mozilla/5.0 Safari"),
            0,
            nobody
        ));
        // One the service saw sign its requests is a crawler.
        let signed = |c: &str| c.starts_with("10.0.0.4 ");
        assert!(!v.is_read(&line("10.0.0.4", "/a.html", 200, firefox), 0, signed));
        assert!(crawler_agent(None));
    }
}

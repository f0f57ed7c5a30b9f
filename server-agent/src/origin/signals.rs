//! What the access log tells origin mode besides the pages people read: that someone wrote to
//! the site (a `POST`, `PUT`, `PATCH` or `DELETE` to its admin, REST or XML-RPC endpoints that
//! succeeded: content may have changed or left), and which clients are its editors (they used
//! its login or admin within the session), whose pages stay private until someone else names
//! them.
//!
//! A client is its address with its `User-Agent`; a session lasts [`SESSION`] after its last
//! admin request. Everything here is bounded: the clients and the held URLs kept are capped,
//! the oldest forgotten first.

use crate::access_log::line::LogLine;
use std::collections::HashMap;

/// How long after its last admin request a client counts as an editor.
pub(crate) const SESSION: i64 = 30 * 60;
/// Editors remembered at most.
const MAX_EDITORS: usize = 10_000;
/// URLs held back (seen from editors only) at most.
const MAX_HELD: usize = 10_000;

/// Where a site is written to and administered: path prefixes (a query is part of the target,
/// so `/?rest_route=` matches WordPress's REST API without pretty links).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoints {
    /// Writes here (that succeeded) mean content may have changed.
    pub(crate) write: Vec<String>,
    /// A request here makes its client an editor for the session.
    pub(crate) admin: Vec<String>,
}

impl Default for Endpoints {
    /// WordPress's: its admin, its REST API (both URL forms) and XML-RPC; its login.
    fn default() -> Self {
        Endpoints {
            write: [
                "/wp-admin/",
                "/wp-json/",
                "/?rest_route=",
                "/index.php?rest_route=",
                "/xmlrpc.php",
            ]
            .map(String::from)
            .to_vec(),
            admin: ["/wp-admin/", "/wp-login.php"].map(String::from).to_vec(),
        }
    }
}

/// What one line means for origin mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// A page served to an anonymous visitor who is not an editor: it may be published.
    Page(String),
    /// A page served only to an editor (so far): held back.
    Held,
    /// Someone wrote to the site: check what a change could have touched.
    Write,
    /// Nothing for origin mode.
    Nothing,
}

/// The state kept across readings of the log.
#[derive(Debug, Default)]
pub(crate) struct Signals {
    endpoints: Endpoints,
    /// Editors, by client, with the time of their last admin request.
    editors: HashMap<(String, String), i64>,
    /// URLs seen from editors only, with when first seen.
    held: HashMap<String, i64>,
}

fn key(line: &LogLine) -> (String, String) {
    (line.client.clone(), line.agent.clone().unwrap_or_default())
}

impl Signals {
    /// Signals read with `endpoints`.
    pub(crate) fn new(endpoints: Endpoints) -> Signals {
        Signals {
            endpoints,
            ..Signals::default()
        }
    }

    fn starts(prefixes: &[String], target: &str) -> bool {
        prefixes.iter().any(|p| target.starts_with(p.as_str()))
    }

    /// What `line` means, at `now` (seconds) when it carries no time; `own` tells the agent's
    /// own requests (which say nothing of what visitors read).
    pub(crate) fn observe(
        &mut self,
        line: &LogLine,
        now: i64,
        own: impl Fn(&LogLine) -> bool,
    ) -> Seen {
        if own(line) {
            return Seen::Nothing;
        }
        let at = line.time.min(now);
        let admin = Self::starts(&self.endpoints.admin, &line.target);
        if admin || line.user {
            self.note_editor(key(line), at);
        }
        if line.successful_write()
            && (line.user || Self::starts(&self.endpoints.write, &line.target))
        {
            return Seen::Write;
        }
        if admin || !line.served_anonymously() {
            return Seen::Nothing;
        }
        let editor = self
            .editors
            .get(&key(line))
            .is_some_and(|last| at - last <= SESSION);
        if editor {
            if self.held.len() >= MAX_HELD && !self.held.contains_key(&line.target) {
                let oldest = self
                    .held
                    .iter()
                    .min_by_key(|(_, t)| **t)
                    .map(|(p, _)| p.clone());
                if let Some(p) = oldest {
                    self.held.remove(&p);
                }
            }
            self.held.entry(line.target.clone()).or_insert(at);
            return Seen::Held;
        }
        self.held.remove(&line.target);
        Seen::Page(line.target.clone())
    }

    fn note_editor(&mut self, client: (String, String), at: i64) {
        if self.editors.len() >= MAX_EDITORS && !self.editors.contains_key(&client) {
            let oldest = self
                .editors
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.editors.remove(&k);
            }
        }
        let last = self.editors.entry(client).or_insert(at);
        *last = (*last).max(at);
    }

    /// Whether `target` is held back (seen from editors only).
    #[cfg(test)]
    pub(crate) fn is_held(&self, target: &str) -> bool {
        self.held.contains_key(target)
    }

    /// URLs held back now.
    pub(crate) fn held(&self) -> usize {
        self.held.len()
    }

    /// Something other than an editor named `target` (a sitemap, a feed): it is no longer
    /// held.
    pub(crate) fn released(&mut self, target: &str) {
        self.held.remove(target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access_log::line::parse;

    fn line(
        client: &str,
        user: &str,
        method: &str,
        target: &str,
        status: u16,
        agent: &str,
    ) -> LogLine {
        parse(&format!(
            "{client} - {user} [26/Nov/2026:12:00:00 +0000] \"{method} {target} HTTP/1.1\" {status} 10 \"-\" \"{agent}\""
        ))
        .unwrap()
    }

    #[test]
    fn writes_editors_and_visitors_are_told_apart() {
        let mut s = Signals::new(Endpoints::default());
        let none = |_: &LogLine| false;
        let editor = "Mozilla/5.0 (editor)";
        // A visitor reads a page: it may be published.
        assert_eq!(
            s.observe(
                &line("10.0.0.9", "-", "GET", "/hello/", 200, "Mozilla/5.0"),
                0,
                none
            ),
            Seen::Page("/hello/".into())
        );
        // An editor logs in, then previews an upload of a private post: held back.
        assert_eq!(
            s.observe(
                &line("10.0.0.5", "-", "POST", "/wp-login.php", 302, editor),
                0,
                none
            ),
            Seen::Nothing
        );
        assert_eq!(
            s.observe(
                &line(
                    "10.0.0.5",
                    "-",
                    "GET",
                    "/wp-content/uploads/plan.pdf",
                    200,
                    editor
                ),
                0,
                none
            ),
            Seen::Held
        );
        assert!(s.is_held("/wp-content/uploads/plan.pdf"));
        // The same address with another browser is someone else.
        assert_eq!(
            s.observe(
                &line("10.0.0.5", "-", "GET", "/about/", 200, "curl/8"),
                0,
                none
            ),
            Seen::Page("/about/".into())
        );
        // A write through the REST API (authenticated) or the admin: a signal; a failed one or
        // a comment form is not.
        assert_eq!(
            s.observe(
                &line(
                    "10.0.0.5",
                    "admin",
                    "DELETE",
                    "/wp-json/wp/v2/posts/7",
                    200,
                    editor
                ),
                0,
                none
            ),
            Seen::Write
        );
        assert_eq!(
            s.observe(
                &line("10.0.0.5", "-", "POST", "/wp-admin/post.php", 302, editor),
                0,
                none
            ),
            Seen::Write
        );
        assert_eq!(
            s.observe(
                &line("10.0.0.5", "-", "POST", "/wp-admin/post.php", 403, editor),
                0,
                none
            ),
            Seen::Nothing
        );
        assert_eq!(
            s.observe(
                &line(
                    "10.0.0.9",
                    "-",
                    "POST",
                    "/wp-comments-post.php",
                    302,
                    "Mozilla/5.0"
                ),
                0,
                none
            ),
            Seen::Nothing
        );
        // An anonymous visitor names the held URL: released.
        assert_eq!(
            s.observe(
                &line(
                    "10.0.0.9",
                    "-",
                    "GET",
                    "/wp-content/uploads/plan.pdf",
                    200,
                    "Mozilla/5.0"
                ),
                0,
                none
            ),
            Seen::Page("/wp-content/uploads/plan.pdf".into())
        );
        assert!(!s.is_held("/wp-content/uploads/plan.pdf"));
        // The agent's own requests say nothing.
        let own = |l: &LogLine| l.agent.as_deref().is_some_and(|a| a.contains("webcoop"));
        assert_eq!(
            s.observe(
                &line(
                    "127.1.2.3",
                    "-",
                    "GET",
                    "/secret/",
                    200,
                    "webcoop-agent/0.1"
                ),
                0,
                own
            ),
            Seen::Nothing
        );
    }

    #[test]
    fn a_session_ends_and_memory_is_bounded() {
        let mut s = Signals::new(Endpoints::default());
        let none = |_: &LogLine| false;
        let at = |secs: i64, l: LogLine| LogLine { time: secs, ..l };
        s.observe(
            &at(0, line("10.0.0.5", "-", "GET", "/wp-admin/", 200, "b")),
            2 * SESSION,
            none,
        );
        assert_eq!(
            s.observe(
                &at(SESSION, line("10.0.0.5", "-", "GET", "/x/", 200, "b")),
                2 * SESSION,
                none
            ),
            Seen::Held
        );
        assert_eq!(
            s.observe(
                &at(SESSION + 1, line("10.0.0.5", "-", "GET", "/y/", 200, "b")),
                2 * SESSION,
                none
            ),
            Seen::Page("/y/".into())
        );
        for i in 0..(MAX_EDITORS + 10) {
            s.observe(
                &line(
                    &format!("10.{}.{}.1", i / 256, i % 256),
                    "-",
                    "GET",
                    "/wp-admin/",
                    200,
                    "b",
                ),
                0,
                none,
            );
        }
        assert!(s.editors.len() <= MAX_EDITORS);
    }
}

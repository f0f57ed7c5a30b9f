//! One line of a web server's access log in the common or combined format (Apache's and
//! nginx's defaults): `HOST IDENT USER [TIME] "METHOD TARGET PROTOCOL" STATUS BYTES
//! ["REFERER" "USER-AGENT"]`. Everything in it is written by clients, so it is read strictly:
//! a line that does not have this shape is junk, never half-read.

use chrono::DateTime;

/// Longest line looked at.
pub(crate) const MAX_LINE: usize = 8 << 10;

/// What a line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogLine {
    /// The client's address, as logged.
    pub(crate) client: String,
    /// Whether the server logged an authenticated user (HTTP authentication).
    pub(crate) user: bool,
    /// When (seconds since the epoch).
    pub(crate) time: i64,
    /// The method.
    pub(crate) method: String,
    /// The request target (origin form).
    pub(crate) target: String,
    /// The status code.
    pub(crate) status: u16,
    /// The `User-Agent`, in the combined format.
    pub(crate) agent: Option<String>,
}

impl LogLine {
    /// Whether it is an anonymous `GET` or `HEAD` answered 200: a page served to anyone.
    pub(crate) fn served_anonymously(&self) -> bool {
        !self.user && matches!(self.method.as_str(), "GET" | "HEAD") && self.status == 200
    }

    /// Whether it is a request that writes (`POST`, `PUT`, `PATCH`, `DELETE`) and succeeded.
    pub(crate) fn successful_write(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE")
            && (200..400).contains(&self.status)
    }
}

/// Reads one quoted field (`"..."`, with `\"` and `\\` escapes as Apache writes them and
/// nginx's `\x22`) from the start of `s`; the value and the rest after it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let s = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                'x' => {
                    let hex: String = [chars.next()?.1, chars.next()?.1].iter().collect();
                    out.push(char::from(u8::from_str_radix(&hex, 16).ok()?));
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// Parses `line`; `None` for junk.
pub(crate) fn parse(line: &str) -> Option<LogLine> {
    if line.len() > MAX_LINE {
        return None;
    }
    let mut fields = line.splitn(4, ' ');
    let (client, _ident, user, rest) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let rest = rest.strip_prefix('[')?;
    let (time, rest) = rest.split_once("] ")?;
    let (request, rest) = quoted(rest)?;
    let rest = rest.strip_prefix(' ')?;
    let mut after = rest.splitn(3, ' ');
    let status: u16 = after.next()?.parse().ok()?;
    let bytes = after.next()?;
    if bytes != "-" && bytes.parse::<u64>().is_err() {
        return None;
    }
    let agent = match after.next() {
        Some(more) => {
            let (_referer, more) = quoted(more)?;
            let (agent, _) = quoted(more.strip_prefix(' ')?)?;
            Some(agent)
        }
        None => None,
    };
    let mut parts = request.split(' ');
    let (method, target, protocol) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || !protocol.starts_with("HTTP/")
        || !target.starts_with('/')
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
        || target.bytes().any(|b| b.is_ascii_control() || b == b'\\')
        || !(100..600).contains(&status)
    {
        return None;
    }
    // A line whose time does not read is junk: nothing else in it can be trusted either.
    let time = DateTime::parse_from_str(time, "%d/%b/%Y:%H:%M:%S %z")
        .ok()?
        .timestamp();
    Some(LogLine {
        client: client.to_string(),
        user: user != "-",
        time,
        method: method.to_string(),
        target: target.to_string(),
        status,
        agent: agent.filter(|a| a != "-"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_and_common_lines_read_and_junk_does_not() {
        let l = parse(
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /hello-world/ HTTP/1.1" 200 5123 "-" "Mozilla/5.0 (X11; Linux) \"quoted\"""#,
        )
        .unwrap();
        assert_eq!(l.target, "/hello-world/");
        assert_eq!(
            l.agent.as_deref(),
            Some("Mozilla/5.0 (X11; Linux) \"quoted\"")
        );
        assert_eq!(l.time, 1_795_694_400);
        assert!(l.served_anonymously() && !l.successful_write());
        let nginx_escaped = parse(
            r#"::1 - - [26/Nov/2026:12:00:00 +0000] "POST /wp-json/wp/v2/posts/5 HTTP/1.1" 200 10 "-" "curl \x22x\x22""#,
        )
        .unwrap();
        assert_eq!(nginx_escaped.agent.as_deref(), Some("curl \"x\""));
        assert!(nginx_escaped.successful_write());
        let common =
            parse(r#"::1 - alice [26/Nov/2026:12:00:00 +0000] "HEAD /about/ HTTP/1.0" 200 0"#)
                .unwrap();
        assert!(common.user && common.agent.is_none() && !common.served_anonymously());
        for junk in [
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET http://evil.test/ HTTP/1.1" 200 10"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "\x16\x03\x01" 400 10"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /a HTTP/1.1" 999 10"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /a HTTP/1.1" 200 10 "-" "unterminated"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "get /a HTTP/1.1" 200 10"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /a HTTP/1.1" 200 99999999999999999999999"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /a HTTP/1.1" 200 ten"#,
            r#"127.0.0.1 - - [yesterday] "GET /a HTTP/1.1" 200 10"#,
            "garbage",
            "",
            "a b c [",
        ] {
            assert_eq!(parse(junk), None, "{junk}");
        }
        assert_eq!(parse(&"x".repeat(MAX_LINE + 1)), None);
    }
}

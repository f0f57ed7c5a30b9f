//! Update pings, read into what they claim: the XML-RPC `weblogUpdates.ping` and
//! `weblogUpdates.extendedPing` that blog engines send to their "update services" (WordPress
//! core does, after publishing a post), and WebSub's `hub.mode=publish`.
//!
//! A ping is only a claim that something changed at some URLs; the receiver checks those URLs
//! against its own site and asks the site itself what changed. Nothing here trusts a URL.

use crate::error::{Format, ParseError};
use crate::namespaces::Ns;
use crate::xml_read::{Node, ShapeLimits, XmlCursor};

/// Largest ping body read, in bytes (a real ping is a few hundred).
pub const MAX_PING_BYTES: usize = 64 << 10;
/// Most URLs one ping may name.
pub const MAX_PING_URLS: usize = 100;
/// Longest URL a ping may name.
pub const MAX_URL_LEN: usize = 2048;

const FORMAT: Format = Format::XmlRpcPing;

/// What a ping says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    /// How it came: `weblogUpdates.ping`, `weblogUpdates.extendedPing` or `publish`.
    pub method: String,
    /// The site's name, as the pinger gives it (XML-RPC only).
    pub name: Option<String>,
    /// The URLs it names: the site's home, a changed page or the feed, as the sender chose.
    pub urls: Vec<String>,
}

/// Reads an XML-RPC `methodCall` of `weblogUpdates.ping` (name, URL) or
/// `weblogUpdates.extendedPing` (name, URL, then a changed page's or the feed's URL, and an
/// optional feed URL and tags). Every parameter must be a string.
pub fn parse_xmlrpc(body: &[u8]) -> Result<Ping, ParseError> {
    if body.len() > MAX_PING_BYTES {
        return Err(ParseError::Limit {
            format: FORMAT,
            what: "body bytes",
            limit: MAX_PING_BYTES as u64,
        });
    }
    let mut cursor = XmlCursor::new(
        body,
        FORMAT,
        ShapeLimits {
            max_depth: 8,
            max_text: MAX_URL_LEN * 2,
        },
    );
    let mut method: Option<String> = None;
    let mut params: Vec<String> = Vec::new();
    // Whether the `<value>` open now has had a typed child (`<string>` or another type).
    let mut typed: Option<&'static str> = None;
    loop {
        match cursor.next_node()? {
            Node::Open {
                ns, local, depth, ..
            } => {
                if depth == 1 && (ns != Ns::None || local != "methodCall") {
                    return Err(ParseError::WrongRoot {
                        format: FORMAT,
                        found: local.to_string(),
                        found_ns: String::new(),
                        expected: "<methodCall> without a namespace",
                    });
                }
                if local == "value" {
                    typed = None;
                } else if depth >= 5 {
                    // A child of <value>: only <string> is a string.
                    typed = Some(if local == "string" { "string" } else { "other" });
                    if local != "string" {
                        return Err(crate::error::bad_value(
                            FORMAT,
                            &format!("parameter {}", params.len() + 1),
                            "<value>",
                            local,
                            "only string parameters are understood",
                        ));
                    }
                }
            }
            Node::Close {
                local, text, depth, ..
            } => match (depth, local) {
                (2, "methodName") => method = Some(text.trim().to_string()),
                (_, "string") if depth >= 5 => push_param(&mut params, text)?,
                (4, "value") if typed.is_none() => push_param(&mut params, text)?,
                _ => {}
            },
            Node::End => break,
        }
    }
    let method = method.ok_or(ParseError::Missing {
        format: FORMAT,
        context: "methodCall".into(),
        missing: "<methodName>",
    })?;
    let wanted = match method.as_str() {
        "weblogUpdates.ping" => 2..=2,
        "weblogUpdates.extendedPing" => 3..=5,
        _ => {
            return Err(crate::error::bad_value(
                FORMAT,
                "methodCall",
                "<methodName>",
                &method,
                "not weblogUpdates.ping or weblogUpdates.extendedPing",
            ));
        }
    };
    if !wanted.contains(&params.len()) {
        return Err(ParseError::Inconsistent {
            format: FORMAT,
            message: format!(
                "{method} takes {} to {} parameters, got {}",
                wanted.start(),
                wanted.end(),
                params.len()
            ),
        });
    }
    let mut params = params.into_iter();
    let name = params.next();
    // extendedPing's fifth parameter is a tag list, not a URL.
    let urls = params
        .take(3)
        .filter(|p| !p.is_empty() && p.contains("://"))
        .collect();
    Ok(Ping { method, name, urls })
}

fn push_param(params: &mut Vec<String>, text: &str) -> Result<(), ParseError> {
    if params.len() >= 5 {
        return Err(ParseError::Limit {
            format: FORMAT,
            what: "parameters",
            limit: 5,
        });
    }
    params.push(text.trim().to_string());
    Ok(())
}

/// Why a WebSub publish request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PublishError {
    /// `hub.mode` is missing or not `publish`.
    #[error("hub.mode must be publish")]
    NotPublish,
    /// No `hub.url` or `hub.topic`.
    #[error("a publish names the changed URLs in hub.url (or hub.topic)")]
    NoUrl,
    /// Too many URLs, or one too long.
    #[error("a publish names at most {MAX_PING_URLS} URLs of at most {MAX_URL_LEN} bytes")]
    TooMany,
}

/// Reads a WebSub publish (`hub.mode=publish&hub.url=...`, form-encoded; `hub.topic` is taken
/// as well, as publishers send either).
pub fn parse_publish(form: &[u8]) -> Result<Ping, PublishError> {
    if form.len() > MAX_PING_BYTES {
        return Err(PublishError::TooMany);
    }
    let mut mode = None;
    let mut urls = Vec::new();
    for (key, value) in form_urlencoded::parse(form) {
        match key.as_ref() {
            "hub.mode" => mode = Some(value.into_owned()),
            "hub.url" | "hub.url[]" | "hub.topic" => {
                if urls.len() >= MAX_PING_URLS || value.len() > MAX_URL_LEN {
                    return Err(PublishError::TooMany);
                }
                urls.push(value.into_owned());
            }
            _ => {}
        }
    }
    if mode.as_deref() != Some("publish") {
        return Err(PublishError::NotPublish);
    }
    if urls.is_empty() {
        return Err(PublishError::NoUrl);
    }
    Ok(Ping {
        method: "publish".into(),
        name: None,
        urls,
    })
}

/// The `application/x-www-form-urlencoded` body of a WebSub publish of `urls`.
pub fn publish_form(urls: &[String]) -> String {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("hub.mode", "publish");
    for u in urls {
        form.append_pair("hub.url", u);
    }
    form.finish()
}

/// The XML-RPC answer to a `weblogUpdates` ping: the `flerror` and `message` struct the
/// pingers read.
pub fn xmlrpc_reply(error: bool, message: &str) -> String {
    let message: String = message
        .chars()
        .take(500)
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            c if c.is_control() => " ".to_string(),
            c => c.to_string(),
        })
        .collect();
    format!(
        "<?xml version=\"1.0\"?>\n<methodResponse><params><param><value><struct>\
<member><name>flerror</name><value><boolean>{}</boolean></value></member>\
<member><name>message</name><value><string>{message}</string></value></member>\
</struct></value></param></params></methodResponse>\n",
        u8::from(error)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What WordPress 6.1 sends (wp-includes/comment.php, weblog_ping): name, home, feed.
    const WORDPRESS: &str = r#"<?xml version="1.0"?>
<methodCall>
<methodName>weblogUpdates.extendedPing</methodName>
<params>
<param><value><string>My &amp; Blog</string></value></param>
<param><value><string>http://blog.test</string></value></param>
<param><value><string>http://blog.test/feed/</string></value></param>
</params></methodCall>"#;

    #[test]
    fn reads_what_wordpress_sends_and_the_plain_ping() {
        let p = parse_xmlrpc(WORDPRESS.as_bytes()).unwrap();
        assert_eq!(p.method, "weblogUpdates.extendedPing");
        assert_eq!(p.name.as_deref(), Some("My & Blog"));
        assert_eq!(p.urls, ["http://blog.test", "http://blog.test/feed/"]);
        // An untyped <value> is a string too.
        let plain = "<methodCall><methodName>weblogUpdates.ping</methodName><params>\
            <param><value>Site</value></param><param><value> https://s.test/ </value></param>\
            </params></methodCall>";
        let p = parse_xmlrpc(plain.as_bytes()).unwrap();
        assert_eq!(p.urls, ["https://s.test/"]);
    }

    #[test]
    fn hostile_pings_are_refused_by_name() {
        for (body, says) in [
            ("not xml", "not well-formed"),
            (
                "<methodCall><methodName>system.shutdown</methodName></methodCall>",
                "weblogUpdates",
            ),
            ("<methodCall><params/></methodCall>", "methodName"),
            (
                "<evil><methodName>weblogUpdates.ping</methodName></evil>",
                "methodCall",
            ),
            (
                "<methodCall><methodName>weblogUpdates.ping</methodName><params><param><value><string>a</string></value></param></params></methodCall>",
                "takes 2 to 2",
            ),
            (
                "<methodCall><methodName>weblogUpdates.ping</methodName><params><param><value><int>1</int></value></param></params></methodCall>",
                "only string",
            ),
            (
                "<!DOCTYPE x [<!ENTITY a \"aaaa\">]><methodCall><methodName>&a;</methodName></methodCall>",
                "entity",
            ),
            (
                "<methodCall><methodName>weblogUpdates.ping</methodName><params>",
                "truncated",
            ),
        ] {
            let e = parse_xmlrpc(body.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(says), "{body}: {e}");
        }
        let mut many =
            String::from("<methodCall><methodName>weblogUpdates.ping</methodName><params>");
        for _ in 0..50 {
            many.push_str("<param><value><string>x</string></value></param>");
        }
        many.push_str("</params></methodCall>");
        assert!(
            parse_xmlrpc(many.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("parameters")
        );
        let huge = format!("<methodCall>{}</methodCall>", "x".repeat(MAX_PING_BYTES));
        assert!(
            parse_xmlrpc(huge.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("limit")
        );
        let deep = format!("{}{}", "<a>".repeat(100), "</a>".repeat(100));
        assert!(parse_xmlrpc(deep.as_bytes()).is_err());
    }

    #[test]
    fn publish_forms_read_back_and_hostile_ones_are_refused() {
        let urls = vec![
            "https://s.test/a b".to_string(),
            "https://s.test/c?d=1&e".to_string(),
        ];
        let p = parse_publish(publish_form(&urls).as_bytes()).unwrap();
        assert_eq!(p.urls, urls);
        assert_eq!(
            parse_publish(b"hub.mode=subscribe&hub.url=x"),
            Err(PublishError::NotPublish)
        );
        assert_eq!(parse_publish(b"hub.mode=publish"), Err(PublishError::NoUrl));
        let many = (0..101)
            .map(|i| format!("hub.url=u{i}"))
            .collect::<Vec<_>>()
            .join("&");
        assert_eq!(
            parse_publish(format!("hub.mode=publish&{many}").as_bytes()),
            Err(PublishError::TooMany)
        );
        let p = parse_publish(b"hub.mode=publish&hub.topic=https%3A%2F%2Fs.test%2F").unwrap();
        assert_eq!(p.urls, ["https://s.test/"]);
    }

    #[test]
    fn the_reply_is_what_pingers_read_and_escapes_the_message() {
        let r = xmlrpc_reply(true, "<b>&\u{0}");
        assert!(r.contains("<boolean>1</boolean>"));
        assert!(r.contains("&lt;b&gt;&amp; "), "{r}");
    }
}

//! Who may use a console. Bound to loopback, it is the operator's own machine's; bound anywhere
//! else, every request and every action must carry the token. Either way:
//!
//! - a loopback console answers only to a loopback `Host` (a public name resolving to
//!   127.0.0.1 is DNS rebinding: a web page the operator visits must not read the crawl);
//! - an action (a `POST`) needs the `X-Webcoop-Action` header, which a cross-site form or a
//!   simple request cannot send, and an `Origin` that is the console's own when the browser
//!   names one;
//! - the token is compared in constant time, and a token given in the query (the link an
//!   operator opens) is turned into a same-site, HTTP-only cookie.

use std::net::IpAddr;

/// The cookie a console sets once a token was shown in the query.
pub const COOKIE: &str = "webcoop_console";

/// The header every action must carry.
pub const ACTION_HEADER: &str = "x-webcoop-action";

/// Shortest token accepted: 128 bits in hex.
pub const MIN_TOKEN_LEN: usize = 32;

/// Longest token accepted.
pub const MAX_TOKEN_LEN: usize = 256;

/// A console that may not start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BindError {
    /// Another machine could reach it, and no token guards it.
    #[error(
        "the console on {0} can be reached from other machines: give --console-token-file (or --console-token), or bind it to 127.0.0.1"
    )]
    NeedsToken(IpAddr),
    /// The token is too short, too long, or has characters a header or cookie cannot carry.
    #[error(
        "the console token must be {MIN_TOKEN_LEN} to {MAX_TOKEN_LEN} characters of A-Z a-z 0-9 . _ ~ + / = - (got {0} characters); `openssl rand -hex 16` makes one"
    )]
    BadToken(usize),
}

/// Checks a console's address and token before it listens.
pub fn check_bind(ip: IpAddr, token: Option<&str>) -> Result<(), BindError> {
    if let Some(t) = token {
        let ok_chars = t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._~+/=-".contains(&b));
        if !(MIN_TOKEN_LEN..=MAX_TOKEN_LEN).contains(&t.len()) || !ok_chars {
            return Err(BindError::BadToken(t.len()));
        }
    } else if !ip.is_loopback() {
        return Err(BindError::NeedsToken(ip));
    }
    Ok(())
}

/// What a request says about itself, as far as admission goes.
#[derive(Debug, Default, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// The `Host` header.
    pub host: Option<&'a str>,
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The `Cookie` header (all of it).
    pub cookie: Option<&'a str>,
    /// The `token` query parameter.
    pub query_token: Option<&'a str>,
    /// The `Origin` header.
    pub origin: Option<&'a str>,
    /// Whether it is an action (`POST`).
    pub action: bool,
    /// Whether it carries [`ACTION_HEADER`].
    pub action_header: bool,
}

/// The `token` parameter of a query string, decoded.
pub fn query_token(query: &str) -> Option<String> {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
}

/// Security headers of every console answer: no caching of figures or tokens, no sniffing.
pub const HEADERS: [(&str, &str); 3] = [
    ("cache-control", "no-store"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
];

/// Why a request is refused: the status to answer and words for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 401 or 403.
    pub status: u16,
    /// Why.
    pub reason: &'static str,
}

/// A request let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    /// The token came in the query: answer with the cookie, so the page's own requests and
    /// its event stream carry it from now on.
    pub set_cookie: bool,
}

/// The admission rules of one console.
#[derive(Debug, Clone)]
pub struct Gate {
    token: Option<String>,
    loopback: bool,
}

impl Gate {
    /// The gate of a console bound to `ip`, guarded by `token` when there is one.
    pub fn new(ip: IpAddr, token: Option<String>) -> Gate {
        Gate {
            token,
            loopback: ip.is_loopback(),
        }
    }

    /// The token, when the console has one.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Lets a request in, or says why not.
    pub fn admit(&self, r: &RequestFacts) -> Result<Admitted, Refusal> {
        if self.loopback && !r.host.is_some_and(is_loopback_host) {
            return Err(Refusal {
                status: 403,
                reason: "this console answers only to a loopback Host (localhost, 127.0.0.1, [::1])",
            });
        }
        if r.action {
            if !r.action_header {
                return Err(Refusal {
                    status: 403,
                    reason: "an action needs the X-Webcoop-Action header",
                });
            }
            if let Some(origin) = r.origin
                && !same_origin(origin, r.host)
            {
                return Err(Refusal {
                    status: 403,
                    reason: "an action from another site's page is refused",
                });
            }
        }
        let Some(token) = self.token.as_deref() else {
            return Ok(Admitted { set_cookie: false });
        };
        let bearer = r
            .authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .map(str::trim);
        let cookie = r.cookie.and_then(|c| {
            c.split(';').find_map(|kv| {
                let (k, v) = kv.trim().split_once('=')?;
                (k == COOKIE).then_some(v)
            })
        });
        if [bearer, cookie]
            .into_iter()
            .flatten()
            .any(|t| equal(t, token))
        {
            return Ok(Admitted { set_cookie: false });
        }
        if r.query_token.is_some_and(|t| equal(t, token)) {
            return Ok(Admitted { set_cookie: true });
        }
        Err(Refusal {
            status: 401,
            reason: "this console needs its token: open it as http://ADDRESS/?token=TOKEN, or send Authorization: Bearer TOKEN",
        })
    }

    /// Admits a request given its method, query and a way to read its headers; returns the
    /// headers to add to the answer ([`HEADERS`], and the token's cookie when it came in the
    /// query).
    pub fn admit_request<'a>(
        &self,
        method: &str,
        query: Option<&str>,
        header: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Vec<(&'static str, String)>, Refusal> {
        let query_token = query.and_then(query_token);
        let facts = RequestFacts {
            host: header("host"),
            authorization: header("authorization"),
            cookie: header("cookie"),
            query_token: query_token.as_deref(),
            origin: header("origin"),
            action: method != "GET" && method != "HEAD",
            action_header: header(ACTION_HEADER).is_some(),
        };
        let admitted = self.admit(&facts)?;
        let mut out: Vec<(&'static str, String)> =
            HEADERS.iter().map(|(k, v)| (*k, v.to_string())).collect();
        if admitted.set_cookie
            && let Some(c) = self.cookie()
        {
            out.push(("set-cookie", c));
        }
        Ok(out)
    }

    /// The `Set-Cookie` value that carries the token.
    pub fn cookie(&self) -> Option<String> {
        self.token
            .as_deref()
            .map(|t| format!("{COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict"))
    }
}

/// Whether a `Host` header names this machine's loopback.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `Origin` is `http://` or `https://` followed by exactly the `Host` header.
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host else {
        return false;
    };
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    rest.is_some_and(|r| r.eq_ignore_ascii_case(host))
}

/// Compares in time that depends on the lengths only.
pub fn equal(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "0123456789abcdef0123456789abcdef";

    fn local() -> IpAddr {
        "127.0.0.1".parse().unwrap()
    }

    fn public() -> IpAddr {
        "0.0.0.0".parse().unwrap()
    }

    #[test]
    fn only_loopback_goes_without_a_token() {
        assert_eq!(check_bind(local(), None), Ok(()));
        assert_eq!(check_bind("::1".parse().unwrap(), None), Ok(()));
        assert_eq!(
            check_bind(public(), None),
            Err(BindError::NeedsToken(public()))
        );
        assert_eq!(check_bind(public(), Some(T)), Ok(()));
        assert_eq!(
            check_bind(public(), Some("short")),
            Err(BindError::BadToken(5))
        );
        let bad = format!("{T}; Path=/evil");
        assert!(
            check_bind(local(), Some(&bad)).is_err(),
            "a cookie-breaking token"
        );
        assert!(check_bind(local(), Some(&"a".repeat(300))).is_err());
    }

    #[test]
    fn a_loopback_console_answers_to_loopback_hosts_only() {
        let g = Gate::new(local(), None);
        for host in [
            "127.0.0.1:8080",
            "localhost:1",
            "LOCALHOST",
            "[::1]:9",
            "127.9.9.9",
        ] {
            let r = RequestFacts {
                host: Some(host),
                ..Default::default()
            };
            assert!(g.admit(&r).is_ok(), "{host}");
        }
        for host in ["evil.example:8080", "127.0.0.1.evil.example", "[::2]:1", ""] {
            let r = RequestFacts {
                host: Some(host),
                ..Default::default()
            };
            assert_eq!(g.admit(&r).map_err(|e| e.status), Err(403), "{host}");
        }
        assert!(g.admit(&RequestFacts::default()).is_err(), "no Host at all");
    }

    #[test]
    fn the_token_is_needed_on_every_request_and_action() {
        let g = Gate::new(public(), Some(T.to_string()));
        let host = Some("crawler.example:8080");
        let none = RequestFacts {
            host,
            ..Default::default()
        };
        assert_eq!(g.admit(&none).map_err(|e| e.status), Err(401));
        let wrong = RequestFacts {
            host,
            authorization: Some("Bearer 0123456789abcdef0123456789abcdeX"),
            ..Default::default()
        };
        assert_eq!(g.admit(&wrong).map_err(|e| e.status), Err(401));
        let bearer = format!("Bearer {T}");
        let right = RequestFacts {
            host,
            authorization: Some(&bearer),
            ..Default::default()
        };
        assert_eq!(g.admit(&right), Ok(Admitted { set_cookie: false }));
        let cookie = format!("other=1; {COOKIE}={T}");
        let by_cookie = RequestFacts {
            host,
            cookie: Some(&cookie),
            ..Default::default()
        };
        assert_eq!(g.admit(&by_cookie), Ok(Admitted { set_cookie: false }));
        let by_query = RequestFacts {
            host,
            query_token: Some(T),
            ..Default::default()
        };
        assert_eq!(g.admit(&by_query), Ok(Admitted { set_cookie: true }));
        assert!(g.cookie().unwrap().contains("HttpOnly; SameSite=Strict"));
        // An action with the token still needs the header and its own origin.
        let action = RequestFacts {
            action: true,
            ..right
        };
        assert_eq!(g.admit(&action).map_err(|e| e.status), Err(403));
        let action = RequestFacts {
            action_header: true,
            origin: Some("http://evil.example"),
            ..action
        };
        assert_eq!(g.admit(&action).map_err(|e| e.status), Err(403));
        let action = RequestFacts {
            origin: Some("http://crawler.example:8080"),
            ..action
        };
        assert!(g.admit(&action).is_ok());
        let no_token_action = RequestFacts {
            authorization: None,
            ..action
        };
        assert_eq!(g.admit(&no_token_action).map_err(|e| e.status), Err(401));
    }

    #[test]
    fn a_request_is_admitted_from_its_parts_with_the_headers_to_add() {
        let g = Gate::new(public(), Some(T.to_string()));
        let headers = |name: &str| match name {
            "host" => Some("console.example"),
            _ => None,
        };
        let query = format!("token={T}");
        let added = g.admit_request("GET", Some(&query), headers).unwrap();
        assert!(
            added
                .iter()
                .any(|(k, v)| *k == "set-cookie" && v.contains(T))
        );
        assert!(
            added
                .iter()
                .any(|(k, v)| *k == "cache-control" && v == "no-store")
        );
        assert_eq!(
            g.admit_request("GET", None, headers).map_err(|r| r.status),
            Err(401)
        );
        assert_eq!(
            g.admit_request("POST", Some(&query), headers)
                .map_err(|r| r.status),
            Err(403),
            "an action without its header"
        );
    }

    #[test]
    fn equal_compares_whole_strings() {
        assert!(equal(T, T));
        assert!(!equal(T, &T[..31]));
        assert!(!equal("abc", "abd"));
    }
}

//! IndexNow submissions as a receiving engine reads them: `POST /indexnow` with
//! `{"host", "key", "keyLocation"?, "urlList": [...]}`, or `GET /indexnow?url=&key=[&keyLocation=]`,
//! checked as the protocol says (a key of 8 to 128 letters, digits or dashes; at most 10,000
//! URLs, all on the submission's host; a key location on that host) and answered 400 or 422
//! when they are not. A key is proved by a text file holding it: `SCHEME://HOST/KEY.txt`, or the
//! key location, which then covers only URLs under its folder.

use url::Url;

/// The most URLs one submission may carry.
pub const MAX_URLS: usize = 10_000;

/// The largest request body read, in bytes (10,000 URLs of about a kilobyte).
pub const MAX_BODY: usize = 12 << 20;

/// A submission, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// The host named (lowercase), which every URL is on.
    pub host: String,
    /// The key.
    pub key: String,
    /// Where the key file is: the key location, or `KEY.txt` at the root of the first URL's
    /// origin.
    pub key_file: Url,
    /// Whether the key file was given (then it covers only URLs under its folder).
    pub located: bool,
    /// The URLs, each once, in order.
    pub urls: Vec<Url>,
}

/// Why a submission is refused, with the status the protocol gives it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{status}: {why}")]
pub struct Rejection {
    /// 400 (bad request) or 422 (URLs not of the host, or a key not of the protocol's form).
    pub status: u16,
    /// What was wrong.
    pub why: String,
}

fn bad(why: impl Into<String>) -> Rejection {
    Rejection {
        status: 400,
        why: why.into(),
    }
}

fn unprocessable(why: impl Into<String>) -> Rejection {
    Rejection {
        status: 422,
        why: why.into(),
    }
}

/// Whether `key` is of the protocol's form.
pub fn valid_key(key: &str) -> bool {
    (8..=128).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    host: String,
    key: String,
    #[serde(default)]
    key_location: Option<String>,
    url_list: Vec<String>,
}

/// Reads a `POST` body (JSON).
pub fn parse_post(body: &[u8]) -> Result<Submission, Rejection> {
    if body.len() > MAX_BODY {
        return Err(bad(format!("body over {MAX_BODY} bytes")));
    }
    let b: Body =
        serde_json::from_slice(body).map_err(|e| bad(format!("not an IndexNow JSON body: {e}")))?;
    check(&b.host, &b.key, b.key_location.as_deref(), &b.url_list)
}

/// Reads a `GET` query (`url`, `key`, `keyLocation`).
pub fn parse_get(query: &str) -> Result<Submission, Rejection> {
    let (mut url, mut key, mut location) = (None, None, None);
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        match k.as_ref() {
            "url" => url = Some(v.into_owned()),
            "key" => key = Some(v.into_owned()),
            "keyLocation" => location = Some(v.into_owned()),
            _ => {}
        }
    }
    let (Some(url), Some(key)) = (url, key) else {
        return Err(bad("a GET names url and key"));
    };
    let host = Url::parse(&url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .ok_or_else(|| unprocessable(format!("{url:?} is not a URL with a host")))?;
    check(&host, &key, location.as_deref(), &[url])
}

fn check(
    host: &str,
    key: &str,
    location: Option<&str>,
    list: &[String],
) -> Result<Submission, Rejection> {
    let host = host.trim().to_ascii_lowercase();
    if host.is_empty() {
        return Err(bad("no host"));
    }
    if !valid_key(key) {
        return Err(unprocessable(
            "the key must be 8 to 128 letters, digits or dashes",
        ));
    }
    if list.is_empty() {
        return Err(bad("urlList is empty"));
    }
    if list.len() > MAX_URLS {
        return Err(bad(format!(
            "urlList has {} URLs, more than {MAX_URLS}",
            list.len()
        )));
    }
    let mut urls: Vec<Url> = Vec::with_capacity(list.len());
    for raw in list {
        let u = Url::parse(raw.trim())
            .map_err(|e| unprocessable(format!("{raw:?} is not a URL: {e}")))?;
        if !matches!(u.scheme(), "http" | "https") || u.host_str() != Some(host.as_str()) {
            return Err(unprocessable(format!("{u} is not a URL of {host}")));
        }
        if !urls.contains(&u) {
            urls.push(u);
        }
    }
    let (key_file, located) = match location {
        Some(l) => {
            let u = Url::parse(l.trim())
                .map_err(|e| unprocessable(format!("keyLocation {l:?}: {e}")))?;
            if !matches!(u.scheme(), "http" | "https") || u.host_str() != Some(host.as_str()) {
                return Err(unprocessable(format!("keyLocation {u} is not on {host}")));
            }
            (u, true)
        }
        None => {
            let root = urls[0]
                .join(&format!("/{key}.txt"))
                .map_err(|e| bad(e.to_string()))?;
            (root, false)
        }
    };
    Ok(Submission {
        host,
        key: key.to_string(),
        key_file,
        located,
        urls,
    })
}

/// Whether a key file at `key_file` (given as a key location when `located`) covers `url`: a
/// file at the root covers its origin; one given elsewhere, the URLs under its folder.
pub fn covers(key_file: &Url, located: bool, url: &Url) -> bool {
    if key_file.origin() != url.origin() {
        return false;
    }
    if !located {
        return true;
    }
    let folder = match key_file.path().rfind('/') {
        Some(i) => &key_file.path()[..=i],
        None => "/",
    };
    url.path().starts_with(folder)
}

/// Whether a key file's content proves `key`: the key, whitespace around it aside.
pub fn proves(body: &[u8], key: &str) -> bool {
    std::str::from_utf8(body).is_ok_and(|t| t.trim() == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_as_the_clients_send_it_is_read() {
        let body = br#"{"host":"www.example.org","key":"7f3b2a1c9d8e4f50","keyLocation":"https://www.example.org/keys/7f3b2a1c9d8e4f50.txt","urlList":["https://www.example.org/keys/a","https://www.example.org/keys/a","https://www.example.org/b"]}"#;
        let s = parse_post(body).unwrap();
        assert_eq!(s.host, "www.example.org");
        assert_eq!(s.urls.len(), 2, "each URL once");
        assert!(s.located);
        assert!(covers(&s.key_file, true, &s.urls[0]));
        assert!(
            !covers(&s.key_file, true, &s.urls[1]),
            "outside the key's folder"
        );
        let g = parse_get("url=https%3A%2F%2Fwww.example.org%2Fp&key=7f3b2a1c9d8e4f50").unwrap();
        assert_eq!(
            g.key_file.as_str(),
            "https://www.example.org/7f3b2a1c9d8e4f50.txt"
        );
        assert!(!g.located && covers(&g.key_file, false, &g.urls[0]));
        assert!(proves(b"7f3b2a1c9d8e4f50\n", "7f3b2a1c9d8e4f50"));
        assert!(!proves(b"other", "7f3b2a1c9d8e4f50"));
    }

    #[test]
    fn what_the_protocol_refuses_is_refused_with_its_status() {
        let key = "0123456789abcdef";
        let post = |host: &str, key: &str, urls: &[&str], loc: Option<&str>| {
            let mut v = serde_json::json!({"host": host, "key": key, "urlList": urls});
            if let Some(l) = loc {
                v["keyLocation"] = l.into();
            }
            parse_post(v.to_string().as_bytes())
                .map(|_| ())
                .map_err(|r| r.status)
        };
        assert_eq!(post("a.test", key, &["http://b.test/x"], None), Err(422));
        assert_eq!(
            post("a.test", "short", &["http://a.test/x"], None),
            Err(422)
        );
        assert_eq!(
            post("a.test", "has space inside", &["http://a.test/x"], None),
            Err(422)
        );
        assert_eq!(post("a.test", key, &[], None), Err(400));
        assert_eq!(post("a.test", key, &["ftp://a.test/x"], None), Err(422));
        assert_eq!(
            post(
                "a.test",
                key,
                &["http://a.test/x"],
                Some("http://b.test/k.txt")
            ),
            Err(422)
        );
        let many: Vec<String> = (0..=MAX_URLS)
            .map(|i| format!("http://a.test/{i}"))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(post("a.test", key, &many, None), Err(400));
        assert_eq!(parse_post(b"{not json").unwrap_err().status, 400);
        assert_eq!(parse_post(br#"{"host":"a.test"}"#).unwrap_err().status, 400);
        assert_eq!(parse_get("key=0123456789abcdef").unwrap_err().status, 400);
        assert_eq!(
            parse_get("url=nothing&key=0123456789abcdef")
                .unwrap_err()
                .status,
            422
        );
        assert!(parse_post(&vec![b' '; MAX_BODY + 1]).is_err());
    }
}

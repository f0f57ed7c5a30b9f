//! CDXJ index lines, as pywb's `cdxj-indexer` writes them: `SURT TIMESTAMP {JSON}`, the JSON
//! fields in its order and escaped as Python's `json.dumps` escapes them, so replay tools look
//! captures up by them (the crawler's archive and the agent's snapshots alike).

/// One index line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Line {
    /// The SURT of the URL.
    pub key: String,
    /// `YYYYMMDDhhmmss` of `WARC-Date`.
    pub timestamp: String,
    /// The JSON fields.
    pub json: String,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.key, self.timestamp, self.json)
    }
}

/// A JSON string as Python's `json.dumps` writes it (non-ASCII as `\uXXXX`).
fn py_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `20261124153548` from `2026-11-24T15:35:48.123Z`.
fn timestamp(warc_date: &str) -> String {
    let digits: String = warc_date
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect();
    format!("{digits:0<14}")
}

/// The SURT key, as Python's `surt.surt` makes it (the fragment dropped).
pub fn surt(url: &str) -> String {
    let url = url.split('#').next().unwrap_or(url);
    surt_rs::generate_surt(url).unwrap_or_else(|_| url.to_string())
}

impl Line {
    /// The line of a capture of `url` at `warc_date` (a `WARC-Date`), with `fields` in order
    /// (`url` first, as `cdxj-indexer` writes it, then `mime`, `status`, `digest`, `length`,
    /// `offset`, `filename`).
    pub fn new(url: &str, warc_date: &str, fields: &[(&str, String)]) -> Line {
        let json = fields
            .iter()
            .map(|(k, v)| format!("\"{k}\": {}", py_json_string(v)))
            .collect::<Vec<_>>()
            .join(", ");
        Line {
            key: surt(url),
            timestamp: timestamp(warc_date),
            json: format!("{{{json}}}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_keys_are_written_as_the_python_tools_write_them() {
        assert_eq!(py_json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(py_json_string("é€😀"), "\"\\u00e9\\u20ac\\ud83d\\ude00\"");
        assert_eq!(timestamp("2026-11-24T15:35:48.123Z"), "20261124153548");
        assert_eq!(
            surt("http://www.Example.COM/A?b=2&a=1#x"),
            "com,example)/a?a=1&b=2"
        );
        assert_eq!(surt("http://127.0.0.1:8080/r"), "1,0,0,127:8080)/r");
    }
}

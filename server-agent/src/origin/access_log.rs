//! Pages the web server served, from its access log (the common and combined formats of
//! nginx and Apache): a request counts only if it was an anonymous `GET` or `HEAD` answered
//! 200 (a query is then held to `--allow-query` with the rest of the URL). The log is read from where the last reading stopped, a rotated or
//! truncated log from its start, a bounded amount at a time; a line that is junk is skipped.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Most bytes read from a log at one reading.
const READ_BYTES: u64 = 4 << 20;
/// Longest line looked at.
const MAX_LINE: usize = 8 << 10;

/// One access log, followed.
pub(crate) struct AccessLog {
    path: PathBuf,
    offset: u64,
    inode: Option<u64>,
    /// The start of a line whose end is not written yet.
    partial: Vec<u8>,
    /// Lines skipped as junk, in all.
    pub(crate) junk: u64,
}

impl AccessLog {
    /// Follows the log at `path` from its start.
    pub(crate) fn new(path: PathBuf) -> AccessLog {
        AccessLog {
            path,
            offset: 0,
            inode: None,
            partial: Vec::new(),
            junk: 0,
        }
    }

    /// The log's name, for messages.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The request targets of pages served since the last reading.
    pub(crate) fn read_new(&mut self) -> std::io::Result<Vec<String>> {
        use std::os::unix::fs::MetadataExt;
        let mut file = std::fs::File::open(&self.path)?;
        let meta = file.metadata()?;
        if self.inode != Some(meta.ino()) || meta.len() < self.offset {
            // Rotated or truncated: the new file from its start.
            self.inode = Some(meta.ino());
            self.offset = 0;
            self.partial.clear();
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut chunk = Vec::new();
        file.take(READ_BYTES).read_to_end(&mut chunk)?;
        self.offset += chunk.len() as u64;
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.extend_from_slice(&chunk);
        let complete = match bytes.iter().rposition(|b| *b == b'\n') {
            Some(i) => i + 1,
            None => 0,
        };
        let tail = bytes.split_off(complete);
        if tail.len() <= MAX_LINE {
            self.partial = tail;
        } else {
            self.junk += 1;
        }
        let mut targets = Vec::new();
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            match std::str::from_utf8(line).ok().and_then(served_page) {
                Some(t) => targets.push(t.to_string()),
                None => self.junk += 1,
            }
        }
        Ok(targets)
    }
}

/// The request target of a log line that records a page served to anyone: `HOST IDENT USER
/// [TIME] "METHOD TARGET PROTOCOL" STATUS ...` with no user, a GET or HEAD and status 200.
pub(crate) fn served_page(line: &str) -> Option<&str> {
    if line.len() > MAX_LINE {
        return None;
    }
    let mut fields = line.splitn(4, ' ');
    let (_host, _ident, user, rest) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if user != "-" {
        return None;
    }
    let rest = rest.strip_prefix('[')?;
    let (_time, rest) = rest.split_once("] \"")?;
    let (request, rest) = rest.split_once("\" ")?;
    let status = rest.split(' ').next()?;
    if status != "200" {
        return None;
    }
    let mut parts = request.split(' ');
    let (method, target, protocol) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || !matches!(method, "GET" | "HEAD")
        || !protocol.starts_with("HTTP/")
        || !target.starts_with('/')
        || target.bytes().any(|b| b.is_ascii_control() || b == b'\\')
    {
        return None;
    }
    Some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_anonymous_pages_served_with_200_count() {
        let ok = r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /hello-world/ HTTP/1.1" 200 5123 "-" "curl/8""#;
        assert_eq!(served_page(ok), Some("/hello-world/"));
        let common = r#"::1 - - [26/Nov/2026:12:00:00 +0000] "HEAD /about/ HTTP/1.0" 200 0"#;
        assert_eq!(served_page(common), Some("/about/"));
        // A query is the URL rules' to judge (`--allow-query`).
        let query =
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /?PHPSESSID=abc HTTP/1.1" 200 10"#;
        assert_eq!(served_page(query), Some("/?PHPSESSID=abc"));
        for junk in [
            r#"127.0.0.1 - alice [26/Nov/2026:12:00:00 +0000] "GET /private/ HTTP/1.1" 200 10 "-" "x""#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "POST /wp-comments-post.php HTTP/1.1" 200 10"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET /missing HTTP/1.1" 404 10"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "GET http://evil.test/ HTTP/1.1" 200 10"#,
            r#"127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] "\x16\x03\x01" 400 10"#,
            "garbage",
            "",
            "a b c [",
        ] {
            assert_eq!(served_page(junk), None, "{junk}");
        }
    }

    #[test]
    fn a_followed_log_is_read_once_and_from_the_start_after_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let line = |p: &str| {
            format!(
                "127.0.0.1 - - [26/Nov/2026:12:00:00 +0000] \"GET {p} HTTP/1.1\" 200 1 \"-\" \"x\"\n"
            )
        };
        std::fs::write(&path, format!("{}{}junk\n", line("/a/"), line("/b/"))).unwrap();
        let mut log = AccessLog::new(path.clone());
        assert_eq!(log.read_new().unwrap(), ["/a/", "/b/"]);
        assert_eq!(log.junk, 1);
        // A line written in two halves is read once whole.
        let half = line("/c/");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, &half.as_bytes()[..20]).unwrap();
        assert!(log.read_new().unwrap().is_empty());
        std::io::Write::write_all(&mut f, &half.as_bytes()[20..]).unwrap();
        assert_eq!(log.read_new().unwrap(), ["/c/"]);
        // Rotated: a new file under the name.
        std::fs::rename(&path, dir.path().join("access.log.1")).unwrap();
        std::fs::write(&path, line("/d/")).unwrap();
        assert_eq!(log.read_new().unwrap(), ["/d/"]);
    }
}

//! The CDXJ index of a crawl's WARC files, line for line what pywb's `cdxj-indexer` writes for
//! the same files (its default fields and records): `SURT TIMESTAMP {"url", "mime", "status",
//! "digest", "length", "offset", "filename"}`, the JSON written as Python's `json.dumps` writes
//! it. Replay tools (pywb, ReplayWeb.page) look captures up by it.

use super::warc::{self, StoredRecord};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
pub use webcoop_protocol::warc::cdxj::{Line, surt};

/// The records indexed, as `cdxj-indexer` indexes them by default.
const INDEXED: &[&str] = &["response", "revisit", "resource", "metadata"];

/// The index line of a record, if it is of a kind that is indexed.
pub(crate) fn line_of(rec: &StoredRecord, filename: &str) -> Option<Line> {
    let kind = rec.header("WARC-Type")?;
    if !INDEXED.contains(&kind) {
        return None;
    }
    if matches!(kind, "resource" | "metadata")
        && rec.header("Content-Type") == Some("application/warc-fields")
    {
        return None;
    }
    let url = rec.header("WARC-Target-URI")?;
    let http = matches!(kind, "response" | "revisit")
        .then(|| warc::parse_http(&rec.block))
        .flatten();
    let mime = match kind {
        "revisit" => Some("warc/revisit".to_string()),
        "response" => http
            .as_ref()
            .and_then(|h| crate::analyze::header(&h.headers, "content-type"))
            .map(|v| v.to_string()),
        _ => rec.header("Content-Type").map(str::to_string),
    }
    .map(|m| {
        m.split([';', ' ', '\t', '\r', '\n'])
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    });
    let mut fields: Vec<(&str, String)> = vec![("url", url.to_string())];
    if let Some(m) = mime {
        fields.push(("mime", m));
    }
    if let Some(h) = &http {
        fields.push(("status", h.status.to_string()));
    }
    if let Some(d) = rec.header("WARC-Payload-Digest") {
        fields.push(("digest", d.to_string()));
    }
    fields.push(("length", rec.length.to_string()));
    fields.push(("offset", rec.offset.to_string()));
    fields.push(("filename", filename.to_string()));
    Some(Line::new(
        url,
        rec.header("WARC-Date").unwrap_or(""),
        &fields,
    ))
}

/// Bytes read ahead of the record being decoded.
const WINDOW: usize = 16 << 20;

/// Calls `f` with each whole record of a `.warc.gz`, in order, reading the file a window at a
/// time (a torn last member ends the walk, as at replay).
pub(crate) fn each_record(
    path: &Path,
    mut f: impl FnMut(StoredRecord) -> io::Result<()>,
) -> io::Result<()> {
    let mut file = std::fs::File::open(path)?;
    let mut buf: Vec<u8> = Vec::new();
    let (mut start, mut base, mut eof) = (0usize, 0u64, false);
    let mut read_more = |buf: &mut Vec<u8>| -> io::Result<bool> {
        let n = (&mut file).take(WINDOW as u64).read_to_end(buf)?;
        Ok(n == 0)
    };
    loop {
        if start > WINDOW {
            buf.drain(..start);
            start = 0;
        }
        while !eof && buf.len() - start < WINDOW {
            eof = read_more(&mut buf)?;
        }
        if start >= buf.len() {
            return Ok(());
        }
        match warc::member_at(&buf[start..], base) {
            Some(rec) => {
                let len = rec.length as usize;
                start += len;
                base += len as u64;
                f(rec)?;
            }
            // A member longer than the window: read on, until the end says it is torn.
            None if !eof => eof = read_more(&mut buf)?,
            None => return Ok(()),
        }
    }
}

/// The WARC files of a crawl directory, in order.
pub(crate) fn warc_files(out: &Path) -> io::Result<Vec<PathBuf>> {
    let dir = out.join("warc");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".warc.gz"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Calls `f` with the index line of each indexed record of a crawl directory, in file order.
fn each_line(out: &Path, mut f: impl FnMut(Line) -> io::Result<()>) -> io::Result<()> {
    for path in warc_files(out)? {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        each_record(&path, |rec| match line_of(&rec, &name) {
            Some(l) => f(l),
            None => Ok(()),
        })?;
    }
    Ok(())
}

/// The index lines of every WARC file of a crawl directory, in file order (sorted when asked,
/// as a WACZ wants them).
pub(crate) fn index(out: &Path, sorted: bool) -> io::Result<Vec<Line>> {
    let mut lines = Vec::new();
    each_line(out, |l| {
        lines.push(l);
        Ok(())
    })?;
    if sorted {
        lines.sort();
    }
    Ok(lines)
}

/// Writes the index of a crawl directory; returns the lines written. In file order the lines
/// stream out as the files are read; sorted, they are held until the last file is read.
pub fn write_index(out: &Path, sorted: bool, w: &mut dyn Write) -> io::Result<usize> {
    if sorted {
        let lines = index(out, true)?;
        for l in &lines {
            writeln!(w, "{l}")?;
        }
        return Ok(lines.len());
    }
    let mut n = 0;
    each_line(out, |l| {
        writeln!(w, "{l}")?;
        n += 1;
        Ok(())
    })?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_record_and_records_beyond_one_window_are_read_as_at_replay() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("warc")).unwrap();
        let path = dir.path().join("warc/t-00001.warc.gz");
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n";
        let mut bytes = Vec::new();
        // A record larger than the read window, between two small ones.
        let mut big = vec![0u8; WINDOW + (1 << 20)];
        rand::fill(&mut big[..]);
        for (url, body) in [
            ("http://e.test/a", &b"<p>a</p>"[..]),
            ("http://e.test/big", &big[..]),
            ("http://e.test/c", &b"<p>c</p>"[..]),
        ] {
            bytes.extend(warc::test_response(url, head, body, 1).bytes);
        }
        let whole = bytes.len();
        let torn = warc::test_response("http://e.test/torn", head, b"torn", 1).bytes;
        bytes.extend(&torn[..torn.len() / 2]);
        std::fs::write(&path, &bytes).unwrap();
        let lines = index(dir.path(), false).unwrap();
        let urls: Vec<&str> = lines.iter().map(|l| l.key.as_str()).collect();
        assert_eq!(urls, ["test,e)/a", "test,e)/big", "test,e)/c"]);
        assert!(
            lines[0].json.contains("\"mime\": \"text/html\""),
            "{}",
            lines[0].json
        );
        let last: serde_json::Value = serde_json::from_str(&lines[2].json).unwrap();
        let end = last["offset"].as_str().unwrap().parse::<usize>().unwrap()
            + last["length"].as_str().unwrap().parse::<usize>().unwrap();
        assert_eq!(end, whole, "the index ends where the whole records end");
    }
}

//! A site snapshot: every resource the agent publishes, as it was at one sequence number of the
//! change log, in one `.warc.zst` file (IIPC WARC-zstd, a dictionary trained on the site's own
//! pages) that a crawler fetches with one request and resumes with `Range`, a CDXJ index
//! beside it. The first record is a `warcinfo` naming the site and the sequence; every other
//! record is a `resource` record (the content as the file holds it, no HTTP exchange is
//! claimed) with its media type and SHA-256, the digest the listing's entity tags carry, so a
//! crawler checks each record against the listing before it believes it.

use crate::validator::Sha256Digest;
use crate::warc::{Record, WarcError};
use chrono::{DateTime, SecondsFormat, Utc};

/// Where snapshots are published, under the site's base URL (and the output directory).
pub const DIRECTORY: &str = ".well-known/webcoop/snapshot/";

/// The `warcinfo` field naming the site the snapshot is of (its base URL).
pub const SITE_FIELD: &str = "webcoop-site";
/// The `warcinfo` field naming the change-log sequence number the snapshot is at.
pub const SEQUENCE_FIELD: &str = "webcoop-sequence";
/// The `warcinfo` field stating what the site's content may be used for (aipref vocabulary).
pub const CONTENT_USAGE_FIELD: &str = "webcoop-content-usage";
/// The `warcinfo` field stating the largest content the snapshot holds, in bytes.
pub const MAX_RECORD_FIELD: &str = "webcoop-max-record";

/// The largest file a snapshot holds: webcoop-crawl's default page limit (4 MiB), so that a
/// crawler's defaults read every record. A larger file is left out, listed in robots.rdf as
/// any file is, for a fetch of its own.
pub const MAX_RECORD: u64 = 4 << 20;

/// The snapshot file at `sequence`: names sort in sequence order.
pub fn file_name(sequence: u64) -> String {
    format!("snapshot-{sequence:012}.warc.zst")
}

/// Its CDXJ index.
pub fn index_name(sequence: u64) -> String {
    format!("snapshot-{sequence:012}.cdxj")
}

/// The sequence number of a snapshot's file or index name, if it is one.
pub fn sequence_of(name: &str) -> Option<u64> {
    let digits = name
        .strip_prefix("snapshot-")?
        .strip_suffix(".warc.zst")
        .or_else(|| name.strip_prefix("snapshot-")?.strip_suffix(".cdxj"))?;
    (digits.len() == 12 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// `WARC-Date` of `t`.
pub fn warc_date(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The `WARC-Payload-Digest` (and block digest) of content with this SHA-256.
pub fn digest_field(sha256: &Sha256Digest) -> String {
    format!("sha256:{}", sha256.to_hex())
}

/// What the `warcinfo` record of a snapshot says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The site's base URL.
    pub site: String,
    /// The change-log sequence number the snapshot is at.
    pub sequence: u64,
    /// What the site's content may be used for, as its webmaster states it.
    pub content_usage: Option<String>,
    /// The largest content it holds, in bytes (at most [`MAX_RECORD`]).
    pub max_record: Option<u64>,
}

impl SnapshotInfo {
    /// The `warcinfo` block (`application/warc-fields`).
    pub fn block(&self, software: &str) -> String {
        let mut block = format!(
            "software: {software}\r\nformat: WARC File Format 1.1\r\nconformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n{SITE_FIELD}: {}\r\n{SEQUENCE_FIELD}: {}\r\n",
            self.site, self.sequence
        );
        if let Some(usage) = &self.content_usage {
            // One line: a value with a line break would end the field.
            let usage: String = usage.chars().filter(|c| !c.is_control()).collect();
            block.push_str(&format!("{CONTENT_USAGE_FIELD}: {usage}\r\n"));
        }
        if let Some(max) = self.max_record {
            block.push_str(&format!("{MAX_RECORD_FIELD}: {max}\r\n"));
        }
        block
    }

    /// Reads the first record of a snapshot.
    pub fn from_record(r: &Record) -> Result<SnapshotInfo, WarcError> {
        if r.field("WARC-Type") != Some("warcinfo") {
            return Err(WarcError::Record(
                "a snapshot starts with its warcinfo record",
            ));
        }
        let text = std::str::from_utf8(&r.block)
            .map_err(|_| WarcError::Record("the warcinfo block is not UTF-8"))?;
        let field = |name: &str| {
            text.split("\r\n")
                .filter_map(|l| l.split_once(':'))
                .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_string())
        };
        let number = |name: &str, missing: &'static str| {
            field(name)
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or(WarcError::Record(missing))
        };
        Ok(SnapshotInfo {
            site: field(SITE_FIELD).ok_or(WarcError::Record("the warcinfo names no site"))?,
            sequence: number(SEQUENCE_FIELD, "the warcinfo has no sequence number")?,
            content_usage: field(CONTENT_USAGE_FIELD).map(|u| u.chars().take(1024).collect()),
            max_record: field(MAX_RECORD_FIELD).and_then(|v| v.parse().ok()),
        })
    }
}

/// One resource of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its URL.
    pub url: String,
    /// Its media type.
    pub content_type: String,
    /// SHA-256 of the content, checked against the block.
    pub sha256: Sha256Digest,
    /// The content.
    pub body: Vec<u8>,
}

impl Entry {
    /// The fields of its `resource` record, `id` its `WARC-Record-ID` and `at` its date.
    pub fn fields(&self, id: &str, at: DateTime<Utc>) -> Vec<(&'static str, String)> {
        let digest = digest_field(&self.sha256);
        vec![
            ("WARC-Type", "resource".into()),
            ("WARC-Record-ID", id.into()),
            ("WARC-Date", warc_date(at)),
            ("WARC-Target-URI", self.url.clone()),
            ("Content-Type", self.content_type.clone()),
            // The block is the payload: one digest says both (a second would cost 72
            // incompressible bytes a record).
            ("WARC-Payload-Digest", digest),
        ]
    }

    /// Reads a `resource` record of a snapshot; its content must have the digest it claims.
    pub fn from_record(r: Record) -> Result<Entry, WarcError> {
        let e = Entry::from_record_claimed(r)?;
        if Sha256Digest::of(&e.body) != e.sha256 {
            return Err(WarcError::Record(
                "a resource record whose content is not its digest's",
            ));
        }
        Ok(e)
    }

    /// Reads a `resource` record with the digest it claims, unchecked: for a reader that
    /// checks each content against another authority anyway (the crawler holds every page
    /// to the digest the site's listing gives), so the content is hashed once, not twice.
    pub fn from_record_claimed(r: Record) -> Result<Entry, WarcError> {
        if r.field("WARC-Type") != Some("resource") {
            return Err(WarcError::Record(
                "a snapshot record that is not a resource",
            ));
        }
        let url = r
            .field("WARC-Target-URI")
            .ok_or(WarcError::Record("a resource record without a target URI"))?
            .to_string();
        let content_type = r
            .field("Content-Type")
            .unwrap_or("application/octet-stream")
            .to_string();
        let claimed = r
            .field("WARC-Payload-Digest")
            .and_then(|d| d.strip_prefix("sha256:"))
            .and_then(|h| hex::decode(h).ok())
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .map(Sha256Digest)
            .ok_or(WarcError::Record(
                "a resource record without a sha256 payload digest",
            ))?;
        Ok(Entry {
            url,
            content_type,
            sha256: claimed,
            body: r.block,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warc::{ZstdWarcReader, ZstdWarcWriter};
    use chrono::TimeZone;

    fn fields<'a>(f: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
        f.iter().map(|(n, v)| (*n, v.as_str())).collect()
    }

    #[test]
    fn a_snapshot_reads_back_with_its_info_and_checked_entries() {
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let info = SnapshotInfo {
            site: "https://e.org/".into(),
            sequence: 42,
            content_usage: Some("search=y, train-ai=n".into()),
            max_record: Some(11),
        };
        let entries: Vec<Entry> = ["a", "b"]
            .iter()
            .map(|n| {
                let body = format!("<p>{n}</p>").into_bytes();
                Entry {
                    url: format!("https://e.org/{n}.html"),
                    content_type: "text/html".into(),
                    sha256: Sha256Digest::of(&body),
                    body,
                }
            })
            .collect();
        let mut w = ZstdWarcWriter::new(Vec::new(), None, 3).unwrap();
        let block = info.block("test");
        w.append(
            &[
                ("WARC-Type", "warcinfo"),
                ("WARC-Date", &warc_date(at)),
                ("Content-Type", "application/warc-fields"),
            ],
            block.as_bytes(),
        )
        .unwrap();
        for e in &entries {
            w.append(&fields(&e.fields("<urn:uuid:x>", at)), &e.body)
                .unwrap();
        }
        let bytes = w.finish().unwrap();
        let mut r = ZstdWarcReader::new(&bytes[..], 1 << 20).unwrap();
        let first = r.next().unwrap().unwrap();
        assert_eq!(SnapshotInfo::from_record(&first.record).unwrap(), info);
        let read: Vec<Entry> = r
            .map(|l| Entry::from_record(l.unwrap().record).unwrap())
            .collect();
        assert_eq!(read, entries);
    }

    #[test]
    fn a_record_whose_content_is_not_its_digest_is_refused() {
        let body = b"<p>true</p>".to_vec();
        let e = Entry {
            url: "https://e.org/x".into(),
            content_type: "text/html".into(),
            sha256: Sha256Digest::of(b"<p>something else</p>"),
            body,
        };
        let at = Utc.timestamp_opt(0, 0).unwrap();
        let mut w = ZstdWarcWriter::new(Vec::new(), None, 3).unwrap();
        w.append(&fields(&e.fields("<urn:uuid:y>", at)), &e.body)
            .unwrap();
        let bytes = w.finish().unwrap();
        let rec = ZstdWarcReader::new(&bytes[..], 1 << 20)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let err = Entry::from_record(rec.record).unwrap_err();
        assert!(err.to_string().contains("not its digest"), "{err}");
    }

    #[test]
    fn names_carry_the_sequence() {
        assert_eq!(file_name(7), "snapshot-000000000007.warc.zst");
        assert_eq!(sequence_of(&file_name(7)), Some(7));
        assert_eq!(sequence_of(&index_name(123)), Some(123));
        assert_eq!(sequence_of("snapshot-7.warc.zst"), None);
        assert_eq!(sequence_of("snapshot-00000000000x.cdxj"), None);
        assert_eq!(sequence_of("../etc/passwd"), None);
    }
}

//! One WARC 1.1 record (ISO 28500): the head written before a block, and a whole record read
//! back strictly (version line, fields, a `Content-Length` that is the block's, the two line
//! ends after it), so a record that lies about its length is refused rather than misread.

use super::WarcError;

/// Largest head read back: the fields of a real record fit in a few kilobytes.
pub const MAX_HEAD: usize = 64 << 10;

/// The bytes that close every record after its block.
pub const END: &[u8] = b"\r\n\r\n";

/// The head of a record of `block_len` bytes: `WARC/1.1`, `fields` in order, `Content-Length`.
pub fn head(fields: &[(&str, &str)], block_len: u64) -> String {
    let mut head = String::with_capacity(
        64 + fields
            .iter()
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum::<usize>(),
    );
    head.push_str("WARC/1.1\r\n");
    for (name, value) in fields {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("Content-Length: ");
    head.push_str(&block_len.to_string());
    head.push_str("\r\n\r\n");
    head
}

/// A `WARC-Record-ID` (`<urn:uuid:...>`, a version 4 UUID) made of 16 random bytes.
pub fn record_id(random: [u8; 16]) -> String {
    let mut b = random;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "<urn:uuid:{}-{}-{}-{}-{}>",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The header fields in order, `Content-Length` included.
    pub fields: Vec<(String, String)>,
    /// The block.
    pub block: Vec<u8>,
}

impl Record {
    /// The first field named `name` (case-insensitive, as WARC field names are).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one whole record, and nothing after it: `bytes` is exactly a record.
pub fn parse(bytes: &[u8]) -> Result<Record, WarcError> {
    let (record, used) = next(bytes)?;
    if used != bytes.len() {
        return Err(WarcError::Record(
            "Content-Length is not the length of the block before the record's end",
        ));
    }
    Ok(record)
}

/// As [`parse`], taking the bytes: the block keeps their allocation (the head is moved out
/// of its way) instead of being copied, which matters for a whole site's records.
pub fn parse_owned(mut bytes: Vec<u8>) -> Result<Record, WarcError> {
    let (head, used) = head_of(&bytes)?;
    if used != bytes.len() {
        return Err(WarcError::Record(
            "Content-Length is not the length of the block before the record's end",
        ));
    }
    bytes.truncate(used - END.len());
    bytes.drain(..head.block_start);
    Ok(Record {
        fields: head.fields,
        block: bytes,
    })
}

/// A record's fields and where its block starts.
struct Head {
    fields: Vec<(String, String)>,
    block_start: usize,
}

/// Reads the record `bytes` starts with; returns it and the bytes it took.
pub fn next(bytes: &[u8]) -> Result<(Record, usize), WarcError> {
    let (head, used) = head_of(bytes)?;
    Ok((
        Record {
            fields: head.fields,
            block: bytes[head.block_start..used - END.len()].to_vec(),
        },
        used,
    ))
}

/// The head of the record `bytes` starts with, checked against its end; and the bytes the
/// whole record takes.
fn head_of(bytes: &[u8]) -> Result<(Head, usize), WarcError> {
    let head_end = bytes
        .windows(4)
        .take(MAX_HEAD)
        .position(|w| w == b"\r\n\r\n")
        .ok_or(WarcError::Record("no end of the head within 64 KiB"))?;
    let head = std::str::from_utf8(&bytes[..head_end])
        .map_err(|_| WarcError::Record("the head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    match lines.next() {
        Some("WARC/1.1" | "WARC/1.0") => {}
        _ => {
            return Err(WarcError::Record(
                "does not start with WARC/1.1 or WARC/1.0",
            ));
        }
    }
    let mut fields = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or(WarcError::Record("a head line is not a field"))?;
        if name.is_empty() || name.bytes().any(|b| b <= b' ' || b >= 0x7f) {
            return Err(WarcError::Record("a field name is not a token"));
        }
        fields.push((name.to_string(), value.trim().to_string()));
    }
    let length: u64 = fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("Content-Length"))
        .and_then(|(_, v)| v.parse().ok())
        .ok_or(WarcError::Record("no Content-Length, or not a number"))?;
    let block_start = head_end + 4;
    let rest = &bytes[block_start..];
    let block_end = usize::try_from(length)
        .ok()
        .filter(|&l| l.saturating_add(END.len()) <= rest.len())
        .ok_or(WarcError::Record(
            "Content-Length is more than the bytes left",
        ))?;
    if &rest[block_end..block_end + END.len()] != END {
        return Err(WarcError::Record(
            "Content-Length is not the length of the block before the record's end",
        ));
    }
    Ok((
        Head {
            fields,
            block_start,
        },
        block_start + block_end + END.len(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(fields: &[(&str, &str)], block: &[u8]) -> Vec<u8> {
        let mut bytes = head(fields, block.len() as u64).into_bytes();
        bytes.extend_from_slice(block);
        bytes.extend_from_slice(END);
        bytes
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let bytes = record(
            &[("WARC-Type", "resource"), ("Content-Type", "text/html")],
            b"<p>\r\n\r\nhi</p>",
        );
        let r = parse(&bytes).unwrap();
        assert_eq!(r.field("warc-type"), Some("resource"));
        assert_eq!(r.field("Content-Length"), Some("13"));
        assert_eq!(r.block, b"<p>\r\n\r\nhi</p>");
        let owned = parse_owned(bytes).unwrap();
        assert_eq!((owned.fields, owned.block), (r.fields, r.block));
    }

    #[test]
    fn a_record_that_lies_about_its_length_is_refused() {
        let mut bytes = record(&[("WARC-Type", "resource")], b"abc");
        assert!(parse(&bytes[..bytes.len() - 1]).is_err(), "torn");
        assert!(
            parse_owned(bytes[..bytes.len() - 1].to_vec()).is_err(),
            "torn"
        );
        bytes.insert(bytes.len() - 4, b'x');
        assert!(parse(&bytes).is_err(), "longer than said");
        assert!(parse_owned(bytes.clone()).is_err(), "longer than said");
        let forged = b"WARC/1.1\r\nContent-Length: 99999999999999999999\r\n\r\nabc\r\n\r\n";
        assert!(parse(forged).is_err());
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n\r\n\r\n").is_err());
        assert!(parse(b"WARC/1.1\r\nno colon\r\nContent-Length: 0\r\n\r\n\r\n\r\n").is_err());
        assert!(parse(&[0xff; 100]).is_err());
        assert!(parse(b"").is_err());
    }

    #[test]
    fn records_in_a_row_read_one_at_a_time() {
        let mut bytes = record(&[("WARC-Type", "metadata")], b"one");
        let first = bytes.len();
        bytes.extend(record(&[("WARC-Type", "resource")], b"two"));
        let (a, used) = next(&bytes).unwrap();
        assert_eq!((a.block.as_slice(), used), (&b"one"[..], first));
        let (b, used) = next(&bytes[first..]).unwrap();
        assert_eq!(
            (b.block.as_slice(), used),
            (&b"two"[..], bytes.len() - first)
        );
        assert!(parse(&bytes).is_err(), "two records are not one");
        assert!(
            next(&bytes[..bytes.len() - 2]).is_ok(),
            "the first is whole"
        );
        assert!(
            next(&bytes[first..bytes.len() - 2]).is_err(),
            "the second is torn"
        );
    }
}

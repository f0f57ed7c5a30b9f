//! The archive written, rotated, read back and cut after a torn record.

use super::reader::*;
use super::record::*;
use super::writer::*;
use chrono::Utc;
use std::fs::OpenOptions;
use std::io::Write;

fn resp(uri: &str, head: &str, body: &[u8]) -> Record {
    test_response(uri, head, body, DEFAULT_LEVEL)
}

#[test]
fn records_are_written_in_runs_and_all_are_on_disk_after_a_sync() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(dir.path(), "run", 1 << 30, "bot/1", 6).unwrap();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n";
    // Enough small records for several runs, and one larger than a run between them.
    let mut records = Vec::new();
    for i in 0..300 {
        let mut body = vec![0u8; if i == 150 { WRITE_RUN + 5000 } else { 3000 }];
        rand::fill(&mut body[..]);
        let r = resp(&format!("http://e.com/{i}"), head, &body);
        records.push((body, r));
    }
    let mut positions: Vec<Position> = Vec::new();
    for (_, r) in &records {
        let p = w.append(r).unwrap();
        if let Some(prev) = positions.last() {
            assert_eq!(
                p.offset,
                prev.offset + prev.length,
                "records follow each other"
            );
        }
        positions.push(p);
    }
    let path = dir.path().join(&*positions[0].file);
    let on_disk = || std::fs::metadata(&path).unwrap().len();
    let end = positions.last().map(|p| p.offset + p.length).unwrap();
    assert!(on_disk() < end, "the last run is not written yet");
    assert!(
        on_disk() > positions[150].offset,
        "full runs are written as they fill"
    );
    assert!(w.has_unwritten());
    w.write_appended().unwrap();
    assert_eq!(on_disk(), end, "written when asked, before any sync");
    assert!(!w.has_unwritten());
    let synced = w.sync().unwrap();
    assert_eq!(synced, vec![(positions[0].file.to_string(), end)]);
    for (i, p) in positions.iter().enumerate() {
        if i % 37 != 0 && i != 150 {
            continue;
        }
        let rec = read_record_at(&path, p.offset).unwrap().unwrap();
        assert_eq!(rec.length, p.length);
        assert_eq!(parse_http(&rec.block).unwrap().body, records[i].0);
    }
}

#[test]
fn records_round_trip_and_files_rotate() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(dir.path(), "test", 1500, "bot/1", 6).unwrap();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
    let r1 = resp("http://e.com/a", head, b"<p>a</p>");
    let p1 = w.append(&r1).unwrap();
    let r2 = revisit(
        "http://e.com/a",
        Utc::now(),
        "HTTP/1.1 304 Not Modified\r\n\r\n",
        RevisitProfile::ServerNotModified,
        None,
        ("http://e.com/a", None),
        6,
    );
    let p2 = w.append(&r2).unwrap();
    assert_eq!(&*p1.file, "test-00001.warc.gz");
    assert!(p1.offset > 0, "after the warcinfo record");
    let mut big = vec![0u8; 2000];
    rand::fill(&mut big[..]);
    w.append(&resp("http://e.com/b", head, &big)).unwrap();
    let p4 = w.append(&resp("http://e.com/c", head, b"c")).unwrap();
    assert_eq!(
        &*p4.file, "test-00002.warc.gz",
        "rotated past the size limit"
    );
    let synced = w.sync().unwrap();
    assert_eq!(synced.len(), 2, "both files were written to");
    let (name, len) = synced[1].clone();
    assert_eq!(name, "test-00002.warc.gz");
    assert_eq!(
        std::fs::metadata(dir.path().join(&synced[0].0))
            .unwrap()
            .len(),
        synced[0].1
    );
    assert_eq!(files(dir.path(), "test").unwrap().len(), 2);
    assert_eq!(
        WarcWriter::new(dir.path(), "test", 1000, "bot/1", 6)
            .unwrap()
            .serial,
        2
    );
    let records = read_records(&dir.path().join(&*p1.file), 0).unwrap();
    let types: Vec<&str> = records
        .iter()
        .map(|r| r.header("warc-type").unwrap())
        .collect();
    assert_eq!(types, ["warcinfo", "response", "revisit", "response"]);
    assert_eq!(
        (records[1].offset, records[1].length),
        (p1.offset, p1.length)
    );
    assert_eq!(records[2].offset, p2.offset);
    let http = parse_http(&records[1].block).unwrap();
    assert_eq!((http.status, http.body.as_slice()), (200, &b"<p>a</p>"[..]));
    assert_eq!(
        http.headers,
        [("Content-Type".to_string(), "text/html".to_string())]
    );
    assert_eq!(http.head, head);
    assert_eq!(
        read_records(&dir.path().join(&*p1.file), p2.offset)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(std::fs::metadata(dir.path().join(name)).unwrap().len(), len);
}

#[test]
fn a_page_rebuilt_is_content_and_the_delta_it_came_from_is_not() {
    let at = Utc::now();
    let delta = resource(
        &Resource {
            uri: "http://e.com/.well-known/webcoop/delta/a",
            at,
            content_type: "application/octet-stream",
            body: b"\x5e\x2a\x4d\x18",
            refers_to: None,
            how: "dcz pushed inline; base=\"x\"",
            usage: None,
        },
        6,
    );
    let page = resource(
        &Resource {
            uri: "http://e.com/a",
            at,
            content_type: "text/html",
            body: b"<p>new</p>",
            refers_to: Some((&delta.id, "http://e.com/.well-known/webcoop/delta/a")),
            how: "dcz pushed inline; base=\"x\"",
            usage: Some("train-ai=n"),
        },
        6,
    );
    let [d, p] = [&delta, &page].map(|r| member_at(&r.bytes, 0).unwrap());
    assert_eq!(content_of(&d, 1 << 20), None);
    assert_eq!(content_of(&p, 1 << 20).as_deref(), Some(&b"<p>new</p>"[..]));
    assert_eq!(content_of(&p, 5), None, "past the limit");
    assert_eq!(p.header("WARC-Refers-To"), Some(delta.id.as_str()));
    assert_eq!(
        p.header(USAGE_FIELD),
        Some("train-ai=n"),
        "the usage field on a rebuilt page"
    );
    assert_eq!(d.header(USAGE_FIELD), None);
    assert_eq!(
        p.header("WARC-Block-Digest"),
        Some(digest(b"<p>new</p>").as_str())
    );
}

#[test]
fn a_coded_body_is_kept_in_stored_blocks_that_any_gzip_reader_reads() {
    use std::io::Read;
    let head = "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n\r\n";
    for len in [0usize, 1, 65_534, 65_535, 65_536, 200_001] {
        let body: Vec<u8> = (0..len).map(|i| (i * 7919 % 251) as u8).collect();
        let r = resp("http://e.com/a", head, &body);
        // Stored: the record is the body and its heads, not less.
        assert!(r.bytes.len() > len, "{len}: {}", r.bytes.len());
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&r.bytes[..])
            .read_to_end(&mut plain)
            .unwrap();
        let rec = member_at(&r.bytes, 0).unwrap();
        assert_eq!(parse_http(&rec.block).unwrap().body, &body[..], "{len}");
        assert!(plain.ends_with(webcoop_protocol::warc::record::END));
    }
}

#[test]
fn a_body_already_compressed_is_not_compressed_hard_again() {
    let plain = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
    let coded = "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n\r\n";
    assert!(!content_coded(plain));
    assert!(content_coded(coded));
    assert!(!content_coded(
        "HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\n\r\n"
    ));
    // Text compresses at the level asked; the same bytes under a coding are stored, and
    // both read back whole.
    let body = "<p>the same sentence again</p>".repeat(2000);
    let (a, b) = (
        resp("http://e.com/a", plain, body.as_bytes()),
        resp("http://e.com/a", coded, body.as_bytes()),
    );
    assert!(
        a.bytes.len() < b.bytes.len(),
        "{} {}",
        a.bytes.len(),
        b.bytes.len()
    );
    for r in [a, b] {
        let rec = member_at(&r.bytes, 0).unwrap();
        assert_eq!(parse_http(&rec.block).unwrap().body, body.as_bytes());
    }
}

#[test]
fn a_torn_record_ends_the_list_and_resume_cuts_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = WarcWriter::new(dir.path(), "t", 1 << 30, "bot", 6).unwrap();
    let p = w
        .append(&resp("http://e.com/a", "HTTP/1.1 200 OK\r\n\r\n", b"a"))
        .unwrap();
    let whole = w.sync().unwrap()[0].1;
    let torn = resp("http://e.com/b", "HTTP/1.1 200 OK\r\n\r\n", b"b");
    let path = dir.path().join(&*p.file);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(&torn.bytes[..torn.bytes.len() / 2]).unwrap();
    drop(f);
    assert_eq!(read_records(&path, p.offset).unwrap().len(), 1);
    let mut w2 = WarcWriter::new(dir.path(), "t", 1 << 30, "bot", 6).unwrap();
    w2.resume(&p.file, whole).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), whole);
}

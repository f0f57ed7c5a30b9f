//! WARC files compressed as the IIPC's "Zstandard Compression for WARC Files" (warc-zstd 1.0)
//! specifies: an optional dictionary in a skippable frame first (magic `0x184D2A5D`, the
//! dictionary itself zstd-compressed), then one Zstandard frame per record, each with its
//! content size, checksum and the dictionary's ID. A record is one frame, so an index can point
//! at it by offset and length, and a dictionary trained on the site's own pages lets each
//! small page reuse what all pages share.
//!
//! The reader is for files from anywhere: sizes come from frame headers and are checked before
//! anything is decompressed; windows and dictionaries above the specification's 8 MiB are
//! refused; frames without content size or checksum, with another dictionary, or cut short
//! end the read with an error naming the offset.

use super::WarcError;
use super::record::{self, Record};
use std::io::{self, BufRead, Read, Write};

/// The magic number of the skippable frame holding the dictionary.
const DICTIONARY_MAGIC: u32 = 0x184D_2A5D;
/// The magic number of a Zstandard frame.
const FRAME_MAGIC: u32 = 0xFD2F_B528;
/// The magic number of a raw (uncompressed) Zstandard dictionary.
const RAW_DICTIONARY_MAGIC: u32 = 0xEC30_A437;
/// Largest window and dictionary a reader must accept (the specification's limits).
pub const MAX_WINDOW_LOG: u32 = 23;
/// Largest dictionary, compressed or not.
pub const MAX_DICTIONARY: usize = 1 << MAX_WINDOW_LOG;

/// Appends records to a `.warc.zst`, one frame each.
pub struct ZstdWarcWriter<W: Write> {
    out: W,
    compressor: zstd::bulk::Compressor<'static>,
    written: u64,
    scratch: Vec<u8>,
}

impl<W: Write> ZstdWarcWriter<W> {
    /// Starts a file on `out`, with `dictionary` (a Zstandard dictionary, as
    /// [`super::train_dictionary`] makes) in its first frame when given, records compressed at `level`.
    pub fn new(mut out: W, dictionary: Option<&[u8]>, level: i32) -> io::Result<Self> {
        let mut written = 0u64;
        if let Some(dict) = dictionary {
            let mut plain = zstd::bulk::Compressor::new(19)?;
            plain.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true))?;
            let packed = plain.compress(dict)?;
            if packed.len() > MAX_DICTIONARY || dict.len() > MAX_DICTIONARY {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a WARC-zstd dictionary is at most 8 MiB",
                ));
            }
            out.write_all(&DICTIONARY_MAGIC.to_le_bytes())?;
            out.write_all(&(packed.len() as u32).to_le_bytes())?;
            out.write_all(&packed)?;
            written += 8 + packed.len() as u64;
        }
        let compressor = record_compressor(dictionary, level)?;
        Ok(ZstdWarcWriter {
            out,
            compressor,
            written,
            scratch: Vec::new(),
        })
    }

    /// Appends the record of `fields` and `block`; returns its offset and length in the file.
    pub fn append(&mut self, fields: &[(&str, &str)], block: &[u8]) -> io::Result<(u64, u64)> {
        self.scratch.clear();
        record_into(&mut self.scratch, fields, block);
        let frame = self.compressor.compress(&self.scratch)?;
        self.out.write_all(&frame)?;
        let at = self.written;
        self.written += frame.len() as u64;
        Ok((at, frame.len() as u64))
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes and gives the sink back.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The compressor of a file's records: each frame with its content size, checksum and the
/// dictionary's ID, as the specification asks.
fn record_compressor(
    dictionary: Option<&[u8]>,
    level: i32,
) -> io::Result<zstd::bulk::Compressor<'static>> {
    let mut compressor = match dictionary {
        Some(dict) => zstd::bulk::Compressor::with_dictionary(level, dict)?,
        None => zstd::bulk::Compressor::new(level)?,
    };
    use zstd::stream::raw::CParameter;
    compressor.set_parameter(CParameter::ChecksumFlag(true))?;
    compressor.set_parameter(CParameter::ContentSizeFlag(true))?;
    compressor.set_parameter(CParameter::DictIdFlag(true))?;
    compressor.set_parameter(CParameter::WindowLog(MAX_WINDOW_LOG))?;
    Ok(compressor)
}

/// The bytes `records` (as [`record_bytes`] makes them) take as frames of a file written with
/// `dictionary` at `level`: what a choice of dictionary is measured by.
pub fn frames_size(dictionary: Option<&[u8]>, level: i32, records: &[&[u8]]) -> io::Result<u64> {
    let mut compressor = record_compressor(dictionary, level)?;
    let mut total = 0u64;
    for r in records {
        total += compressor.compress(r)?.len() as u64;
    }
    Ok(total)
}

/// The bytes of the record of `fields` and `block`, as a frame of the file holds them: what a
/// dictionary is trained on, so the records' headers are in it too.
pub fn record_bytes(fields: &[(&str, &str)], block: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    record_into(&mut out, fields, block);
    out
}

fn record_into(out: &mut Vec<u8>, fields: &[(&str, &str)], block: &[u8]) {
    let head = record::head(fields, block.len() as u64);
    out.reserve(head.len() + block.len() + record::END.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(block);
    out.extend_from_slice(record::END);
}

/// A record read back, with where its frame is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Offset of its frame in the file.
    pub offset: u64,
    /// Length of the frame.
    pub length: u64,
    /// The record.
    pub record: Record,
}

/// What the next frame of a file holds: a record, or one larger than the reader takes, which
/// was read past (decoded only as far as its header, the rest discarded as it decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A record within the size allowed.
    Record(Located),
    /// A record larger than allowed, skipped.
    Oversize {
        /// Offset of its frame in the file.
        offset: u64,
        /// Its size, uncompressed.
        size: u64,
        /// Its `WARC-Target-URI`, when its header could be read.
        target_uri: Option<String>,
    },
}

/// How much of an oversize record is decoded to find its header.
const OVERSIZE_HEAD: u64 = 16 << 10;

/// Reads the records of a `.warc.zst` in order.
pub struct ZstdWarcReader<R: Read> {
    inner: Source<R>,
    dictionary: Option<(u32, zstd::dict::DecoderDictionary<'static>)>,
    max_record: u64,
}

impl<R: Read> ZstdWarcReader<R> {
    /// Opens a file whose records are at most `max_record` bytes uncompressed; reads its
    /// dictionary if it starts with one.
    pub fn new(inner: R, max_record: u64) -> Result<Self, WarcError> {
        let mut inner = Source::new(inner);
        let magic = peek_u32(&mut inner)?.ok_or(WarcError::Zstd {
            offset: 0,
            reason: "the file is empty",
        })?;
        let dictionary = match magic {
            DICTIONARY_MAGIC => Some(read_dictionary(&mut inner)?),
            FRAME_MAGIC => None,
            _ => {
                return Err(WarcError::Zstd {
                    offset: 0,
                    reason: "starts with neither a Zstandard frame nor a dictionary",
                });
            }
        };
        Ok(ZstdWarcReader {
            inner,
            dictionary,
            max_record,
        })
    }

    /// The next record, `None` at the end of the file; a record larger than allowed is an
    /// error.
    pub fn next_record(&mut self) -> Result<Option<Located>, WarcError> {
        match self.next_bounded(false)? {
            None => Ok(None),
            Some(Next::Record(l)) => Ok(Some(l)),
            Some(Next::Oversize { offset, .. }) => Err(WarcError::Zstd {
                offset,
                reason: "a record larger than allowed",
            }),
        }
    }

    /// The next record, `None` at the end of the file; a record larger than allowed is
    /// read past and named, so the rest of the file can still be read.
    pub fn next_or_oversize(&mut self) -> Result<Option<Next>, WarcError> {
        self.next_bounded(true)
    }

    fn next_bounded(&mut self, skip_oversize: bool) -> Result<Option<Next>, WarcError> {
        loop {
            let offset = self.inner.count;
            let Some(magic) = peek_u32(&mut self.inner)? else {
                return Ok(None);
            };
            if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
                if magic == DICTIONARY_MAGIC {
                    return Err(WarcError::Zstd {
                        offset,
                        reason: "a second dictionary",
                    });
                }
                skip_frame(&mut self.inner)?;
                continue;
            }
            if magic != FRAME_MAGIC {
                return Err(WarcError::Zstd {
                    offset,
                    reason: "not a Zstandard frame",
                });
            }
            let plain = match self.decode_frame(offset, skip_oversize)? {
                Frame::Whole(plain) => plain,
                Frame::Skipped { size, head } => {
                    return Ok(Some(Next::Oversize {
                        offset,
                        size,
                        target_uri: target_uri_of(&head),
                    }));
                }
            };
            let record = record::parse_owned(plain).map_err(|e| WarcError::At {
                offset,
                error: Box::new(e),
            })?;
            return Ok(Some(Next::Record(Located {
                offset,
                length: self.inner.count - offset,
                record,
            })));
        }
    }

    /// Decodes the frame at the reader's position, after checking its header; one larger
    /// than allowed is read past when `skip_oversize`, keeping only its first bytes.
    fn decode_frame(&mut self, offset: u64, skip_oversize: bool) -> Result<Frame, WarcError> {
        let bad = |reason| WarcError::Zstd { offset, reason };
        let header = frame_header(
            self.inner
                .fill_at_least(18)
                .map_err(|e| WarcError::Io(e.to_string()))?,
        )
        .map_err(|_| bad("the frame header is cut short"))?;
        if !header.checksum {
            return Err(bad("a frame without a checksum"));
        }
        let size = header
            .content_size
            .ok_or(bad("a frame without its content size"))?;
        let oversize = size > self.max_record;
        if oversize && !skip_oversize {
            return Err(bad("a record larger than allowed"));
        }
        let expected_dict = self.dictionary.as_ref().map(|(id, _)| *id);
        if header.dictionary_id != expected_dict.filter(|id| *id != 0) {
            return Err(bad("a frame whose dictionary is not the file's"));
        }
        let mut decoder = match &self.dictionary {
            Some((_, dict)) => {
                zstd::stream::read::Decoder::with_prepared_dictionary(&mut self.inner, dict)
            }
            None => zstd::stream::read::Decoder::with_buffer(&mut self.inner),
        }
        .map_err(|_| bad("the decoder cannot start"))?
        .single_frame();
        decoder
            .window_log_max(MAX_WINDOW_LOG)
            .map_err(|_| bad("the decoder cannot start"))?;
        let undecodable = |e: io::Error| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                bad("the file ends inside a frame")
            } else {
                bad("the frame does not decode (corrupt, wrong checksum, or a window over 8 MiB)")
            }
        };
        if oversize {
            // Its header is kept; the rest is decoded into nothing, which finds the frame's
            // end and checks its checksum without holding the record.
            let mut head = Vec::new();
            (&mut decoder)
                .take(OVERSIZE_HEAD)
                .read_to_end(&mut head)
                .map_err(undecodable)?;
            let rest = io::copy(&mut (&mut decoder).take(size + 1), &mut io::sink())
                .map_err(undecodable)?;
            if head.len() as u64 + rest != size {
                return Err(bad("the frame's content is not the size its header says"));
            }
            return Ok(Frame::Skipped { size, head });
        }
        let mut plain = Vec::with_capacity(size.min(16 << 20) as usize);
        (&mut decoder)
            .take(size + 1)
            .read_to_end(&mut plain)
            .map_err(undecodable)?;
        if plain.len() as u64 != size {
            return Err(bad("the frame's content is not the size its header says"));
        }
        Ok(Frame::Whole(plain))
    }
}

/// A frame decoded, or read past.
enum Frame {
    Whole(Vec<u8>),
    Skipped { size: u64, head: Vec<u8> },
}

/// The `WARC-Target-URI` of a record's first bytes, if its header is there.
fn target_uri_of(head: &[u8]) -> Option<String> {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let text = std::str::from_utf8(&head[..end]).ok()?;
    text.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("WARC-Target-URI")
            .then(|| {
                value
                    .trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

impl<R: Read> Iterator for ZstdWarcReader<R> {
    type Item = Result<Located, WarcError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// What a frame header says, read without consuming it.
struct FrameHeader {
    content_size: Option<u64>,
    checksum: bool,
    dictionary_id: Option<u32>,
}

/// Parses the frame header at the start of `buf` (RFC 8878, 3.1.1.1).
fn frame_header(buf: &[u8]) -> io::Result<FrameHeader> {
    let short = || io::Error::from(io::ErrorKind::UnexpectedEof);
    let descriptor = *buf.get(4).ok_or_else(short)?;
    let fcs_flag = descriptor >> 6;
    let single_segment = descriptor & 0x20 != 0;
    let checksum = descriptor & 0x04 != 0;
    let did_flag = descriptor & 0x03;
    let mut at = 5 + usize::from(!single_segment);
    let did_len = [0, 1, 2, 4][usize::from(did_flag)];
    let field = |from: usize, len: usize| -> io::Result<u64> {
        let bytes = buf.get(from..from + len).ok_or_else(short)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |v, b| (v << 8) | u64::from(*b)))
    };
    let dictionary_id = (did_len > 0)
        .then(|| field(at, did_len).map(|v| v as u32))
        .transpose()?;
    at += did_len;
    let content_size = match (fcs_flag, single_segment) {
        (0, false) => None,
        (0, true) => Some(field(at, 1)?),
        (1, _) => Some(field(at, 2)? + 256),
        (2, _) => Some(field(at, 4)?),
        _ => Some(field(at, 8)?),
    };
    Ok(FrameHeader {
        content_size,
        checksum,
        dictionary_id,
    })
}

/// The little-endian `u32` at the reader's position, not consumed; `None` at the end.
fn peek_u32<R: Read>(r: &mut Source<R>) -> Result<Option<u32>, WarcError> {
    let offset = r.count;
    let buf = r
        .fill_at_least(4)
        .map_err(|e| WarcError::Io(e.to_string()))?;
    match buf.len() {
        0 => Ok(None),
        n if n < 4 => Err(WarcError::Zstd {
            offset,
            reason: "the file ends inside a frame's magic number",
        }),
        _ => Ok(Some(u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]))),
    }
}

/// Reads the dictionary frame at the start of the file: its ID and the prepared dictionary.
fn read_dictionary<R: Read>(
    r: &mut Source<R>,
) -> Result<(u32, zstd::dict::DecoderDictionary<'static>), WarcError> {
    let bad = |reason| WarcError::Zstd { offset: 0, reason };
    let mut size = [0u8; 8];
    r.read_exact(&mut size)
        .map_err(|_| bad("the dictionary frame is cut short"))?;
    let len = u32::from_le_bytes([size[4], size[5], size[6], size[7]]) as usize;
    if len > MAX_DICTIONARY {
        return Err(bad("a dictionary over 8 MiB"));
    }
    let mut data = vec![0u8; len];
    r.read_exact(&mut data)
        .map_err(|_| bad("the dictionary frame is cut short"))?;
    let dict = match data
        .get(..4)
        .map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]))
    {
        Some(RAW_DICTIONARY_MAGIC) => data,
        Some(FRAME_MAGIC) => {
            let header = frame_header(&data)
                .map_err(|_| bad("the dictionary's frame header is cut short"))?;
            if !header.checksum
                || header
                    .content_size
                    .is_none_or(|n| n > MAX_DICTIONARY as u64)
            {
                return Err(bad(
                    "the dictionary's frame lacks a checksum or a size up to 8 MiB",
                ));
            }
            let mut plain = Vec::new();
            let mut decoder = zstd::stream::read::Decoder::with_buffer(&data[..])
                .map_err(|_| bad("the dictionary does not decode"))?
                .single_frame();
            decoder
                .window_log_max(MAX_WINDOW_LOG)
                .map_err(|_| bad("the dictionary does not decode"))?;
            decoder
                .take(MAX_DICTIONARY as u64 + 1)
                .read_to_end(&mut plain)
                .map_err(|_| bad("the dictionary does not decode"))?;
            plain
        }
        _ => return Err(bad("the dictionary frame holds no dictionary")),
    };
    if dict.len() < 8
        || dict[..4] != RAW_DICTIONARY_MAGIC.to_le_bytes()
        || dict.len() > MAX_DICTIONARY
    {
        return Err(bad("the dictionary frame holds no dictionary"));
    }
    let id = u32::from_le_bytes([dict[4], dict[5], dict[6], dict[7]]);
    Ok((id, zstd::dict::DecoderDictionary::copy(&dict)))
}

/// Skips an extension frame (a skippable frame the reader does not know).
fn skip_frame<R: Read>(r: &mut Source<R>) -> Result<(), WarcError> {
    let offset = r.count;
    let mut head = [0u8; 8];
    r.read_exact(&mut head).map_err(|_| WarcError::Zstd {
        offset,
        reason: "a skippable frame is cut short",
    })?;
    let len = u64::from(u32::from_le_bytes([head[4], head[5], head[6], head[7]]));
    let skipped =
        io::copy(&mut r.take(len), &mut io::sink()).map_err(|e| WarcError::Io(e.to_string()))?;
    if skipped != len {
        return Err(WarcError::Zstd {
            offset,
            reason: "a skippable frame is cut short",
        });
    }
    Ok(())
}

/// The file being read: buffered, topped up on demand so a frame header is always whole in
/// the buffer, and counting what was consumed, so each frame's offset is known.
struct Source<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    count: u64,
}

impl<R: Read> Source<R> {
    fn new(inner: R) -> Self {
        Source {
            inner,
            buf: vec![0; 64 << 10],
            start: 0,
            end: 0,
            count: 0,
        }
    }

    /// The buffered bytes, at least `n` of them unless the file ends first.
    fn fill_at_least(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.end - self.start < n {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            while self.end < n {
                match self.inner.read(&mut self.buf[self.end..]) {
                    Ok(0) => break,
                    Ok(k) => self.end += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(&self.buf[self.start..self.end])
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Source<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.fill_at_least(1)
    }
    fn consume(&mut self, amt: usize) {
        let amt = amt.min(self.end - self.start);
        self.start += amt;
        self.count += amt as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warc::train_dictionary;

    fn page(i: usize) -> Vec<u8> {
        format!(
            "<!doctype html><html><head><title>Page {i}</title><link rel=stylesheet href=/s.css></head>\
             <body><nav><a href=/>Home</a> <a href=/docs/>Docs</a> <a href=/about/>About</a></nav>\
             <main><h1>Page {i}</h1><p>Text of page {i}, {}.</p></main></body></html>",
            "word ".repeat(i % 17)
        )
        .into_bytes()
    }

    fn file(dictionary: Option<&[u8]>, pages: &[Vec<u8>]) -> (Vec<u8>, Vec<(u64, u64)>) {
        let mut w = ZstdWarcWriter::new(Vec::new(), dictionary, 19).unwrap();
        let mut at = Vec::new();
        for (i, p) in pages.iter().enumerate() {
            let uri = format!("https://e.org/{i}.html");
            at.push(
                w.append(&[("WARC-Type", "resource"), ("WARC-Target-URI", &uri)], p)
                    .unwrap(),
            );
        }
        (w.finish().unwrap(), at)
    }

    #[test]
    fn records_read_back_at_their_offsets_with_and_without_a_dictionary() {
        let pages: Vec<Vec<u8>> = (0..300).map(page).collect();
        let samples: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        let dict = train_dictionary(&samples, 16 << 10).expect("trained");
        for dictionary in [None, Some(dict.as_slice())] {
            let (bytes, at) = file(dictionary, &pages);
            let read: Vec<Located> = ZstdWarcReader::new(&bytes[..], 1 << 20)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(read.len(), pages.len());
            for ((r, p), (offset, length)) in read.iter().zip(&pages).zip(&at) {
                assert_eq!(&r.record.block, p);
                assert_eq!((r.offset, r.length), (*offset, *length));
            }
            // A frame read alone, as an index points at it.
            let (o, l) = at[7];
            let one: Vec<u8> = match dictionary {
                Some(d) => {
                    let mut head = bytes[..at[0].0 as usize].to_vec();
                    head.extend_from_slice(&bytes[o as usize..(o + l) as usize]);
                    let _ = d;
                    head
                }
                None => bytes[o as usize..(o + l) as usize].to_vec(),
            };
            let r = ZstdWarcReader::new(&one[..], 1 << 20)
                .unwrap()
                .next()
                .unwrap()
                .unwrap();
            assert_eq!(
                r.record.field("WARC-Target-URI"),
                Some("https://e.org/7.html")
            );
        }
        let (plain, _) = file(None, &pages);
        let (packed, _) = file(Some(&dict), &pages);
        assert!(
            packed.len() < plain.len(),
            "{} against {}",
            packed.len(),
            plain.len()
        );
    }

    #[test]
    fn a_record_over_the_limit_is_read_past_and_named_and_the_rest_read() {
        let mut pages: Vec<Vec<u8>> = (0..6).map(page).collect();
        pages[2] = vec![b'x'; 300 << 10];
        pages[4] = page(4).repeat(2000);
        let samples: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        let dict = train_dictionary(&samples, 8 << 10);
        for dictionary in [None, dict.as_deref()] {
            let (bytes, at) = file(dictionary, &pages);
            let mut r = ZstdWarcReader::new(&bytes[..], 64 << 10).unwrap();
            let mut seen = Vec::new();
            while let Some(n) = r.next_or_oversize().unwrap() {
                seen.push(n);
            }
            assert_eq!(seen.len(), 6);
            for (i, n) in seen.iter().enumerate() {
                match (i, n) {
                    (
                        2 | 4,
                        Next::Oversize {
                            offset,
                            size,
                            target_uri,
                        },
                    ) => {
                        assert_eq!(*offset, at[i].0);
                        assert!(*size > 64 << 10);
                        assert_eq!(
                            target_uri.as_deref(),
                            Some(format!("https://e.org/{i}.html").as_str())
                        );
                    }
                    (_, Next::Record(l)) => assert_eq!(l.record.block, pages[i]),
                    other => panic!("{other:?}"),
                }
            }
            // The plain reading still refuses it.
            let e = ZstdWarcReader::new(&bytes[..], 64 << 10)
                .unwrap()
                .nth(2)
                .unwrap()
                .unwrap_err();
            assert!(e.to_string().contains("larger than allowed"), "{e}");
        }
    }

    #[test]
    fn the_zstd_command_line_tool_reads_what_is_written_without_a_dictionary() {
        // Without a dictionary a .warc.zst is plain concatenated frames: the RFC 8878 decoder
        // of any implementation gives the uncompressed WARC.
        let pages: Vec<Vec<u8>> = (0..3).map(page).collect();
        let (bytes, _) = file(None, &pages);
        let plain = zstd::stream::decode_all(&bytes[..]).unwrap();
        assert!(plain.starts_with(b"WARC/1.1\r\n"));
        assert_eq!(plain.windows(8).filter(|w| w == b"WARC/1.1").count(), 3);
    }

    #[test]
    fn hostile_files_end_in_errors_naming_the_offset() {
        let pages: Vec<Vec<u8>> = (0..40).map(page).collect();
        let samples: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        let dict = train_dictionary(&samples, 8 << 10).unwrap();
        let (bytes, at) = file(Some(&dict), &pages);
        let read_all = |b: &[u8], max: u64| -> Result<usize, WarcError> {
            let mut n = 0;
            for r in ZstdWarcReader::new(b, max)? {
                r?;
                n += 1;
            }
            Ok(n)
        };
        assert_eq!(read_all(&bytes, 1 << 20), Ok(40));
        // Cut anywhere inside a frame.
        for cut in [at[3].0 + 1, at[3].0 + 6, at[3].0 + at[3].1 - 1] {
            let e = read_all(&bytes[..cut as usize], 1 << 20).unwrap_err();
            assert!(e.to_string().contains(&format!("byte {}", at[3].0)), "{e}");
        }
        // A record over the limit is refused before it is decompressed.
        let e = read_all(&bytes, 100).unwrap_err();
        assert!(e.to_string().contains("larger than allowed"), "{e}");
        // A flipped byte inside a frame: the checksum or the decoder refuses it.
        let mut flipped = bytes.clone();
        flipped[(at[5].0 + at[5].1 / 2) as usize] ^= 0x55;
        assert!(read_all(&flipped, 1 << 20).is_err());
        // Frames of another file's dictionary.
        let other = train_dictionary(&samples[..20], 4 << 10).unwrap();
        let (foreign, fat) = file(Some(&other), &pages);
        let mut mixed = bytes[..at[0].0 as usize].to_vec();
        mixed.extend_from_slice(&foreign[fat[0].0 as usize..]);
        let e = read_all(&mixed, 1 << 20).unwrap_err();
        assert!(
            e.to_string().contains("dictionary is not the file's"),
            "{e}"
        );
        // A dictionary frame claiming 4 GiB, garbage, emptiness.
        let mut huge = DICTIONARY_MAGIC.to_le_bytes().to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            read_all(&huge, 1 << 20)
                .unwrap_err()
                .to_string()
                .contains("over 8 MiB")
        );
        assert!(read_all(b"GIF89a.......", 1 << 20).is_err());
        assert!(read_all(b"", 1 << 20).is_err());
        // A frame without a content size (a streaming encoder's) is refused.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        enc.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut enc, b"WARC/1.1\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
            .unwrap();
        let streamed = enc.finish().unwrap();
        let e = read_all(&streamed, 1 << 20).unwrap_err();
        assert!(e.to_string().contains("content size"), "{e}");
    }

    #[test]
    fn extension_frames_are_skipped() {
        let pages: Vec<Vec<u8>> = (0..2).map(page).collect();
        let (bytes, at) = file(None, &pages);
        let mut with = bytes[..at[1].0 as usize].to_vec();
        with.extend_from_slice(&0x184D_2A51u32.to_le_bytes());
        with.extend_from_slice(&3u32.to_le_bytes());
        with.extend_from_slice(b"abc");
        with.extend_from_slice(&bytes[at[1].0 as usize..]);
        let n = ZstdWarcReader::new(&with[..], 1 << 20)
            .unwrap()
            .filter(Result::is_ok)
            .count();
        assert_eq!(n, 2);
    }
}

//! Gzip bodies (RFC 1952, one member or several) inflated straight into the room a buffer has
//! left. Reading a decoder through `std::io::Read::read_to_end` zeroes each part of the buffer
//! before the decoder writes it: on the Rust documentation that `memset`, with the page faults
//! it took first, was 4% of the crawl's CPU. zlib's own gzip wrapper (through flate2's
//! `Decompress`) checks the header, each member's CRC-32 and length as `MultiGzDecoder` does.

use flate2::{Decompress, FlushDecompress, Status};
use std::io;

/// The window zlib's gzip wrapper is asked for: 2^15 bytes, the most deflate uses.
const WINDOW_BITS: u8 = 15;

/// The least a full buffer grows by, when the body did not state its size.
const GROWTH_LEAST: usize = 32 << 10;

/// Appends the gzip members of `body` to `out`, at most `limit` bytes of them, and says how
/// many it appended. As `MultiGzDecoder::new(body).take(limit)` read to its end: bytes past a
/// member that do not begin another are an error, and so is a body cut short (`UnexpectedEof`),
/// with what was decoded before it left in `out`.
pub(crate) fn gunzip_into(out: &mut Vec<u8>, body: &[u8], limit: u64) -> io::Result<u64> {
    let start = out.len();
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut input = body;
    let mut inflate = Decompress::new_gzip(WINDOW_BITS);
    loop {
        let written = out.len() - start;
        if written >= limit {
            out.truncate(start + limit);
            return Ok(limit as u64);
        }
        let (read_before, wrote_before) = (inflate.total_in(), inflate.total_out());
        let status = inflate
            .decompress_vec(input, out, FlushDecompress::None)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let read = usize::try_from(inflate.total_in() - read_before).unwrap_or(usize::MAX);
        input = input.get(read..).unwrap_or_default();
        if status == Status::StreamEnd {
            if input.is_empty() {
                let written = (out.len() - start).min(limit);
                out.truncate(start + written);
                return Ok(written as u64);
            }
            inflate = Decompress::new_gzip(WINDOW_BITS);
            continue;
        }
        let progressed = read > 0 || inflate.total_out() > wrote_before;
        if progressed {
            continue;
        }
        if out.len() < out.capacity() {
            // Room to write and nothing to read: the body ends inside a member.
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        // A full buffer is tried once as it is before it grows: a member's trailer needs no
        // room, so a body decoded into the size it stated is never copied to a larger buffer.
        let written = out.len() - start;
        out.reserve_exact(written.max(GROWTH_LEAST).min(limit - written));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::GzEncoder;
    use std::io::{Read, Write};

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// What `MultiGzDecoder` read to its end makes of `body`, the reference.
    fn reference(body: &[u8], limit: u64) -> (bool, Vec<u8>) {
        let mut out = Vec::new();
        let read = flate2::bufread::MultiGzDecoder::new(body)
            .take(limit)
            .read_to_end(&mut out);
        (read.is_ok(), out)
    }

    fn ours(body: &[u8], limit: u64, capacity: usize) -> (bool, Vec<u8>) {
        let mut out = Vec::with_capacity(capacity);
        let read = gunzip_into(&mut out, body, limit);
        if let Ok(n) = read {
            assert_eq!(n as usize, out.len());
        }
        (read.is_ok(), out)
    }

    fn bodies() -> Vec<(&'static str, Vec<u8>)> {
        let page: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let one = gzip(&page);
        let mut two = gzip(b"first member, ");
        two.extend(gzip(b"second member"));
        let mut named = GzEncoder::new(Vec::new(), Compression::fast());
        named.write_all(b"<html>named</html>").unwrap();
        let mut with_header = flate2::GzBuilder::new()
            .filename("index.html")
            .comment("a comment")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), Compression::fast());
        with_header
            .write_all(b"<html>with a header</html>")
            .unwrap();
        let mut crc = one.clone();
        let n = crc.len();
        crc[n - 8] ^= 1;
        let mut size = one.clone();
        size[n - 1] ^= 0x40;
        let mut garbage = gzip(b"then garbage");
        garbage.extend(b"<html>");
        let mut flipped = one.clone();
        flipped[n / 2] ^= 0xff;
        vec![
            ("one member", one.clone()),
            ("two members", two),
            (
                "a header with a name, a comment and extra fields",
                with_header.finish().unwrap(),
            ),
            ("a plain header", named.finish().unwrap()),
            ("empty content", gzip(b"")),
            ("a CRC that disagrees", crc),
            ("a length that disagrees", size),
            ("bytes after the member", garbage),
            ("cut in its trailer", one[..n - 3].to_vec()),
            ("cut in its data", one[..n / 2].to_vec()),
            ("cut in its header", one[..5].to_vec()),
            ("a flipped byte", flipped),
            ("no body", Vec::new()),
            ("not gzip", b"<html>plain</html>".to_vec()),
        ]
    }

    #[test]
    fn every_body_decodes_as_multi_gz_decoder_reads_it() {
        for (what, body) in bodies() {
            let (ok, want) = reference(&body, u64::MAX);
            for capacity in [0, 1, 100, want.len(), 1 << 20] {
                let (got_ok, got) = ours(&body, u64::MAX, capacity);
                assert_eq!(got_ok, ok, "{what}, room {capacity}");
                if ok {
                    assert_eq!(got, want, "{what}, room {capacity}");
                } else {
                    // Both give what they decoded before the error, as far as they got.
                    let n = got.len().min(want.len());
                    assert_eq!(got[..n], want[..n], "{what}, room {capacity}");
                }
            }
        }
    }

    #[test]
    fn a_limit_stops_the_decoding_where_take_would() {
        for (what, body) in bodies() {
            for limit in [0, 1, 14, 4096, 300_000] {
                let (ok, want) = reference(&body, limit);
                let (got_ok, got) = ours(&body, limit, 0);
                assert!(got.len() as u64 <= limit, "{what}, {limit}");
                if ok {
                    assert!(got_ok, "{what}, {limit}");
                    assert_eq!(got, want, "{what}, {limit}");
                }
            }
        }
    }

    #[test]
    fn a_body_decoded_into_its_stated_size_is_never_moved_to_a_larger_buffer() {
        let page = b"<a href=x>".repeat(50_000);
        let body = gzip(&page);
        let mut out = Vec::with_capacity(page.len());
        let at = out.as_ptr();
        assert_eq!(
            gunzip_into(&mut out, &body, u64::MAX).unwrap(),
            page.len() as u64
        );
        assert_eq!((out.as_ptr(), out.capacity()), (at, page.len()));
        assert_eq!(out, page);
        // Appended after what the buffer held.
        let mut out = b"kept:".to_vec();
        gunzip_into(&mut out, &gzip(b"new"), u64::MAX).unwrap();
        assert_eq!(out, b"kept:new");
    }

    #[test]
    fn a_bomb_costs_no_more_than_the_limit() {
        let bomb = gzip(&vec![0u8; 64 << 20]);
        let mut out = Vec::new();
        assert_eq!(gunzip_into(&mut out, &bomb, 1 << 20).unwrap(), 1 << 20);
        assert!(out.capacity() <= 1 << 20, "{}", out.capacity());
    }
}

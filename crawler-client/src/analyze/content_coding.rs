//! Content codings removed (RFC 9110, 8.4): gzip, deflate (zlib-wrapped, or raw as some
//! servers send it), br and zstd, never past a limit, so that a small compressed body (a
//! gzip bomb) cannot grow into the memory its decoding would take.

use std::io::{self, Read, Write};

/// Why a body was not decoded by [`decode_within`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Undecoded {
    /// A coding not known, or data its decoder refused.
    Coding,
    /// It decodes to more than the limit.
    TooLarge,
}

/// Where decoded bytes go: kept, or only counted.
trait Sink {
    /// Reads `from` to its end into the sink, returning how many bytes it took.
    fn fill(&mut self, from: &mut dyn Read) -> io::Result<u64>;
    /// Forgets what was written, for a second try in another framing.
    fn restart(&mut self);
    /// The gzip members of `body`, at most `limit` bytes, read into the sink.
    fn gunzip(&mut self, body: &[u8], limit: u64) -> io::Result<u64> {
        // The body is in memory: flate2's `bufread` decoders read it in place, where its
        // `read` ones copy it through a 32 KiB buffer zeroed for every page.
        self.fill(&mut flate2::bufread::MultiGzDecoder::new(body).take(limit))
    }
}

impl Sink for Vec<u8> {
    fn fill(&mut self, from: &mut dyn Read) -> io::Result<u64> {
        from.read_to_end(self).map(|n| n as u64)
    }
    fn restart(&mut self) {
        self.clear();
    }
    fn gunzip(&mut self, body: &[u8], limit: u64) -> io::Result<u64> {
        super::gunzip::gunzip_into(self, body, limit)
    }
}

/// Decoded bytes counted and dropped: what a body would cost, without the cost.
struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for Count {
    fn fill(&mut self, from: &mut dyn Read) -> io::Result<u64> {
        io::copy(from, self)
    }
    fn restart(&mut self) {
        self.0 = 0;
    }
}

/// Runs `body` through the decoder of `coding` (lower case, trimmed, not identity) into
/// `out`, at most `limit` bytes; `None` for a coding not known.
fn run(coding: &str, body: &[u8], limit: u64, out: &mut dyn Sink) -> Option<io::Result<u64>> {
    // The body is in memory: flate2's `bufread` decoders read it in place.
    let read = match coding {
        "gzip" | "x-gzip" => out.gunzip(body, limit),
        "deflate" => {
            // "deflate" is zlib-wrapped (RFC 9110); some servers send it raw.
            let zlib = out.fill(&mut flate2::bufread::ZlibDecoder::new(body).take(limit));
            if zlib.is_err() {
                out.restart();
                out.fill(&mut flate2::bufread::DeflateDecoder::new(body).take(limit))
            } else {
                zlib
            }
        }
        "br" => out.fill(&mut brotli_decompressor::Decompressor::new(body, 4096).take(limit)),
        // RFC 9659: a zstd content coding uses at most an 8 MB window; a frame asking for
        // more (up to 2 GB) would make the decoder allocate it.
        "zstd" => zstd::stream::read::Decoder::new(body).and_then(|mut d| {
            d.window_log_max(23)?;
            out.fill(&mut d.take(limit))
        }),
        _ => return None,
    };
    Some(read)
}

/// The coding named by a `Content-Encoding` value, lower case; `None` for identity.
fn coding_of(coding: Option<&str>) -> Option<String> {
    let coding = coding.unwrap_or("").trim().to_ascii_lowercase();
    (!coding.is_empty() && coding != "identity").then_some(coding)
}

/// The body with its content coding removed, at most `limit` bytes; `None` for an unknown
/// coding or corrupt data. A body cut at the size limit decodes as far as it goes.
pub fn decode(coding: Option<&str>, body: &[u8], truncated: bool, limit: usize) -> Option<Vec<u8>> {
    let Some(coding) = coding_of(coding) else {
        return Some(body[..body.len().min(limit)].to_vec());
    };
    let mut out = Vec::with_capacity(if truncated {
        0
    } else {
        size_hint(&coding, body, limit)
    });
    match run(&coding, body, limit as u64, &mut out)? {
        Ok(_) => Some(out),
        Err(_) if truncated && !out.is_empty() => Some(out),
        Err(_) => None,
    }
}

/// The bytes decoding `body` adds to memory, as [`decode`] allocates them: none for a body
/// without a coding (it is read in place), a gzip body's stated size (bounded as the buffer
/// is), and for other codings an estimate of eight times the body (HTML compresses five to
/// ten times), all within `limit`.
pub(crate) fn decoded_room(coding: Option<&str>, body: &[u8], limit: usize) -> usize {
    const TYPICAL_RATIO: usize = 8;
    match coding_of(coding) {
        None => 0,
        Some(c) if matches!(c.as_str(), "gzip" | "x-gzip") => size_hint(&c, body, limit),
        Some(_) => body.len().saturating_mul(TYPICAL_RATIO).min(limit),
    }
}

/// Deflate expands its input at most this many times.
const DEFLATE_MOST: usize = 1032;

/// The room a decoded body is given at first: a gzip body's own statement of its decoded size
/// (RFC 1952's `ISIZE`, the last four bytes), bounded by what deflate can make of the body and
/// by `limit`; nothing for another coding. Decoding into a vector grown by doubling copied
/// each page about twice over (3.5% of the CPU of crawling the Rust documentation). The
/// statement is the sender's: it sizes a buffer and nothing else.
fn size_hint(coding: &str, body: &[u8], limit: usize) -> usize {
    let stated = match coding {
        "gzip" | "x-gzip" => body
            .len()
            .checked_sub(4)
            .and_then(|at| body.get(at..))
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, |b| u32::from_le_bytes(b) as usize),
        _ => 0,
    };
    stated
        .min(limit)
        .min(body.len().saturating_mul(DEFLATE_MOST))
}

/// The whole body with its content coding removed, if it decodes to at most `limit` bytes.
/// The decoded size is counted first without keeping it, then the body is decoded once more
/// into a buffer of exactly that size: a document near the limit costs its size in memory,
/// not the doubling a growing buffer goes through, and a bomb costs none (only its CPU).
pub(crate) fn decode_within(
    coding: Option<&str>,
    body: &[u8],
    limit: usize,
) -> Result<Vec<u8>, Undecoded> {
    let Some(coding) = coding_of(coding) else {
        return match body.len() <= limit {
            true => Ok(body.to_vec()),
            false => Err(Undecoded::TooLarge),
        };
    };
    let mut count = Count(0);
    let size = match run(&coding, body, limit as u64 + 1, &mut count) {
        Some(Ok(n)) => n,
        _ => return Err(Undecoded::Coding),
    };
    if size > limit as u64 {
        return Err(Undecoded::TooLarge);
    }
    let mut out = Vec::with_capacity(size as usize);
    match run(&coding, body, size, &mut out) {
        Some(Ok(_)) => Ok(out),
        _ => Err(Undecoded::Coding),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn the_room_a_decoding_takes_is_what_it_allocates_bounded_whatever_the_body_says() {
        let page = b"<a href=x>".repeat(5000);
        let honest = gzip(&page);
        assert_eq!(decoded_room(Some("gzip"), &honest, 1 << 20), page.len());
        assert_eq!(decoded_room(Some(" X-GZIP "), &honest, 1 << 20), page.len());
        // A body read in place takes nothing; another coding its estimate, within the limit.
        assert_eq!(decoded_room(None, &page, 1 << 20), 0);
        assert_eq!(decoded_room(Some("identity"), &page, 1 << 20), 0);
        assert_eq!(decoded_room(Some("br"), &honest, 1 << 20), honest.len() * 8);
        assert_eq!(decoded_room(Some("deflate"), &page, 4096), 4096);
        // Hostile statements: a trailer of 4 GB is bounded by deflate's ratio and the limit.
        let mut lying = honest.clone();
        let n = lying.len();
        lying[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decoded_room(Some("gzip"), &lying, 64 << 20), n * 1032);
        assert_eq!(decoded_room(Some("gzip"), &lying, 1000), 1000);
        assert_eq!(decoded_room(Some("gzip"), b"", 1 << 20), 0);
    }

    #[test]
    fn a_gzip_body_is_decoded_into_the_room_its_trailer_states_and_a_false_statement_is_bounded() {
        let page = b"<a href=x>".repeat(5000);
        let honest = gzip(&page);
        let out = decode(Some("gzip"), &honest, false, 1 << 20).unwrap();
        assert_eq!(out, page);
        assert_eq!(out.capacity(), page.len(), "the stated size, no doubling");
        // A trailer claiming 4 GB: the room is what deflate can make of the body at most; the
        // body is corrupt (its trailer disagrees), and as a body cut short it decodes as far
        // as it goes.
        let mut lying = honest.clone();
        let n = lying.len();
        lying[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(Some("gzip"), &lying, false, 64 << 20), None);
        let out = decode(Some("gzip"), &lying, true, 64 << 20).unwrap();
        assert_eq!(out, page);
        assert_eq!(
            size_hint("gzip", &lying, 64 << 20),
            honest.len() * DEFLATE_MOST
        );
        assert_eq!(
            size_hint("gzip", &lying, 1000),
            1000,
            "never past the limit"
        );
        assert_eq!(size_hint("gzip", b"ab", 1000), 0, "no trailer");
        assert_eq!(size_hint("br", &honest, 1 << 20), 0);
    }

    #[test]
    fn a_bomb_is_refused_by_its_size_and_a_body_within_the_limit_is_kept_exactly() {
        let bomb = gzip(&vec![b'<'; 20 << 20]);
        assert!(bomb.len() < 100 << 10);
        assert_eq!(
            decode_within(Some("gzip"), &bomb, 1 << 20),
            Err(Undecoded::TooLarge)
        );
        // The honest twin: the same body under a limit it fits is decoded whole, in a buffer
        // of its own size.
        let whole = decode_within(Some(" GZIP "), &bomb, 20 << 20).unwrap();
        assert_eq!(whole.len(), 20 << 20);
        assert_eq!(whole.capacity(), 20 << 20);
        assert!(whole.iter().all(|&b| b == b'<'));
        // At the limit exactly it fits; one byte under, it does not.
        let small = gzip(b"<urlset/>");
        assert_eq!(
            decode_within(Some("gzip"), &small, 9).unwrap(),
            b"<urlset/>"
        );
        assert_eq!(
            decode_within(Some("gzip"), &small, 8),
            Err(Undecoded::TooLarge)
        );
        assert_eq!(decode_within(None, b"plain", 5).unwrap(), b"plain");
        assert_eq!(
            decode_within(Some("identity"), b"plain", 4),
            Err(Undecoded::TooLarge)
        );
    }

    #[test]
    fn unknown_codings_and_corrupt_data_are_not_decoded() {
        assert_eq!(
            decode_within(Some("compress"), b"x", 10),
            Err(Undecoded::Coding)
        );
        let mut cut = gzip(b"a sitemap cut short on the wire");
        cut.truncate(cut.len() - 6);
        assert_eq!(
            decode_within(Some("gzip"), &cut, 1 << 10),
            Err(Undecoded::Coding)
        );
        // Raw deflate, as some servers send it, decodes like zlib-wrapped deflate.
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(b"raw").unwrap();
        let raw = raw.finish().unwrap();
        assert_eq!(decode_within(Some("deflate"), &raw, 3).unwrap(), b"raw");
        assert_eq!(decode(Some("deflate"), &raw, false, 3).unwrap(), b"raw");
    }
}

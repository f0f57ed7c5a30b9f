//! gzip and zstd with bounds: a compressed document is never decompressed past a limit, so a
//! decompression bomb is an error instead of an out-of-memory.

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use std::io::{Read, Write};

/// Why bounded decompression failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecompressError {
    /// The decompressed data would be larger than allowed.
    #[error("decompressed size exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The compressed data is corrupt or truncated.
    #[error("corrupt compressed data: {0}")]
    Corrupt(String),
}

/// The two bytes every gzip member starts with.
pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether `bytes` look like gzip.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&GZIP_MAGIC)
}

/// gzip-compresses `bytes` (RFC 1952) at `level` 0-9.
pub fn gzip(bytes: &[u8], level: u32) -> Vec<u8> {
    let mut encoder = GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4 + 64),
        Compression::new(level.min(9)),
    );
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// Reads all of `reader` into memory, failing once more than `limit` bytes come out.
pub fn read_bounded(reader: impl Read, limit: u64) -> Result<Vec<u8>, DecompressError> {
    let mut out = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| DecompressError::Corrupt(e.to_string()))?;
    if out.len() as u64 > limit {
        return Err(DecompressError::TooLarge { limit });
    }
    Ok(out)
}

/// Decompresses gzip data (all members) up to `limit` bytes of output.
pub fn gunzip_bounded(bytes: &[u8], limit: u64) -> Result<Vec<u8>, DecompressError> {
    read_bounded(MultiGzDecoder::new(bytes), limit)
}

/// zstd-compresses `bytes` at `level` (1-22), without a dictionary.
pub fn zstd_compress(bytes: &[u8], level: i32) -> Vec<u8> {
    zstd::bulk::compress(bytes, level).unwrap_or_default()
}

/// Decompresses zstd data (no dictionary) up to `limit` bytes of output.
pub fn zstd_decompress_bounded(bytes: &[u8], limit: u64) -> Result<Vec<u8>, DecompressError> {
    let decoder = zstd::stream::read::Decoder::new(bytes)
        .map_err(|e| DecompressError::Corrupt(e.to_string()))?;
    read_bounded(decoder, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trip_and_bomb_limit() {
        let data = vec![b'a'; 1 << 20];
        let gz = gzip(&data, 6);
        assert!(is_gzip(&gz));
        assert!(gz.len() < 10_000);
        assert_eq!(gunzip_bounded(&gz, 1 << 20).unwrap(), data);
        assert_eq!(
            gunzip_bounded(&gz, (1 << 20) - 1),
            Err(DecompressError::TooLarge {
                limit: (1 << 20) - 1
            })
        );
    }

    #[test]
    fn corrupt_and_truncated_gzip_are_errors() {
        let gz = gzip(b"hello world, hello world", 6);
        assert!(matches!(
            gunzip_bounded(&gz[..gz.len() - 6], 100),
            Err(DecompressError::Corrupt(_))
        ));
        let mut bad = gz.clone();
        bad[12] ^= 0xff;
        assert!(gunzip_bounded(&bad, 100).is_err());
    }

    #[test]
    fn concatenated_gzip_members_are_all_read() {
        let mut two = gzip(b"one ", 6);
        two.extend(gzip(b"two", 6));
        assert_eq!(gunzip_bounded(&two, 100).unwrap(), b"one two");
    }

    #[test]
    fn zstd_bomb_is_bounded() {
        let data = vec![0u8; 8 << 20];
        let z = zstd_compress(&data, 3);
        assert!(z.len() < 4096);
        assert_eq!(zstd_decompress_bounded(&z, 8 << 20).unwrap().len(), 8 << 20);
        assert_eq!(
            zstd_decompress_bounded(&z, 1 << 20),
            Err(DecompressError::TooLarge { limit: 1 << 20 })
        );
    }
}

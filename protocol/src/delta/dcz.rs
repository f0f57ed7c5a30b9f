//! RFC 9842 Dictionary-Compressed Zstandard (`dcz`).
//!
//! A dcz stream is a 40-byte header, a zstd skippable frame (`5E 2A 4D 18`, length 32) holding
//! the SHA-256 of the dictionary, followed by one zstd frame compressed with the dictionary as a
//! raw prefix. The held version of a resource is the dictionary. Stock `zstd -d
//! --patch-from=OLD` decodes it: zstd skips skippable frames and `--patch-from` loads the same
//! raw prefix.

use super::{DeltaError, check_size};
use crate::compression::DecompressError;
use crate::compression::read_bounded;
use crate::validator::{EntityTag, Sha256Digest};
use std::io::Write;
use zstd::zstd_safe::CParameter;

/// The fixed first 8 bytes of every dcz stream.
pub const MAGIC: [u8; 8] = [0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00];
/// Length of the header: magic plus the dictionary's SHA-256.
pub const HEADER_LEN: usize = 40;

/// The zstd window log for a dictionary of `dict_len` bytes and content of `content_len`:
/// large enough to reach back over the whole dictionary where RFC 9842 allows (a window of at
/// most max(8 MB, 1.25 x dictionary)), no larger than the data needs.
fn window_log(dict_len: usize, content_len: usize) -> u32 {
    let allowed = (8usize << 20).max(dict_len + dict_len / 4) as u64;
    let max_log = 63 - allowed.leading_zeros(); // floor(log2(allowed))
    let needed = (dict_len + content_len).max(1) as u64;
    let needed_log = 64 - (needed - 1).leading_zeros(); // ceil(log2(needed))
    needed_log.clamp(10, max_log.min(27))
}

/// Encodes `new` with `base` as the dictionary, at zstd `level`.
pub fn encode(base: &[u8], new: &[u8], level: i32) -> Result<Vec<u8>, DeltaError> {
    check_size(base)?;
    check_size(new)?;
    let mut out = Vec::with_capacity(HEADER_LEN + new.len() / 8 + 64);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&Sha256Digest::of(base).0);
    let mut encoder = zstd::stream::write::Encoder::with_ref_prefix(out, level, base)
        .map_err(|e| DeltaError::Zstd(e.to_string()))?;
    let io = |e: std::io::Error| DeltaError::Zstd(e.to_string());
    encoder
        .set_parameter(CParameter::WindowLog(window_log(base.len(), new.len())))
        .map_err(io)?;
    encoder.include_checksum(true).map_err(io)?;
    encoder.include_contentsize(true).map_err(io)?;
    encoder
        .set_pledged_src_size(Some(new.len() as u64))
        .map_err(io)?;
    encoder.write_all(new).map_err(io)?;
    encoder.finish().map_err(io)
}

/// The SHA-256 of the dictionary a dcz stream was made against (its header).
pub fn dictionary_of(delta: &[u8]) -> Result<Sha256Digest, DeltaError> {
    if delta.len() < HEADER_LEN {
        return Err(DeltaError::NotDcz(format!(
            "{} bytes is shorter than the 40-byte header",
            delta.len()
        )));
    }
    if delta[..8] != MAGIC {
        return Err(DeltaError::NotDcz(
            "the header does not start with 5E 2A 4D 18 20 00 00 00".into(),
        ));
    }
    let mut digest = [0u8; 32];
    digest.copy_from_slice(&delta[8..HEADER_LEN]);
    Ok(Sha256Digest(digest))
}

/// The length of the content a dcz stream decodes to, as its zstd frame header states it
/// (the encoder always writes it); `None` for a stream that does not say.
pub fn content_size(delta: &[u8]) -> Option<u64> {
    dictionary_of(delta).ok()?;
    zstd::zstd_safe::get_frame_content_size(&delta[HEADER_LEN..])
        .ok()
        .flatten()
}

/// Decodes a dcz stream against `base`, producing at most `max_output` bytes. Fails with
/// [`DeltaError::WrongBase`] when the stream was made against another version.
pub fn decode(base: &[u8], delta: &[u8], max_output: u64) -> Result<Vec<u8>, DeltaError> {
    let expected = dictionary_of(delta)?;
    let actual = Sha256Digest::of(base);
    if expected != actual {
        return Err(DeltaError::WrongBase {
            expected: expected.to_hex(),
            actual: actual.to_hex(),
        });
    }
    let mut decoder = zstd::stream::read::Decoder::with_ref_prefix(&delta[HEADER_LEN..], base)
        .map_err(|e| DeltaError::Corrupt(e.to_string()))?
        .single_frame();
    decoder
        .window_log_max(27)
        .map_err(|e| DeltaError::Corrupt(e.to_string()))?;
    read_bounded(decoder, max_output).map_err(|e| match e {
        DecompressError::TooLarge { limit } => DeltaError::TooLarge { limit },
        DecompressError::Corrupt(m) => DeltaError::Corrupt(m),
    })
}

/// Decodes and checks the result against the validator the server announced for the new
/// version; a result that does not match is an error, never returned.
pub fn decode_verified(
    base: &[u8],
    delta: &[u8],
    expected: &EntityTag,
    max_output: u64,
) -> Result<Vec<u8>, DeltaError> {
    verify_against(expected, decode(base, delta, max_output)?)
}

/// Returns `content` if its strong validator is `expected`.
pub(crate) fn verify_against(
    expected: &EntityTag,
    content: Vec<u8>,
) -> Result<Vec<u8>, DeltaError> {
    if expected.weak || Sha256Digest::from_etag(expected).is_none() {
        return Err(DeltaError::UnverifiableValidator(expected.to_string()));
    }
    let actual = Sha256Digest::of(&content).etag();
    if !actual.strong_eq(expected) {
        return Err(DeltaError::Mismatch {
            expected: expected.to_string(),
            actual: actual.to_string(),
        });
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_covers_the_dictionary_within_rfc9842_bounds() {
        assert_eq!(window_log(0, 0), 10);
        assert_eq!(window_log(1000, 1000), 11);
        assert_eq!(window_log(5 << 20, 5 << 20), 23); // 8 MB cap for small dictionaries
        assert_eq!(window_log(20 << 20, 20 << 20), 24); // 1.25 x 20 MiB = 25 MiB -> 2^24
        assert_eq!(window_log(200 << 20, 1), 27);
    }
}

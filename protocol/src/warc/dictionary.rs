//! Zstandard dictionaries for `.warc.zst` files, trained on samples of the records they will
//! compress.
//!
//! Two trainers: zstd's default (fastCOVER searching its parameters, what `zstd --train`
//! runs), and fastCOVER with fixed ones. The default stops as soon as ten of its epochs in a
//! row have nothing new, which on a site whose pages repeat each other (Debian's Rust
//! documentation: `std` and `core` are the same pages twice, and every page carries the same
//! navigation) comes early: asked for 1 MiB it returned 37 to 66 KB, which compressed worse
//! than its default 110 KB. With a segment of 1 KiB it fills 1 MiB: the site's records took
//! 0.079 of their size against 0.099 with the default dictionary (zstd level 12, 16 MiB of
//! samples). COVER, which it replaced, made that snapshot 3.3% smaller (26.8 against 27.7 MB)
//! but took nine bytes of memory per byte of samples, 150 MB for a moment.

/// The segment size and d-mer length: zstd's own defaults' neighbourhood, fixed because
/// searching them (`ZDICT_optimizeTrainFromBuffer_cover`) costs a training per pair; on the
/// Rust documentation k = 512 and 1024 differed by 2.5%.
const COVER_K: u32 = 1024;
const COVER_D: u32 = 8;
/// fastCOVER's table of d-mer frequencies holds 2^f counters: 2^22 of them (16 MiB, and 8 MiB
/// of segment counts) whatever the samples' size. On the Rust documentation's snapshot: 2^20
/// made the file 0.6% larger than 2^22; the snapshot's process peaked at 221 MB against 307
/// with COVER and built in 12.1 s against 15.8.
const FAST_COVER_F: u32 = 22;

/// A dictionary of at most `size` bytes trained by zstd's default trainer on `samples`, or
/// `None` when they are too few or too alike to train on.
pub fn train_dictionary(samples: &[&[u8]], size: usize) -> Option<Vec<u8>> {
    let size = size.min(super::zstd_file::MAX_DICTIONARY);
    let (joined, lengths) = join(samples);
    zstd::dict::from_continuous(&joined, &lengths, size).ok()
}

/// A dictionary of at most `size` bytes trained by fastCOVER with fixed parameters on
/// `samples` (24 MiB of tables besides them), or `None` when zstd refuses them.
pub fn train_fast_cover(samples: &[&[u8]], size: usize) -> Option<Vec<u8>> {
    let size = size.min(super::zstd_file::MAX_DICTIONARY);
    let (joined, lengths) = join(samples);
    let count = u32::try_from(lengths.len()).ok()?;
    if count == 0 || size == 0 {
        return None;
    }
    let mut dict = vec![0u8; size];
    // SAFETY: zeroed is a valid value of this plain C struct (zero means "default" for every
    // field but those set).
    let mut params: zstd_sys::ZDICT_fastCover_params_t = unsafe { std::mem::zeroed() };
    params.k = COVER_K;
    params.d = COVER_D;
    params.f = FAST_COVER_F;
    params.accel = 1;
    params.nbThreads = 1;
    params.splitPoint = 1.0;
    // SAFETY: `dict` is writable for `size` bytes; `joined` holds the sum of `lengths` bytes,
    // and `lengths` holds `count` sizes; zstd reads and writes nothing else.
    let written = unsafe {
        zstd_sys::ZDICT_trainFromBuffer_fastCover(
            dict.as_mut_ptr().cast(),
            size,
            joined.as_ptr().cast(),
            lengths.as_ptr(),
            count,
            params,
        )
    };
    // SAFETY: a pure function of the code returned.
    if unsafe { zstd_sys::ZDICT_isError(written) } != 0 || written > size {
        return None;
    }
    dict.truncate(written);
    Some(dict)
}

fn join(samples: &[&[u8]]) -> (Vec<u8>, Vec<usize>) {
    let mut joined = Vec::with_capacity(samples.iter().map(|s| s.len()).sum());
    let mut lengths = Vec::with_capacity(samples.len());
    for s in samples {
        joined.extend_from_slice(s);
        lengths.push(s.len());
    }
    (joined, lengths)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages that repeat one another, as a documentation site's do.
    fn pages() -> Vec<Vec<u8>> {
        (0..400)
            .map(|i| {
                format!(
                    "<!DOCTYPE html><html><head><title>Item {i}</title><link rel=stylesheet href=/s.css></head>\
                     <body><nav><a href=/a>Alpha</a><a href=/b>Beta</a><a href=/c>Gamma</a></nav>\
                     <main><h1>Item {i}</h1><p>{}</p></main><footer>Licensed under MIT or Apache-2.0</footer></body></html>",
                    "word ".repeat(i % 37)
                )
                .into_bytes()
            })
            .collect()
    }

    #[test]
    fn fast_cover_trains_a_dictionary_that_compresses_the_pages() {
        let pages = pages();
        let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        let dict = train_fast_cover(&refs, 16 << 10).expect("trained");
        assert!(!dict.is_empty() && dict.len() <= 16 << 10);
        // A dictionary zstd itself loads: its magic, and frames compressed with it are
        // smaller than without.
        assert_eq!(&dict[..4], &0xEC30A437u32.to_le_bytes());
        let with = crate::warc::frames_size(Some(&dict), 3, &refs).expect("compressed");
        let without = crate::warc::frames_size(None, 3, &refs).expect("compressed");
        assert!(with * 2 < without, "{with} against {without}");
    }

    #[test]
    fn nothing_to_train_on_is_no_dictionary() {
        assert_eq!(train_fast_cover(&[], 16 << 10), None);
        assert_eq!(train_fast_cover(&[b"x".as_slice()], 0), None);
        assert_eq!(
            train_fast_cover(&[b"ab".as_slice(), b"cd".as_slice()], 1 << 10),
            None
        );
    }
}

//! WARC 1.1 (ISO 28500) as the agent's snapshots carry it and the crawler reads it: records
//! ([`record`]) and files compressed per the IIPC's WARC-zstd ([`zstd_file`]).

pub mod cdxj;
mod dictionary;
pub mod record;
pub mod zstd_file;

pub use dictionary::{train_dictionary, train_fast_cover};
pub use record::Record;
pub use zstd_file::{Located, Next, ZstdWarcReader, ZstdWarcWriter, frames_size, record_bytes};

/// Why a WARC file or record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WarcError {
    /// A record that is not one.
    #[error("WARC record: {0}")]
    Record(&'static str),
    /// A frame of a `.warc.zst` that is refused.
    #[error("WARC-zstd file at byte {offset}: {reason}")]
    Zstd {
        /// Where the frame starts.
        offset: u64,
        /// What was wrong.
        reason: &'static str,
    },
    /// A record refused, in the frame at `offset`.
    #[error("WARC-zstd file at byte {offset}: {error}")]
    At {
        /// Where the frame starts.
        offset: u64,
        /// What was wrong with its record.
        error: Box<WarcError>,
    },
    /// Reading failed.
    #[error("reading the WARC file: {0}")]
    Io(String),
}

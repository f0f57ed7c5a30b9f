//! The archive: every response as a WARC record, and the copies held of each page.

pub mod cdxj;
pub mod copies;
pub mod floor;
pub mod wacz;
pub mod warc;

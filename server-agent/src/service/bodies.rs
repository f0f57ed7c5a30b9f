//! A published file's bytes at one digest, for the answers that carry content (`delta/`,
//! batches): the version the store keeps (text), else the file itself, opened so that a link
//! swapped in cannot lead outside the docroot, and only if it still has that digest.

use super::reader::Reader;
use std::io::Read;
use std::path::Path;
use webcoop_protocol::validator::Sha256Digest;

/// The bytes of `rel` whose digest is `sha`, if they are still to be had (at most `max` bytes);
/// an error names a file that is no longer public.
pub(crate) fn published(
    reader: &Reader,
    root: &Path,
    rel: &str,
    sha: &Sha256Digest,
    max: u64,
) -> Result<Option<Vec<u8>>, String> {
    if let Some(kept) = reader
        .blocking(|st| st.version(rel, sha))
        .map_err(|e| e.to_string())?
    {
        return Ok(Some(kept));
    }
    let (file, meta) = match crate::scan::open_confined(root, rel) {
        Ok(f) => f,
        Err(crate::scan::ReadError::NotPublic(why)) => return Err(why),
        Err(_) => return Ok(None),
    };
    if meta.len() > max {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    // Changed since the state was written: the next change entry will say so.
    Ok((bytes.len() as u64 <= max && Sha256Digest::of(&bytes) == *sha).then_some(bytes))
}

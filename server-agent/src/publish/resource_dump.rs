//! The ResourceSync Resource Dump (`--resource-dump`), built beside each snapshot from the same
//! files: one ZIP package (`resourcedump-SEQUENCE.zip` in the ResourceSync directory) holding
//! `manifest.xml`, a Resource Dump Manifest naming each resource's path in the package, and
//! the files under `resources/`; then `resourcedump.xml` naming the package with its length and
//! SHA-256. The package is written atomically, and the previous one kept until the next, as
//! snapshots are.

use super::atomic::{AtomicFile, write_atomic};
use super::resourcesync::directory;
use chrono::{DateTime, Utc};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use url::Url;
use webcoop_protocol::resourcesync::{
    self as rs, CAPABILITY_LIST, Capability, DIRECTORY, RESOURCE_DUMP, Resource,
};
use webcoop_protocol::validator::Sha256Digest;

/// The package of the dump at `sequence`.
pub(crate) fn package_name(sequence: u64) -> String {
    format!("resourcedump-{sequence:012}.zip")
}

/// The sequence number a package's name carries.
fn sequence_of(name: &str) -> Option<u64> {
    name.strip_prefix("resourcedump-")?
        .strip_suffix(".zip")?
        .parse()
        .ok()
}

fn zip_err(e: zip::result::ZipError) -> io::Error {
    io::Error::other(e.to_string())
}

/// A dump being written.
pub(crate) struct DumpWriter {
    zip: zip::ZipWriter<AtomicFile>,
    dir: PathBuf,
    sequence: u64,
    listed: Vec<(Resource, String)>,
}

impl DumpWriter {
    /// Starts the package of the dump at `sequence` in `out`'s ResourceSync directory.
    pub(crate) fn create(out: &Path, sequence: u64) -> io::Result<DumpWriter> {
        let dir = directory(out);
        let file = AtomicFile::create(&dir.join(package_name(sequence)))?;
        Ok(DumpWriter {
            zip: zip::ZipWriter::new(file),
            dir,
            sequence,
            listed: Vec::new(),
        })
    }

    /// Adds one resource, its content `body`, at `resources/REL`.
    pub(crate) fn add(&mut self, rel: &str, resource: Resource, body: &[u8]) -> io::Result<()> {
        // A directory's URL (a generated site's page) is a file in the package, and a query
        // is part of its name.
        let mut name = rel.replace(crate::urls::QUERY_MARK, "%3F");
        if name.is_empty() || name.ends_with('/') {
            name.push_str("index.html");
        }
        let path = format!("resources/{name}");
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .large_file(body.len() as u64 >= u32::MAX as u64);
        self.zip.start_file(&path, options).map_err(zip_err)?;
        self.zip.write_all(body)?;
        self.listed.push((resource, format!("/{path}")));
        Ok(())
    }

    /// Writes the manifest, completes the package and publishes `resourcedump.xml` naming it;
    /// returns the package's size.
    pub(crate) fn finish(mut self, base: &Url, at: DateTime<Utc>) -> io::Result<u64> {
        let join = |p: &str| base.join(p).map_err(|e| io::Error::other(e.to_string()));
        let dump_url = join(&format!("{DIRECTORY}{RESOURCE_DUMP}"))?;
        let manifest = rs::resource_list(
            Capability::ResourceDumpManifest,
            dump_url.as_str(),
            at,
            self.listed.iter().map(|(r, p)| (r, Some(p.as_str()))),
        );
        self.zip
            .start_file("manifest.xml", zip::write::SimpleFileOptions::default())
            .map_err(zip_err)?;
        self.zip.write_all(manifest.as_bytes())?;
        self.zip.finish().map_err(zip_err)?.commit()?;
        let package = self.dir.join(package_name(self.sequence));
        let (sha, length) = digest_of(&package)?;
        let package_url = join(&format!("{DIRECTORY}{}", package_name(self.sequence)))?;
        let capabilities = join(&format!("{DIRECTORY}{CAPABILITY_LIST}"))?;
        write_atomic(
            &self.dir.join(RESOURCE_DUMP),
            rs::resource_dump(
                capabilities.as_str(),
                at,
                package_url.as_str(),
                &sha,
                length,
            )
            .as_bytes(),
        )?;
        remove_older(&self.dir, self.sequence);
        Ok(length)
    }
}

/// SHA-256 and length of a file, read in pieces.
fn digest_of(path: &Path) -> io::Result<(Sha256Digest, u64)> {
    let mut file = std::fs::File::open(path)?;
    let mut stream = webcoop_protocol::validator::Sha256Stream::default();
    let mut buf = vec![0u8; 1 << 20];
    let mut length = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        stream.update(&buf[..n]);
        length += n as u64;
    }
    Ok((stream.finish(), length))
}

/// Removes every package from `out`'s ResourceSync directory (what they hold was withdrawn);
/// returns how many went.
pub(crate) fn remove_all(out: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(directory(out)) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().and_then(sequence_of).is_some())
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// Removes the packages before the one preceding `newest` (a download under way finishes).
fn remove_older(dir: &Path, newest: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut older: Vec<u64> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(sequence_of))
        .filter(|s| *s < newest)
        .collect();
    older.sort_unstable();
    older.pop();
    for seq in older {
        let _ = std::fs::remove_file(dir.join(package_name(seq)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_carry_their_sequence() {
        assert_eq!(package_name(42), "resourcedump-000000000042.zip");
        assert_eq!(sequence_of(&package_name(42)), Some(42));
        assert_eq!(sequence_of("resourcedump-x.zip"), None);
        assert_eq!(sequence_of("snapshot-000000000042.warc.zst"), None);
    }
}

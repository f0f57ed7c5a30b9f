//! What a minor release costs to re-fetch, by delta encoding, on a real documentation tree.
//!
//! Usage: cargo run --release -p webcoop-protocol --example delta_savings -- DIR OLD NEW
//! e.g.   ... -- /usr/share/doc/python3.11/html 3.11.2 3.11.3
//!
//! Every `.html` file under DIR containing OLD is "upgraded" by replacing OLD with NEW, as a
//! release does; the tool prints the bytes a client holding the old pages must download:
//! a gzip refetch, gzip'd unified diffs, and dcz deltas at several zstd levels, with encode time.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use webcoop_protocol::compression::{gzip, zstd_compress};
use webcoop_protocol::delta::{dcz, unified};

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            html_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, old_s, new_s] = &args[..] else {
        return Err("usage: delta_savings DIR OLD NEW".into());
    };
    let mut files = Vec::new();
    html_files(Path::new(dir), &mut files)?;
    files.sort();
    let mut pages = Vec::new();
    for f in &files {
        let old = std::fs::read(f)?;
        let text = String::from_utf8_lossy(&old);
        if text.contains(old_s.as_str()) {
            let new = text.replace(old_s.as_str(), new_s).into_bytes();
            pages.push((old, new));
        }
    }
    let raw: usize = pages.iter().map(|(_, n)| n.len()).sum();
    println!(
        "{} of {} pages change; {:.2} MB of new HTML",
        pages.len(),
        files.len(),
        raw as f64 / 1e6
    );
    let gz: usize = pages.iter().map(|(_, n)| gzip(n, 6).len()).sum();
    let zst: usize = pages.iter().map(|(_, n)| zstd_compress(n, 19).len()).sum();
    let diffs: usize = pages
        .iter()
        .map(|(o, n)| {
            gzip(
                unified::diff(o, n, "a", "b")
                    .map(String::into_bytes)
                    .unwrap_or_default()
                    .as_slice(),
                6,
            )
            .len()
        })
        .sum();
    println!("| method | bytes | vs gzip refetch | encode time |");
    println!("|---|---:|---:|---:|");
    println!("| gzip refetch (level 6) | {gz} | 1.0x | |");
    println!(
        "| zstd refetch (level 19) | {zst} | {:.1}x | |",
        gz as f64 / zst as f64
    );
    println!(
        "| gzip'd unified diffs | {diffs} | {:.1}x | |",
        gz as f64 / diffs as f64
    );
    for level in [1, 3, 6, 9, 19] {
        let start = Instant::now();
        let mut total = 0;
        for (o, n) in &pages {
            total += dcz::encode(o, n, level)?.len();
        }
        let took: Duration = start.elapsed();
        println!(
            "| dcz level {level} | {total} | {:.0}x | {:.0} ms ({:.2} ms/page) |",
            gz as f64 / total as f64,
            took.as_secs_f64() * 1e3,
            took.as_secs_f64() * 1e3 / pages.len() as f64
        );
    }
    Ok(())
}

//! The bench's site: a docroot of generated pages of realistic size and link structure, and
//! the edits of the change schedule applied to it as files, each written whole (temporary
//! file and rename) so no server or watcher ever sees half a page.

use super::changes::{Edit, EditKind};
use rand::{RngExt, SeedableRng};
use std::path::{Path, PathBuf};

/// Words the pages are written in.
const WORDS: &[&str] = &[
    "crawler",
    "freshness",
    "archive",
    "protocol",
    "server",
    "change",
    "metadata",
    "sitemap",
    "delta",
    "hub",
    "notify",
    "poll",
    "bandwidth",
    "request",
    "version",
    "page",
    "index",
    "robots",
    "feed",
    "subscribe",
    "cooperation",
    "latency",
    "schedule",
    "importance",
];

/// Sentences per paragraph and words per sentence, fixed so edits stay local.
const SENTENCE_WORDS: usize = 12;

/// A generated site in a docroot.
#[derive(Debug)]
pub struct GeneratedSite {
    /// The docroot.
    pub root: PathBuf,
    /// Paths of the pages, from `/`.
    pub paths: Vec<String>,
    rng: rand::rngs::StdRng,
    edits: u64,
}

impl GeneratedSite {
    /// Writes `pages` pages into `root` (created if missing): `/index.html` links to the
    /// first pages, every page to a few others with a skew towards the first (as links
    /// concentrate on popular pages); sizes are log-normal around 20 KB.
    pub fn generate(root: &Path, pages: usize, seed: u64) -> std::io::Result<GeneratedSite> {
        std::fs::create_dir_all(root.join("p"))?;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let paths: Vec<String> = (0..pages).map(|i| format!("/p/{i}.html")).collect();
        for (i, path) in paths.iter().enumerate() {
            // The next page (so every page is reachable from the first) and a few others.
            let links: Vec<usize> = std::iter::once(i + 1)
                .chain((0..5).map(|_| {
                    let u: f64 = rng.random();
                    ((u * u * u) * pages as f64) as usize
                }))
                .filter(|j| *j != i && *j < pages)
                .collect();
            // Log-normal: median 20 KB, a long tail of big pages.
            let normal = {
                let (a, b): (f64, f64) = (rng.random(), rng.random());
                (-2.0 * (1.0 - a).ln()).sqrt() * (std::f64::consts::TAU * b).cos()
            };
            let bytes = (20_000.0 * (0.6 * normal).exp()).clamp(2_000.0, 200_000.0) as usize;
            let body = page(i, &links, bytes, &mut rng);
            write_whole(&root.join(&path[1..]), body.as_bytes())?;
        }
        let mut index =
            String::from("<!DOCTYPE html>\n<html><head><title>bench site</title></head><body>\n");
        for path in paths.iter().take(50) {
            index.push_str(&format!("<a href=\"{path}\">{path}</a>\n"));
        }
        index.push_str("</body></html>\n");
        write_whole(&root.join("index.html"), index.as_bytes())?;
        Ok(GeneratedSite {
            root: root.to_path_buf(),
            paths,
            rng,
            edits: 0,
        })
    }

    /// A docroot as it is (a real site): `paths` are its pages; no edit is generated for it.
    pub fn given(root: &Path, paths: Vec<String>) -> GeneratedSite {
        GeneratedSite {
            root: root.to_path_buf(),
            paths,
            rng: rand::rngs::StdRng::seed_from_u64(0),
            edits: 0,
        }
    }

    /// Applies one edit to the docroot.
    pub fn apply(&mut self, edit: &Edit) -> std::io::Result<()> {
        let file = self.root.join(edit.path.trim_start_matches('/'));
        self.edits += 1;
        match edit.kind {
            EditKind::Delete => match std::fs::remove_file(&file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            EditKind::Create => {
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let body = page(self.edits as usize, &[0], 8_000, &mut self.rng);
                write_whole(&file, body.as_bytes())
            }
            EditKind::Edit | EditKind::Rewrite => {
                let old = std::fs::read_to_string(&file)?;
                let share = if edit.kind == EditKind::Edit {
                    0.0
                } else {
                    1.0 / 3.0
                };
                let new = edited(&old, share, self.edits, &mut self.rng);
                write_whole(&file, new.as_bytes())
            }
        }
    }
}

fn sentence(rng: &mut rand::rngs::StdRng) -> String {
    let words: Vec<&str> = (0..SENTENCE_WORDS)
        .map(|_| WORDS[rng.random_range(0..WORDS.len())])
        .collect();
    format!("{}.", words.join(" "))
}

fn page(i: usize, links: &[usize], bytes: usize, rng: &mut rand::rngs::StdRng) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><title>page {i}</title></head><body>\n<h1>page {i}</h1>\n<nav><a href=\"/index.html\">home</a>"
    );
    for l in links {
        s.push_str(&format!(" <a href=\"/p/{l}.html\">page {l}</a>"));
    }
    s.push_str("</nav>\n");
    while s.len() < bytes {
        s.push_str("<p>");
        for _ in 0..4 {
            s.push_str(&sentence(rng));
            s.push(' ');
        }
        s.push_str("</p>\n");
    }
    s.push_str("</body></html>\n");
    s
}

/// The page with one sentence changed (`share` 0), or about `share` of its paragraphs
/// rewritten; a counter in the text makes every edit a real change.
fn edited(old: &str, share: f64, n: u64, rng: &mut rand::rngs::StdRng) -> String {
    let mut lines: Vec<String> = old.lines().map(str::to_string).collect();
    let paragraphs: Vec<usize> = (0..lines.len())
        .filter(|i| lines[*i].starts_with("<p>"))
        .collect();
    if paragraphs.is_empty() {
        lines.push(format!("<p>edit {n}: {}</p>", sentence(rng)));
    } else if share <= 0.0 {
        let at = paragraphs[rng.random_range(0..paragraphs.len())];
        lines[at] = format!("<p>edit {n}: {} {}</p>", sentence(rng), &lines[at][3..]);
        // Keep the page's size: drop the paragraph's last sentence.
        if let Some(cut) = lines[at].trim_end_matches("</p>").trim_end().rfind(". ") {
            lines[at] = format!("{}.</p>", &lines[at][..cut]);
        }
    } else {
        let count = ((paragraphs.len() as f64 * share).ceil() as usize).max(1);
        let start = rng.random_range(0..paragraphs.len());
        for k in 0..count {
            let at = paragraphs[(start + k) % paragraphs.len()];
            let text: Vec<String> = (0..4).map(|_| sentence(rng)).collect();
            lines[at] = format!("<p>rewrite {n}: {}</p>", text.join(" "));
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Writes a file whole: readers see the old content or the new, never a part.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.bench-tmp"));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_site_is_the_same_for_a_seed_and_linked() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let site = GeneratedSite::generate(a.path(), 100, 3).unwrap();
        GeneratedSite::generate(b.path(), 100, 3).unwrap();
        let read = |root: &Path, p: &str| std::fs::read(root.join(&p[1..])).unwrap();
        let mut sizes = Vec::new();
        for p in &site.paths {
            assert_eq!(read(a.path(), p), read(b.path(), p), "{p}");
            sizes.push(read(a.path(), p).len());
        }
        sizes.sort_unstable();
        let median = sizes[sizes.len() / 2];
        assert!((12_000..32_000).contains(&median), "median {median}");
        let index = String::from_utf8(read(a.path(), "/index.html")).unwrap();
        assert!(index.contains("href=\"/p/0.html\""));
        let p0 = String::from_utf8(read(a.path(), "/p/0.html")).unwrap();
        assert!(p0.contains("href=\"/index.html\""));
        for i in 0..99 {
            let page = String::from_utf8(read(a.path(), &format!("/p/{i}.html"))).unwrap();
            assert!(page.contains(&format!("href=\"/p/{}.html\"", i + 1)), "{i}");
        }
    }

    #[test]
    fn edits_change_pages_by_as_much_as_they_say() {
        let dir = tempfile::tempdir().unwrap();
        let mut site = GeneratedSite::generate(dir.path(), 10, 5).unwrap();
        let file = dir.path().join("p/3.html");
        let before = std::fs::read_to_string(&file).unwrap();
        let edit = |kind, path: &str| Edit {
            at: 0.0,
            kind,
            path: path.into(),
        };
        site.apply(&edit(EditKind::Edit, "/p/3.html")).unwrap();
        let after = std::fs::read_to_string(&file).unwrap();
        let changed = |a: &str, b: &str| a.lines().zip(b.lines()).filter(|(x, y)| x != y).count();
        assert_eq!(changed(&before, &after), 1, "one paragraph");
        assert!(after.len().abs_diff(before.len()) < 200);
        site.apply(&edit(EditKind::Rewrite, "/p/3.html")).unwrap();
        let rewritten = std::fs::read_to_string(&file).unwrap();
        let paragraphs = before.lines().filter(|l| l.starts_with("<p>")).count();
        assert!(
            changed(&after, &rewritten) * 4 >= paragraphs,
            "about a third"
        );
        site.apply(&edit(EditKind::Create, "/new/a.html")).unwrap();
        assert!(dir.path().join("new/a.html").is_file());
        site.apply(&edit(EditKind::Delete, "/new/a.html")).unwrap();
        assert!(!dir.path().join("new/a.html").exists());
        site.apply(&edit(EditKind::Delete, "/new/a.html")).unwrap();
        assert!(site.apply(&edit(EditKind::Edit, "/missing.html")).is_err());
        let leftovers = std::fs::read_dir(dir.path().join("p"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with("bench-tmp"))
            .count();
        assert_eq!(leftovers, 0);
    }
}

//! Which published pages carry which: for every page kept, the site paths it links to and
//! its title, so that when a page changes or leaves, the pages that showed it (the home page,
//! archives, categories, authors, feeds) are checked again, and once they no longer show it,
//! their older versions (which did) are dropped.
//!
//! Links are read from `href="..."` (and `<link>` in feeds) with a bounded scan; titles from
//! `<title>` or the first `<h1>`. What this index cannot know (a post quoted without a link or
//! its title) is left to the pages' own schedule.

use regex::bytes::Regex;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;
use url::Url;

/// Links read from one page at most.
const MAX_LINKS: usize = 2_000;
/// Longest title kept.
const MAX_TITLE: usize = 200;
/// Shortest title searched for in other pages (a shorter one matches too much).
const MIN_TITLE: usize = 8;

static HREF: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bhref\s*=\s*["']([^"'<>\s]{1,2048})["']|<link>([^<]{1,2048})</link>"#).ok()
});
static TITLE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?is)<title[^>]*>\s*([^<]{1,1000}?)\s*</title>|<h1[^>]*>\s*([^<]{1,1000}?)\s*</h1>",
    )
    .ok()
});

/// The site paths `body` links to (relative to `base`), without fragments.
pub(crate) fn links_of(body: &[u8], page: &Url, base: &Url) -> HashSet<String> {
    let mut out = HashSet::new();
    let Some(re) = HREF.as_ref() else {
        return out;
    };
    for c in re.captures_iter(body).take(MAX_LINKS) {
        let Some(m) = c.get(1).or_else(|| c.get(2)) else {
            continue;
        };
        let raw = String::from_utf8_lossy(m.as_bytes()).replace("&amp;", "&");
        let Ok(mut url) = page.join(raw.trim()) else {
            continue;
        };
        url.set_fragment(None);
        if let Some(rel) = url.as_str().strip_prefix(base.as_str()) {
            out.insert(rel.to_string());
        }
    }
    out
}

/// The page's title, as its HTML gives it.
pub(crate) fn title_of(body: &[u8]) -> Option<String> {
    let c = TITLE.as_ref()?.captures(body)?;
    let m = c.get(1).or_else(|| c.get(2))?;
    let t = String::from_utf8_lossy(m.as_bytes());
    let t: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
    // A site's title tag often ends with the site's name: the page's own part is before it.
    let cut = [" – ", " - ", " | ", " &#8211; "]
        .iter()
        .filter_map(|sep| t.find(sep))
        .min()
        .unwrap_or(t.len());
    let own = t[..cut].trim().to_string();
    (!own.is_empty()).then(|| own.chars().take(MAX_TITLE).collect())
}

/// The index.
#[derive(Debug, Default)]
pub(crate) struct Quotes {
    /// For each page, the pages that link to it.
    linked_from: HashMap<String, HashSet<String>>,
    /// For each page, what it links to (to undo the above when it changes).
    links: HashMap<String, HashSet<String>>,
    /// Each page's title.
    titles: HashMap<String, String>,
}

impl Quotes {
    /// Records what page `path` (served as `body`) links to and its title.
    pub(crate) fn record(&mut self, path: &str, body: &[u8], page: &Url, base: &Url) {
        self.forget_links(path);
        let links = links_of(body, page, base);
        for l in &links {
            if l != path {
                self.linked_from
                    .entry(l.clone())
                    .or_default()
                    .insert(path.to_string());
            }
        }
        self.links.insert(path.to_string(), links);
        match title_of(body) {
            Some(t) => self.titles.insert(path.to_string(), t),
            None => self.titles.remove(path),
        };
    }

    fn forget_links(&mut self, path: &str) {
        for l in self.links.remove(path).unwrap_or_default() {
            if let Some(from) = self.linked_from.get_mut(&l) {
                from.remove(path);
                if from.is_empty() {
                    self.linked_from.remove(&l);
                }
            }
        }
    }

    /// Forgets page `path` (it left): what it linked to, not who linked to it.
    pub(crate) fn forget(&mut self, path: &str) {
        self.forget_links(path);
        self.titles.remove(path);
    }

    /// The pages that link to `path`.
    pub(crate) fn linking_to(&self, path: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .linked_from
            .get(path)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The pages `path` links to.
    pub(crate) fn links_from(&self, path: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .links
            .get(path)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The title of `path`, when one long enough to search for is known.
    pub(crate) fn searchable_title(&self, path: &str) -> Option<&str> {
        self.titles
            .get(path)
            .map(String::as_str)
            .filter(|t| t.len() >= MIN_TITLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_titles_are_read_and_undone() {
        let base = Url::parse("http://blog.test/").unwrap();
        let home = Url::parse("http://blog.test/").unwrap();
        let body = br#"<html><head><title>My Blog &#8211; just another site</title></head><body>
            <a href="/hello-world/#comments">Hello</a> <a href='http://blog.test/about/'>About</a>
            <a href="http://elsewhere.test/x">x</a> <a href="?p=12&amp;x=1">short</a>
            <h1>My Blog</h1></body></html>"#;
        let links = links_of(body, &home, &base);
        for l in ["hello-world/", "about/", "?p=12&x=1"] {
            assert!(links.contains(l), "{l}: {links:?}");
        }
        assert!(!links.iter().any(|l| l.contains("elsewhere")));
        assert_eq!(title_of(body).as_deref(), Some("My Blog"));
        let feed = b"<rss><channel><item><title>Hello</title><link>http://blog.test/hello-world/</link></item></channel></rss>";
        assert!(
            links_of(feed, &Url::parse("http://blog.test/feed/").unwrap(), &base)
                .contains("hello-world/")
        );

        let mut q = Quotes::default();
        q.record("", body, &home, &base);
        q.record("feed/", feed, &base.join("feed/").unwrap(), &base);
        assert_eq!(q.linking_to("hello-world/"), ["", "feed/"]);
        // The home page changes and no longer links it.
        q.record(
            "",
            b"<title>My Blog</title><a href=\"/about/\">About</a>",
            &home,
            &base,
        );
        assert_eq!(q.linking_to("hello-world/"), ["feed/"]);
        q.forget("feed/");
        assert!(q.linking_to("hello-world/").is_empty());
        assert_eq!(q.searchable_title(""), None, "too short to search for");
        q.record(
            "p/",
            b"<h1>A long enough title</h1>",
            &base.join("p/").unwrap(),
            &base,
        );
        assert_eq!(q.searchable_title("p/"), Some("A long enough title"));
    }
}

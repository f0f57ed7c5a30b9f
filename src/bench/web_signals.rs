//! A site without webcoop's agent that says when it changes the way the web already does, as a
//! CMS or a site generator would: a sitemap with `<lastmod>`, an RSS 2.0, Atom 1.0 or JSON
//! Feed 1.1 feed of its newest changes (named by `<link rel="alternate">` in its home page), an
//! Atom feed that names a WebSub hub on another origin and pings it at each edit, or each
//! edit's URL submitted by IndexNow under a key its key file proves. The documents are written
//! whole after each edit and dated on the run's simulated clock, as the pages are.

use super::site::write_whole;
use chrono::{DateTime, SecondsFormat, Utc};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Entries a feed lists: the newest changes (WordPress's default is 10; most generators 10-20).
pub const FEED_ENTRIES: usize = 20;

/// The key the site's IndexNow submissions carry (and its key file holds).
pub const INDEXNOW_KEY: &str = "5f0c8e2ab7d94c1e9a3b6d7e8f901234";

/// The way a site without the agent says when it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `/sitemap.xml` with each page's `<lastmod>`, named in robots.txt.
    Sitemap,
    /// `/feed.rss`, RSS 2.0.
    Rss,
    /// `/feed.atom`, Atom 1.0.
    Atom,
    /// `/feed.json`, JSON Feed 1.1.
    JsonFeed,
    /// `/feed.atom` naming a hub, which the site pings at each edit.
    Websub,
    /// Each edit's URL submitted to an IndexNow endpoint.
    Indexnow,
}

impl Signal {
    /// The feed's path and media type, for the feed signals.
    fn feed(self) -> Option<(&'static str, &'static str)> {
        match self {
            Signal::Rss => Some(("/feed.rss", "application/rss+xml")),
            Signal::Atom | Signal::Websub => Some(("/feed.atom", "application/atom+xml")),
            Signal::JsonFeed => Some(("/feed.json", "application/feed+json")),
            Signal::Sitemap | Signal::Indexnow => None,
        }
    }
}

/// Where a site's pings and submissions go.
#[derive(Debug, Clone, Default)]
pub struct Receivers {
    /// The hub's URL (`Signal::Websub`).
    pub hub: Option<String>,
    /// The IndexNow endpoint, `http://HOST:PORT/indexnow` (`Signal::Indexnow`).
    pub indexnow: Option<String>,
}

/// A site's signal documents, kept up to date by its edits.
pub struct SignalSite {
    signal: Signal,
    root: PathBuf,
    /// `http://127.0.0.1:PORT` (no slash at the end).
    origin: String,
    /// Each page's last change, as the CMS knows it.
    dates: HashMap<String, DateTime<Utc>>,
    receivers: Receivers,
    client: reqwest::Client,
}

impl SignalSite {
    /// Writes the site's robots.txt, its signal documents (dated from the pages' files) and the
    /// `<link>` naming its feed into its home page.
    pub fn start(
        signal: Signal,
        root: &Path,
        base: &str,
        paths: &[String],
        receivers: Receivers,
    ) -> std::io::Result<SignalSite> {
        let origin = base.trim_end_matches('/').to_string();
        let dates = paths
            .iter()
            .filter_map(|p| {
                let modified = std::fs::metadata(root.join(&p[1..]))
                    .and_then(|m| m.modified())
                    .ok()?;
                Some((p.clone(), DateTime::<Utc>::from(modified)))
            })
            .collect();
        let mut robots = String::from("User-agent: *\nDisallow:\n");
        if signal == Signal::Sitemap {
            robots.push_str(&format!("Sitemap: {origin}/sitemap.xml\n"));
        }
        write_whole(&root.join("robots.txt"), robots.as_bytes())?;
        if let Some((path, media_type)) = signal.feed() {
            let index = root.join("index.html");
            let html = std::fs::read_to_string(&index)?;
            let link = format!(
                "<link rel=\"alternate\" type=\"{media_type}\" href=\"{path}\" title=\"feed\">"
            );
            write_whole(
                &index,
                html.replacen("</head>", &(link + "</head>"), 1).as_bytes(),
            )?;
        }
        if signal == Signal::Indexnow {
            write_whole(
                &root.join(format!("{INDEXNOW_KEY}.txt")),
                INDEXNOW_KEY.as_bytes(),
            )?;
        }
        // The one TLS provider of the workspace; loopback needs none, but reqwest insists.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(std::io::Error::other)?;
        let site = SignalSite {
            signal,
            root: root.to_path_buf(),
            origin,
            dates,
            receivers,
            client,
        };
        let newest = site.dates.values().max().copied().unwrap_or_else(Utc::now);
        site.write(newest)?;
        Ok(site)
    }

    /// Records that `path` changed at `at` (or went, when `gone`), rewrites the documents and
    /// sends the pings and submissions; a receiver that fails is reported, the edit kept.
    pub async fn changed(
        &mut self,
        path: &str,
        at: DateTime<Utc>,
        gone: bool,
    ) -> Result<(), String> {
        if gone {
            self.dates.remove(path);
        } else {
            self.dates.insert(path.to_string(), at);
        }
        self.write(at)
            .map_err(|e| format!("{}: {e}", self.root.display()))?;
        match self.signal {
            Signal::Websub => self.ping_hub().await,
            Signal::Indexnow => self.submit(path).await,
            _ => Ok(()),
        }
    }

    /// The signal it sends.
    pub fn signal(&self) -> Signal {
        self.signal
    }

    /// Where its IndexNow submissions go from now on.
    pub fn set_indexnow(&mut self, endpoint: String) {
        self.receivers.indexnow = Some(endpoint);
    }

    /// The document's URL (the feed's or the sitemap's); none for IndexNow.
    pub fn document(&self) -> Option<String> {
        match self.signal {
            Signal::Sitemap => Some(format!("{}/sitemap.xml", self.origin)),
            s => s.feed().map(|(p, _)| format!("{}{p}", self.origin)),
        }
    }

    fn write(&self, at: DateTime<Utc>) -> std::io::Result<()> {
        let (path, body) = match self.signal {
            Signal::Sitemap => ("/sitemap.xml", self.sitemap()),
            Signal::Rss => ("/feed.rss", self.rss(at)),
            Signal::Atom | Signal::Websub => ("/feed.atom", self.atom(at)),
            Signal::JsonFeed => ("/feed.json", self.json_feed()),
            Signal::Indexnow => return Ok(()),
        };
        let file = self.root.join(&path[1..]);
        write_whole(&file, body.as_bytes())?;
        // Dated on the simulated clock, as the pages are, so its Last-Modified moves with it.
        std::fs::File::options()
            .write(true)
            .open(&file)?
            .set_modified(at.into())
    }

    /// The newest `FEED_ENTRIES` changes, newest first (ties by path, so a feed is stable).
    fn newest(&self) -> Vec<(&str, DateTime<Utc>)> {
        let mut all: Vec<(&str, DateTime<Utc>)> =
            self.dates.iter().map(|(p, d)| (p.as_str(), *d)).collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        all.truncate(FEED_ENTRIES);
        all
    }

    fn sitemap(&self) -> String {
        let mut paths: Vec<(&String, &DateTime<Utc>)> = self.dates.iter().collect();
        paths.sort();
        let mut s = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for (p, d) in paths {
            s.push_str(&format!(
                "<url><loc>{}{p}</loc><lastmod>{}</lastmod></url>\n",
                self.origin,
                d.to_rfc3339_opts(SecondsFormat::Secs, true)
            ));
        }
        s.push_str("</urlset>\n");
        s
    }

    fn rss(&self, at: DateTime<Utc>) -> String {
        let o = &self.origin;
        let mut s = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\"><channel><title>bench site</title><link>{o}/</link><description>the bench's site</description><lastBuildDate>{}</lastBuildDate>\n",
            at.to_rfc2822()
        );
        for (p, d) in self.newest() {
            s.push_str(&format!(
                "<item><title>{p}</title><link>{o}{p}</link><guid isPermaLink=\"true\">{o}{p}</guid><pubDate>{}</pubDate></item>\n",
                d.to_rfc2822()
            ));
        }
        s.push_str("</channel></rss>\n");
        s
    }

    fn atom(&self, at: DateTime<Utc>) -> String {
        let o = &self.origin;
        let stamp = |d: DateTime<Utc>| d.to_rfc3339_opts(SecondsFormat::Millis, true);
        let hub = self
            .receivers
            .hub
            .as_ref()
            .filter(|_| self.signal == Signal::Websub)
            .map_or(String::new(), |h| {
                format!("<link rel=\"hub\" href=\"{h}\"/>")
            });
        let mut s = format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\"><title>bench site</title><id>{o}/feed.atom</id><updated>{}</updated><link rel=\"self\" href=\"{o}/feed.atom\"/>{hub}<author><name>bench</name></author>\n",
            stamp(at)
        );
        for (p, d) in self.newest() {
            s.push_str(&format!(
                "<entry><title>{p}</title><id>{o}{p}</id><link href=\"{o}{p}\"/><updated>{}</updated></entry>\n",
                stamp(d)
            ));
        }
        s.push_str("</feed>\n");
        s
    }

    fn json_feed(&self) -> String {
        let o = &self.origin;
        let items: Vec<serde_json::Value> = self
            .newest()
            .into_iter()
            .map(|(p, d)| {
                serde_json::json!({
                    "id": format!("{o}{p}"),
                    "url": format!("{o}{p}"),
                    "title": p,
                    "content_text": p,
                    "date_modified": d.to_rfc3339_opts(SecondsFormat::Millis, true),
                })
            })
            .collect();
        serde_json::json!({
            "version": "https://jsonfeed.org/version/1.1",
            "title": "bench site",
            "home_page_url": format!("{o}/"),
            "feed_url": format!("{o}/feed.json"),
            "items": items,
        })
        .to_string()
    }

    /// The publisher's ping (`hub.mode=publish`), as WordPress's and most CMSes' WebSub
    /// plugins send it.
    async fn ping_hub(&self) -> Result<(), String> {
        let (Some(hub), Some(topic)) = (&self.receivers.hub, self.document()) else {
            return Ok(());
        };
        let form = format!("hub.mode=publish&hub.url={}", form_encode(&topic));
        let r = self
            .client
            .post(hub)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .map_err(|e| format!("the hub at {hub}: {e}"))?;
        match r.status().as_u16() {
            200..=299 => Ok(()),
            s => Err(format!("the hub at {hub} answered {s} to a publish ping")),
        }
    }

    /// An IndexNow submission of one URL, as the CMS plugins send it (JSON, the key at the
    /// site's root).
    async fn submit(&self, path: &str) -> Result<(), String> {
        let Some(endpoint) = &self.receivers.indexnow else {
            return Ok(());
        };
        let host = url_host(&self.origin);
        let body = serde_json::json!({
            "host": host,
            "key": INDEXNOW_KEY,
            "urlList": [format!("{}{path}", self.origin)],
        });
        let r = self
            .client
            .post(endpoint)
            .header("content-type", "application/json; charset=utf-8")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| format!("IndexNow at {endpoint}: {e}"))?;
        match r.status().as_u16() {
            200 | 202 => Ok(()),
            s => Err(format!("IndexNow at {endpoint} answered {s}")),
        }
    }
}

fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The host of `http://HOST:PORT`.
fn url_host(origin: &str) -> String {
    let rest = origin.split_once("://").map_or(origin, |(_, r)| r);
    rest.rsplit_once(':').map_or(rest, |(h, _)| h).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(signal: Signal) -> (tempfile::TempDir, SignalSite) {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<String> = (0..30).map(|i| format!("/p/{i}.html")).collect();
        std::fs::create_dir_all(dir.path().join("p")).unwrap();
        for p in &paths {
            std::fs::write(dir.path().join(&p[1..]), "<html></html>").unwrap();
        }
        std::fs::write(
            dir.path().join("index.html"),
            "<html><head><title>t</title></head><body></body></html>",
        )
        .unwrap();
        let s = SignalSite::start(
            signal,
            dir.path(),
            "http://127.0.0.1:8080/",
            &paths,
            Receivers::default(),
        )
        .unwrap();
        (dir, s)
    }

    #[test]
    fn a_feed_lists_the_newest_changes_first_and_the_home_page_names_it() {
        let (dir, mut s) = site(Signal::Atom);
        let later = Utc::now() + chrono::Duration::hours(1);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(s.changed("/p/7.html", later, false)).unwrap();
        let feed = std::fs::read_to_string(dir.path().join("feed.atom")).unwrap();
        let first = feed.find("<entry>").unwrap();
        assert!(
            feed[first..].starts_with("<entry><title>/p/7.html</title>"),
            "{feed}"
        );
        assert_eq!(feed.matches("<entry>").count(), FEED_ENTRIES);
        let index = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
        assert!(index.contains("type=\"application/atom+xml\" href=\"/feed.atom\""));
        rt.block_on(s.changed("/p/7.html", later, true)).unwrap();
        let feed = std::fs::read_to_string(dir.path().join("feed.atom")).unwrap();
        assert!(!feed.contains("/p/7.html"), "a page gone leaves the feed");
    }

    #[test]
    fn the_documents_parse_as_the_crawler_reads_them() {
        for signal in [Signal::Rss, Signal::Atom, Signal::JsonFeed, Signal::Sitemap] {
            let (dir, s) = site(signal);
            let url = s.document().unwrap();
            let file = dir.path().join(url.rsplit('/').next().unwrap());
            let body = std::fs::read(&file).unwrap();
            if signal == Signal::Sitemap {
                let text = String::from_utf8(body).unwrap();
                assert_eq!(text.matches("<lastmod>").count(), 30);
                let robots = std::fs::read_to_string(dir.path().join("robots.txt")).unwrap();
                assert!(robots.contains("Sitemap: http://127.0.0.1:8080/sitemap.xml"));
                continue;
            }
            let base = url::Url::parse(&url).unwrap();
            let feed = webcoop_protocol::web_feed::parse(&body, &base)
                .unwrap_or_else(|e| panic!("{signal:?}: {e}"));
            assert_eq!(feed.entries.len(), FEED_ENTRIES, "{signal:?}");
        }
    }

    #[test]
    fn an_origin_names_its_host() {
        assert_eq!(url_host("http://127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(form_encode("http://a/b?c"), "http%3A%2F%2Fa%2Fb%3Fc");
    }
}

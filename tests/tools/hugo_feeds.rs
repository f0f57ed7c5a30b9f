//! A site built by Debian's Hugo and served by nginx, with no webcoop agent: its pages name its
//! RSS feed (`index.xml`, Hugo's own template: `pubDate` is a post's date, never its edits) as
//! Hugo's documentation tells themes to, and a crawler kept fresh reads it as a listing. A new
//! post is found, an edited post (its summary changed, its date not) is fetched
//! again, and a post nobody edits is not polled. Asserted from nginx's access log.

use super::crawl_coop::{coop_of, crawl_seeds, wait_for};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use webcoop::servers::Nginx;
use webcoop_testkit::tool;

const POSTS: usize = 12;
const AGENT: &str = "hugo-crawler";

/// The `<link>` Hugo's documentation gives themes for a page's RSS output format.
const HEAD: &str = r#"<head><title>{{ .Title }}</title>{{ with .OutputFormats.Get "rss" -}}{{ printf `<link rel=%q type=%q href=%q title=%q>` .Rel .MediaType.Type .Permalink site.Title | safeHTML }}{{ end -}}</head>"#;

struct HugoSite {
    dir: tempfile::TempDir,
    hugo: PathBuf,
    nginx: Nginx,
    log: PathBuf,
}

impl HugoSite {
    fn start() -> Option<HugoSite> {
        let hugo = tool("hugo")?;
        let nginx_bin = tool("nginx")?;
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        let write = |rel: &str, text: &str| {
            let p = src.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "config.toml",
            "baseURL = 'http://hugo.test/'\ntitle = 'A Hugo blog'\nlanguageCode = 'en'\n[services.rss]\nlimit = 8\n",
        );
        let page = |body: &str| format!("<!DOCTYPE html><html>{HEAD}<body>{body}</body></html>");
        write(
            "layouts/index.html",
            &page(
                r#"<h1>{{ .Title }}</h1>{{ range first 5 (where .Site.RegularPages "Type" "posts") }}<a href="{{ .RelPermalink }}">{{ .Title }}</a> {{ end }}"#,
            ),
        );
        write(
            "layouts/_default/list.html",
            &page(
                r#"<h1>{{ .Title }}</h1>{{ range .Pages }}<a href="{{ .RelPermalink }}">{{ .Title }}</a> {{ end }}"#,
            ),
        );
        write(
            "layouts/_default/single.html",
            &page(r#"<h1>{{ .Title }}</h1><a href="/">home</a>{{ .Content }}"#),
        );
        for i in 0..POSTS {
            write_post(&src, i, &format!("Post {i} says hello."));
        }
        let public = dir.path().join("public");
        std::fs::create_dir_all(&public).unwrap();
        let site = HugoSite {
            nginx: Nginx::start_custom(
                &nginx_bin,
                &public,
                &|port| {
                    format!(
                        "include /etc/nginx/mime.types;\nserver {{\n  listen 127.0.0.1:{port};\n  root {};\n  access_log {}/access.log combined;\n  location / {{ }}\n}}\n",
                        public.display(),
                        dir.path().display()
                    )
                },
                &|port| ([127, 0, 0, 1], port).into(),
            ),
            log: dir.path().join("access.log"),
            hugo,
            dir,
        };
        site.build();
        Some(site)
    }

    /// `hugo` into the docroot, as a site's deploy does.
    fn build(&self) {
        let out = Command::new(&self.hugo)
            .arg("--source")
            .arg(self.dir.path().join("src"))
            .arg("--destination")
            .arg(self.dir.path().join("public"))
            .arg("--quiet")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "hugo: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn src(&self) -> PathBuf {
        self.dir.path().join("src")
    }

    /// The crawler's GETs of `path`.
    fn gets(&self, path: &str) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(AGENT) && l.contains(&format!("\"GET {path} ")))
            .count()
    }

    /// The crawler's requests, and those for pages (not its feeds' and sitemap's `.xml`).
    fn requests(&self) -> (usize, usize) {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = log.lines().filter(|l| l.contains(AGENT)).collect();
        let pages = all.iter().filter(|l| !l.contains(".xml ")).count();
        (all.len(), pages)
    }
}

/// Post `i`, dated `i` days after the first, its summary `text`.
fn write_post(src: &Path, i: usize, text: &str) {
    let p = src.join(format!("content/posts/post-{i}.md"));
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(
        p,
        format!(
            "---\ntitle: \"Post {i}\"\ndate: 2026-11-{:02}T10:00:00Z\n---\n\n{text}\n\nMore words of post {i}.\n",
            i + 1
        ),
    )
    .unwrap();
}

#[test]
fn a_hugo_site_without_the_agent_is_kept_fresh_through_its_own_feed() {
    let Some(site) = HugoSite::start() else {
        return;
    };
    let base = "http://hugo.test/".to_string();
    let out = site.dir.path().join("crawl");
    let _crawl = crawl_seeds(
        std::slice::from_ref(&base),
        &out,
        "push",
        600,
        3600,
        &[
            "--resolve".into(),
            format!("hugo.test={}", site.nginx.addr),
            "--user-agent".into(),
            AGENT.into(),
        ],
    );
    // Hugo writes a sitemap too (its dates are the posts' dates, not their edits): the site
    // offers both, and status names the higher.
    // Read as a feed: the crawler says so once the answer is taken in (the request alone,
    // in nginx's log, comes first).
    wait_for("the feed read as one", Duration::from_secs(60), || {
        std::fs::read_to_string(out.with_extension("err"))
            .unwrap_or_default()
            .contains("feed http://hugo.test/index.xml (RSS 2.0) lists")
            && ["feed", "sitemap"].contains(&coop_of(&out, &base)["level"].as_str().unwrap_or(""))
    });
    // Hugo names a feed on every list page (the home page's, /posts/, /tags/, /categories/),
    // read at the test's pace; the first pass is over when no page is asked for a while.
    let mut quiet = 0;
    wait_for("the first pass", Duration::from_secs(60), || {
        let before = site.requests().1;
        std::thread::sleep(Duration::from_secs(1));
        quiet = if site.requests().1 == before {
            quiet + 1
        } else {
            0
        };
        quiet >= 2 && site.gets("/posts/post-11/") >= 1
    });
    // A new post, linked from the home page (which the crawler reads again in an hour), listed
    // by the feeds and the sitemap.
    write_post(&site.src(), 12, "A new post.");
    site.build();
    wait_for("the new post fetched", Duration::from_secs(60), || {
        site.gets("/posts/post-12/") >= 1
    });
    // Post 11's summary edited, its date not (the sitemap's lastmod stays): only the feed's
    // entry text tells, and it is fetched again.
    std::thread::sleep(Duration::from_secs(2));
    write_post(
        &site.src(),
        11,
        "Post 11, edited after the crawler read it.",
    );
    site.build();
    wait_for(
        "the edited post fetched again",
        Duration::from_secs(60),
        || site.gets("/posts/post-11/") >= 2,
    );
    // A post the feed lists and nobody edited: left to the feed.
    let untouched = site.gets("/posts/post-10/");
    assert!(
        untouched <= 2,
        "a post the feed lists was polled: {untouched} GETs"
    );
    eprintln!(
        "hugo without the agent: feed read {} times, {} requests in all, {} for pages",
        site.gets("/index.xml"),
        site.requests().0,
        site.requests().1
    );
}

//! The crawler's links held to a browser's reading, not to itself: html5lib (the HTML
//! standard's encoding sniffing, tokenizer and tree) and ada (a WHATWG URL parser), through
//! tests/reference/links_check.py, over a site with one page per hard case
//! (tests/reference/links-site: encodings by header, meta, byte-order mark and a late meta;
//! meta refresh forms; `<base>` with empty and fragment links; SVG links; character
//! references and whitespace; templates; foreign content) and over every page of the Python
//! documentation; then a crawl of that site must ask for exactly what the reference reads.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use url::Url;
use webcoop_crawler::parsers::{extract_links_served, url_norm};
use webcoop_testkit::{reference_python, run_reference, workspace_bin, workspace_root};

fn site() -> PathBuf {
    workspace_root().join("tests/reference/links-site")
}

/// The `Content-Type` the site's server sends for each page that is not plain `text/html`.
fn content_types() -> HashMap<String, String> {
    let text = std::fs::read_to_string(site().join("content-types")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, ct)| (p.to_string(), ct.to_string()))
        .collect()
}

/// One page as the reference reads it.
#[derive(Debug, serde::Deserialize)]
struct Read {
    links: Vec<String>,
    refresh: Option<String>,
    encoding: String,
}

/// The reference's reading of `pages` (URL, file, Content-Type).
fn reference(python: &Path, pages: &[(Url, PathBuf, Option<String>)]) -> Vec<Read> {
    let list: Vec<serde_json::Value> = pages
        .iter()
        .map(|(url, path, ct)| {
            serde_json::json!({"url": url.as_str(), "path": path, "content_type": ct})
        })
        .collect();
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), serde_json::to_vec(&list).unwrap()).unwrap();
    let out = run_reference(python, "links_check.py", &[input.path().as_os_str()]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// A reference URL as the crawler keeps URLs (normalised, http and https only), each once.
fn kept(urls: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    urls.iter()
        .filter_map(|u| {
            let mut url = Url::parse(u).ok()?;
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                return None;
            }
            url_norm::normalize(&mut url);
            Some(url.to_string())
        })
        .filter(|u| seen.insert(u.clone()))
        .collect()
}

/// Where the crawler and the reference disagree on a page, in words.
fn disagreement(url: &Url, html: &[u8], ct: Option<&str>, read: &Read) -> Option<String> {
    let ours = extract_links_served(url, html, ct);
    let our_links: Vec<String> = ours.links.iter().map(Url::to_string).collect();
    let their_links = kept(&read.links);
    let our_refresh = ours.refresh().map(Url::to_string);
    let mut here = url.clone();
    url_norm::normalize(&mut here);
    let their_refresh = read
        .refresh
        .as_ref()
        .and_then(|r| kept(std::slice::from_ref(r)).pop())
        .filter(|r| *r != here.as_str());
    let our_encoding = ours.encoding_name().unwrap_or("?");
    let mut what = Vec::new();
    if our_links != their_links {
        what.push(format!("links {our_links:?} against {their_links:?}"));
    }
    if our_refresh != their_refresh {
        what.push(format!("refresh {our_refresh:?} against {their_refresh:?}"));
    }
    if !our_encoding.eq_ignore_ascii_case(&read.encoding) {
        what.push(format!("encoding {our_encoding} against {}", read.encoding));
    }
    (!what.is_empty()).then(|| format!("{url}: {}", what.join("; ")))
}

/// Every page of `pages` read both ways, with no disagreement.
fn assert_read_alike(python: &Path, pages: &[(Url, PathBuf, Option<String>)]) {
    let reads = reference(python, pages);
    let differ: Vec<String> = pages
        .iter()
        .zip(&reads)
        .filter_map(|((url, path, ct), read)| {
            disagreement(url, &std::fs::read(path).unwrap(), ct.as_deref(), read)
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} pages differ:\n{}",
        differ.len(),
        pages.len(),
        differ
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The site's pages as served from `origin`.
fn site_pages(origin: &str) -> Vec<(Url, PathBuf, Option<String>)> {
    let types = content_types();
    let mut pages: Vec<_> = walk(&site())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .map(|path| {
            let rel = path
                .strip_prefix(site())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let ct = types.get(&rel).cloned();
            (Url::parse(&format!("{origin}/{rel}")).unwrap(), path, ct)
        })
        .collect();
    pages.sort();
    pages
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn every_hard_case_yields_the_links_a_browser_reads() {
    let Some(python) = reference_python() else {
        return;
    };
    let pages = site_pages("http://links.test");
    let reads = reference(&python, &pages);
    let mut differ = Vec::new();
    let mut ours = HashMap::new();
    for ((url, path, ct), read) in pages.iter().zip(&reads) {
        let html = std::fs::read(path).unwrap();
        if let Some(d) = disagreement(url, &html, ct.as_deref(), read) {
            differ.push(d);
        }
        let links = extract_links_served(url, &html, ct.as_deref());
        let name = url.path().trim_start_matches('/').to_string();
        ours.insert(name, links);
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // The twin: the cases are really exercised, each with what a UTF-8 reading would miss.
    let links = |page: &str| -> Vec<String> {
        ours[page]
            .links
            .iter()
            .map(|u| u.path().to_string() + u.query().map_or("", |_| "?") + u.query().unwrap_or(""))
            .collect()
    };
    // Paths in UTF-8, queries in the page's encoding, what it cannot write as `&#N;`
    // percent-encoded whole (the URL standard's "percent-encode after encoding").
    assert!(links("cp1252-header.html").contains(&"/caf%C3%A9.html?q=%E9&r=%80".to_string()));
    assert!(links("cp1252-meta.html").contains(&"/euro.html?p=%80&s=%A3".to_string()));
    assert!(links("latin1-http-equiv.html").contains(&"/%C3%BCber.html?w=%DF".to_string()));
    let koi8 = links("koi8-meta.html");
    assert!(
        koi8.iter()
            .any(|l| l.ends_with("?q=%CD%C9%D2&e=%26%23233%3B")),
        "{koi8:?}"
    );
    assert!(links("utf16le.html").contains(&"/%C3%A9t%C3%A9.html?s=%E2%98%83".to_string()));
    assert_eq!(ours["utf16be.html"].links.len(), 2);
    assert!(links("late-meta.html").contains(&"/r%C3%83%C2%A9sum%C3%83%C2%A9.html".to_string()));
    assert_eq!(
        ours["refresh-caps-quoted.html"].refresh().map(Url::path),
        Some("/moved%202.html")
    );
    assert_eq!(ours["refresh-self.html"].refresh(), None);
    let spaced = ours["refresh-spaces.html"].refresh().map(Url::as_str);
    assert_eq!(spaced, Some("http://links.test/moved-4.html?x=1"));
    assert!(links("base-links.html").contains(&"/sub/index.html".to_string()));
    assert!(links("base-links.html").contains(&"/sub/plain-base-links.html".to_string()));
    assert_eq!(
        links("svg.html"),
        ["/svg-xlink.html", "/svg-href.html", "/plain-svg.html"]
    );
    let refs = links("refs.html");
    for want in [
        "/r1.html?a=1&copy=2",
        "/r2.html?a=%C2%A9",
        "/r3%E2%82%AC.html",
        "/r4%EF%BF%BD.html",
        "/%C2%A0r6.html",
        "/r7.html",
        "/r8.html",
        "/r9%EF%BF%BD.html",
    ] {
        assert!(refs.contains(&want.to_string()), "{want} in {refs:?}");
    }
    assert_eq!(links("template.html"), ["/plain-template.html"]);
    assert!(
        !links("foreign.html")
            .iter()
            .any(|l| l.contains("in-script"))
    );
    // Integration points hold HTML again: their raw text is raw text, their links links;
    // MathML's `a` and `title` outside them are not HTML's.
    assert_eq!(
        links("integration.html"),
        [
            "/fo-link.html",
            "/svg-after-title.html",
            "/plain-integration.html"
        ]
    );
    // Read by the tree builder: a frameset's frames, and SVG misnested with the HTML around
    // it (the title after it is text, the HTML `a` inside `desc` has no href, the frame in
    // the body is dropped).
    assert_eq!(
        links("frames.html"),
        ["/frame-left.html", "/frame-right.html"]
    );
    assert_eq!(
        links("misnested-svg.html"),
        ["/icon-link.html", "/plain-misnested.html"]
    );
}

/// Every page of Debian's Python documentation read both ways.
#[test]
fn the_python_documentation_reads_the_same_both_ways() {
    let root = Path::new("/usr/share/doc/python3.11/html");
    let Some(python) = reference_python() else {
        return;
    };
    if !root.is_dir() {
        assert!(
            !webcoop_testkit::tools_required(),
            "{} (python3.11-doc) is required",
            root.display()
        );
        return;
    }
    let mut pages: Vec<(Url, PathBuf, Option<String>)> = walk(root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .map(|p| {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            (
                Url::parse(&format!("http://docs.test/{rel}")).unwrap(),
                p,
                None,
            )
        })
        .collect();
    pages.sort();
    assert!(pages.len() > 500, "{} pages", pages.len());
    assert_read_alike(&python, &pages);
}

/// Serves the site with each page's Content-Type, logging the paths asked for.
async fn serve(log: Arc<Mutex<Vec<String>>>) -> SocketAddr {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let types = Arc::new(content_types());
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let (log, types) = (log.clone(), types.clone());
        async move {
            let path = uri.path().trim_start_matches('/').to_string();
            log.lock().unwrap().push(uri.to_string());
            let file = site().join(&path);
            match std::fs::read(&file) {
                Ok(body) if file.starts_with(site()) && !path.is_empty() => {
                    let ct = types.get(&path).cloned().unwrap_or("text/html".into());
                    ([(header::CONTENT_TYPE, ct)], body).into_response()
                }
                _ => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[test]
fn a_crawl_asks_for_what_the_reference_reads() {
    let Some(python) = reference_python() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let addr = rt.block_on(serve(log.clone()));
    let origin = format!("http://{addr}");
    let out = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(workspace_bin("webcoop-crawl"))
        .arg("crawl")
        .args(["--seeds", &format!("{origin}/index.html")])
        .args([
            "--allow-net",
            "127.0.0.0/8",
            "--coop",
            "off",
            "--progress",
            "quiet",
        ])
        .args(["--delay-min", "0", "--delay-factor", "0"])
        .arg("--out")
        .arg(out.path())
        .status()
        .unwrap();
    assert!(status.success());
    let asked: BTreeSet<String> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|p| *p != "/robots.txt")
        .map(|p| format!("{origin}{p}"))
        .collect();
    // What the reference reads in every page the site has, from the seed on: its links and
    // refreshes, each a request.
    let pages = site_pages(&origin);
    let reads = reference(&python, &pages);
    let mut want: BTreeSet<String> = BTreeSet::from([format!("{origin}/index.html")]);
    let by_url: HashMap<String, &Read> = pages
        .iter()
        .zip(&reads)
        .map(|((u, _, _), r)| (u.to_string(), r))
        .collect();
    let mut frontier = vec![format!("{origin}/index.html")];
    while let Some(page) = frontier.pop() {
        let Some(read) = by_url.get(&page) else {
            continue;
        };
        let mut next = kept(&read.links);
        next.extend(kept(&read.refresh.iter().cloned().collect::<Vec<_>>()));
        for u in next {
            if want.insert(u.clone()) {
                frontier.push(u);
            }
        }
    }
    assert_eq!(asked, want);
    // Each page says what it was read in: the crawl log where it is not UTF-8, the archive
    // always.
    let log = std::fs::read_to_string(out.path().join("crawl.log")).unwrap();
    let noted = |page: &str| {
        log.lines()
            .find(|l| l.contains(&format!("{origin}/{page} ")))
            .unwrap_or_else(|| panic!("{page} in {log}"))
            .to_string()
    };
    assert!(noted("cp1252-header.html").ends_with("encoding windows-1252; from=header"));
    assert!(noted("utf16le.html").ends_with("encoding UTF-16LE; from=bom"));
    assert!(noted("late-meta.html").ends_with("encoding windows-1252; from=meta-late"));
    assert!(!noted("svg.html").contains("encoding"));
    let mut archived = HashMap::new();
    for entry in std::fs::read_dir(out.path().join("warc"))
        .unwrap()
        .flatten()
    {
        for rec in webcoop_crawler::archives::warc::read_records(&entry.path(), 0).unwrap() {
            if let (Some(uri), Some(e)) = (
                rec.header("WARC-Target-URI"),
                rec.header("WARC-Webcoop-Encoding"),
            ) {
                archived.insert(uri.to_string(), e.to_string());
            }
        }
    }
    assert_eq!(
        archived
            .get(&format!("{origin}/koi8-meta.html"))
            .map(String::as_str),
        Some("KOI8-R; from=meta")
    );
    assert_eq!(
        archived
            .get(&format!("{origin}/svg.html"))
            .map(String::as_str),
        Some("UTF-8; from=default")
    );
}

/// A crawl of Debian's WordPress (nginx, PHP-FPM, MariaDB), every HTML page it archived read
/// both ways: what a CMS writes (entities in query strings, feeds' alternates, comment forms,
/// `srcset`, emoji scripts) rather than what a documentation generator writes.
#[test]
fn a_wordpress_site_reads_the_same_both_ways() {
    use super::wordpress_site::WordPress;
    let Some(python) = reference_python() else {
        return;
    };
    let Some(wp) = WordPress::start(&[]) else {
        return;
    };
    // XML-RPC carries the HTML as XML text.
    let xml = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let id = wp.new_post(
        &xml("Caf&eacute; &amp; links"),
        &xml(
            "<p><a href=\"/?s=caf%C3%A9&amp;paged=2\">search</a> <a href=\"?p=1&copy=2\">legacy</a> \
             <a href=\"#respond\">fragment</a> <svg><a xlink:href=\"/?page_id=2\">svg</a></svg></p>",
        ),
    );
    for n in 1..=4 {
        wp.new_post(
            &format!("Post {n}"),
            &xml(&format!(
                "<p>Number {n}: <a href=\"/?cat=1&amp;paged={n}\">older</a> \
                 <a href=\" /sample-page/?n={n}&x \">spaced</a></p>"
            )),
        );
    }
    wp.comment(
        &id,
        &xml("A comment with <a href=\"/?p=1&amp;replytocom=1\">a link</a>."),
    );
    let out = wp.tmp.path().join("crawl-links");
    let status = std::process::Command::new(workspace_bin("webcoop-crawl"))
        .arg("crawl")
        .args(["--seeds", &wp.base, "--coop", "off", "--progress", "quiet"])
        .args([
            "--allow-net",
            "127.0.0.0/8",
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
        ])
        .args(["--resolve", &format!("{}={}", wp.host, wp.nginx.addr)])
        .args(["--max-pages", "200"])
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    // Each archived HTML response's content, as the crawler decoded it, beside its header.
    let pages_dir = tempfile::tempdir().unwrap();
    let mut pages = Vec::new();
    for entry in std::fs::read_dir(out.join("warc")).unwrap().flatten() {
        for rec in webcoop_crawler::archives::warc::read_records(&entry.path(), 0).unwrap() {
            if rec.header("WARC-Type") != Some("response") {
                continue;
            }
            let Some(uri) = rec.header("WARC-Target-URI").map(str::to_string) else {
                continue;
            };
            let head = String::from_utf8_lossy(&rec.block).into_owned();
            let ct = head.lines().take_while(|l| !l.is_empty()).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-type")
                    .then(|| v.trim().to_string())
            });
            if !ct.as_deref().is_some_and(|c| c.contains("html")) {
                continue;
            }
            let Some(body) = webcoop_crawler::archives::warc::content_of(&rec, usize::MAX) else {
                continue;
            };
            let file = pages_dir.path().join(format!("{}.html", pages.len()));
            std::fs::write(&file, &body).unwrap();
            pages.push((Url::parse(&uri).unwrap(), file, ct));
        }
    }
    assert!(
        pages.len() >= 8,
        "{} pages: {}",
        pages.len(),
        std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default()
    );
    assert_read_alike(&python, &pages);
    // The twin: the post's own links were read, the legacy reference left alone.
    let post = pages
        .iter()
        .find(|(u, _, _)| u.path() == "/caf-links/")
        .map(|(u, p, ct)| extract_links_served(u, &std::fs::read(p).unwrap(), ct.as_deref()));
    let post = post.expect("the post was crawled");
    let links: Vec<&str> = post.links.iter().map(Url::as_str).collect();
    assert!(
        links.iter().any(|l| l.ends_with("/caf-links/?p=1&copy=2")),
        "{links:?}"
    );
}

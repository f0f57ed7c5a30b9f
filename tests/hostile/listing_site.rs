//! A hostile site's cooperation as the tests write it: its listing (robots.rdf), its snapshot
//! and its batches, byte for byte, served by the loopback [`HostileWeb`]; and the crawls run
//! against it, with what they kept.

use super::support::{Canned, HostileWeb, crawl_bin};
use chrono::{TimeZone, Utc};
use std::path::Path;
use std::process::{Command, Output};
use url::Url;
use webcoop_protocol::robots_rdf::{Channel, RdfItem, RobotsRdf, UpdatePeriod};

pub(crate) fn crawl(out: &Path, args: &[String]) -> Output {
    Command::new(crawl_bin())
        .arg("crawl")
        .args(["--allow-net", "127.0.0.0/8"])
        .arg("--out")
        .arg(out)
        .args(["--progress", "quiet"])
        .args(args)
        .output()
        .unwrap()
}

/// A crawl's arguments: `words`, then `hosts` resolved to the hostile web.
pub(crate) fn with_hosts(web: &HostileWeb, words: &[&str], hosts: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = words.iter().map(|s| s.to_string()).collect();
    args.extend(web.resolve_args(hosts));
    args
}

pub(crate) fn status_json(out: &Path) -> serde_json::Value {
    let o = Command::new(crawl_bin())
        .args(["status", "--json", "--out"])
        .arg(out)
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_default()
}

/// URLs of other origins `site`'s documents named, as `status` counts them.
pub(crate) fn foreign_of(out: &Path, site: &str) -> u64 {
    status_json(out)["cooperation"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["origin"] == site))
        .and_then(|s| s["stats"]["foreign"].as_u64())
        .unwrap_or(0)
}

/// Requests the crawl made of `host` (lines of the hostile web's log).
pub(crate) fn asked_of<'a>(log: &'a [String], host: &str) -> Vec<&'a String> {
    let prefix = format!("{host} ");
    log.iter().filter(|l| l.starts_with(&prefix)).collect()
}

pub(crate) fn listing(
    site: &str,
    items: Vec<(String, Option<String>)>,
    changes: &str,
    hub: &str,
) -> String {
    let at = Utc.timestamp_opt(1_790_000_000, 0).unwrap();
    let doc = RobotsRdf {
        channel: Channel {
            about: Url::parse(&format!("{site}/robots.rdf")).unwrap(),
            title: "hostile".into(),
            link: Url::parse(&format!("{site}/")).unwrap(),
            description: "a listing that names another site's endpoints".into(),
            date: Some(at),
            update_period: UpdatePeriod::Daily,
            update_frequency: 1,
            update_base: None,
            changes: Some(Url::parse(changes).unwrap()),
            hub: Some(Url::parse(hub).unwrap()),
            snapshot: None,
            snapshot_max_record: None,
            complete: false,
            seq: Some(1),
            content_usage: None,
            parts: Vec::new(),
        },
        items: items
            .into_iter()
            .map(|(url, delta)| RdfItem {
                url: Url::parse(&url).unwrap(),
                title: url.clone(),
                modified: at,
                size: Some(10),
                content_type: Some("text/html".into()),
                etag: None,
                delta: delta.map(|d| Url::parse(&d).unwrap()),
                extensions: Default::default(),
            })
            .collect(),
    };
    webcoop_protocol::robots_rdf::write(&doc)
}

/// Where a hostile site's snapshot is served.
pub(crate) const SNAPSHOT_PATH: &str =
    "/.well-known/webcoop/snapshot/snapshot-000000000001.warc.zst";

/// Serves `pages` (path, body) on site.test with a robots.txt that allows all, a home page,
/// and an honest robots.rdf: each page listed with its SHA-256 and size, and a snapshot at
/// [`SNAPSHOT_PATH`] (which the caller serves, honest or not).
pub(crate) fn site_with_listing(web: &HostileWeb, pages: &[(String, String)]) {
    let site = web.origin("site.test");
    let claimed: Vec<(String, String)> = pages
        .iter()
        .map(|(p, b)| (format!("{site}{p}"), b.clone()))
        .collect();
    site_claiming(web, "User-agent: *\nAllow: /\n", pages, &claimed);
}

/// Serves site.test: `robots_txt`, a home page, the `live` pages (path, body), and a
/// robots.rdf listing the `claimed` pages (URL as written, body whose SHA-256 and size are
/// stated), naming a snapshot at [`SNAPSHOT_PATH`] and the changes feed.
pub(crate) fn site_claiming(
    web: &HostileWeb,
    robots_txt: &str,
    live: &[(String, String)],
    claimed: &[(String, String)],
) {
    site_claiming_complete(web, robots_txt, live, claimed, false);
}

/// [`site_claiming`], its robots.rdf stating that it lists every page (`wc:complete`) when
/// `complete`.
pub(crate) fn site_claiming_complete(
    web: &HostileWeb,
    robots_txt: &str,
    live: &[(String, String)],
    claimed: &[(String, String)],
    complete: bool,
) {
    use webcoop_protocol::validator::Sha256Digest;
    let site = web.origin("site.test");
    web.set(
        "site.test",
        "/robots.txt",
        Canned::ok("text/plain", robots_txt.to_string()),
    );
    web.set("site.test", "/", Canned::ok("text/html", "<p>home</p>"));
    for (path, body) in live {
        web.set("site.test", path, Canned::ok("text/html", body.clone()));
    }
    let mut doc = webcoop_protocol::robots_rdf::parse(
        listing(
            &site,
            claimed.iter().map(|(u, _)| (u.clone(), None)).collect(),
            &format!("{site}/.well-known/webcoop/changes"),
            &format!("{site}/.well-known/webcoop/hub"),
        )
        .as_bytes(),
        &Default::default(),
    )
    .unwrap();
    for (item, (url, body)) in doc.items.iter_mut().zip(claimed) {
        // As written: the parser's normalisation must not clean up what a site claims.
        item.url = Url::parse(url).unwrap();
        item.etag = Some(Sha256Digest::of(body.as_bytes()).etag());
        item.size = Some(body.len() as u64);
    }
    doc.channel.snapshot = Some(Url::parse(&format!("{site}{SNAPSHOT_PATH}")).unwrap());
    doc.channel.complete = complete;
    web.set(
        "site.test",
        "/robots.rdf",
        Canned::ok(
            "application/rdf+xml",
            webcoop_protocol::robots_rdf::write(&doc),
        ),
    );
}

/// A crawl of site.test without politeness delays, `hosts` resolved to the hostile web.
pub(crate) fn snapshot_crawl_args(web: &HostileWeb, hosts: &[&str]) -> Vec<String> {
    let seed = format!("{}/", web.origin("site.test"));
    let words = ["--seeds", &seed, "--delay-min", "0", "--delay-factor", "0"];
    with_hosts(web, &words, hosts)
}

/// A snapshot whose records are written as the standard says, for a hostile site's use.
pub(crate) fn snapshot_file(site: &str, records: &[(&str, &[u8])], tail: &[u8]) -> Vec<u8> {
    use webcoop_protocol::snapshot::{Entry, SnapshotInfo};
    use webcoop_protocol::validator::Sha256Digest;
    let at = Utc.timestamp_opt(1_790_000_000, 0).unwrap();
    let mut w = webcoop_protocol::warc::ZstdWarcWriter::new(Vec::new(), None, 3).unwrap();
    let info = SnapshotInfo {
        site: format!("{site}/"),
        sequence: 1,
        content_usage: None,
        max_record: None,
    };
    w.append(
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", "<urn:uuid:0>"),
        ],
        info.block("hostile").as_bytes(),
    )
    .unwrap();
    for (url, body) in records {
        let e = Entry {
            url: url.to_string(),
            content_type: "text/html".into(),
            sha256: Sha256Digest::of(body),
            body: body.to_vec(),
        };
        let fields = e.fields("<urn:uuid:1>", at);
        let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
        w.append(&fields, body).unwrap();
    }
    let mut bytes = w.finish().unwrap();
    bytes.extend_from_slice(tail);
    bytes
}

/// What `webcoop-crawl copies` lists for a crawl: `ETAG URL` per page held.
pub(crate) fn copies(out: &Path) -> String {
    let o = Command::new(crawl_bin())
        .args(["copies", "--out"])
        .arg(out)
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The cooperation record of `origin` in a crawl's status.
pub(crate) fn coop_of(out: &Path, origin: &str) -> serde_json::Value {
    status_json(out)["cooperation"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["origin"] == origin).cloned())
        .unwrap_or_default()
}

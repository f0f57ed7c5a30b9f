//! What we write, read by clients nobody here wrote: feedparser and rdflib read robots.rdf and
//! the changes feed, ultimate-sitemap-parser reads sitemaps over loopback HTTP, GNU patch
//! applies our unified diffs and stock `zstd --patch-from` decodes our dcz deltas.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use url::Url;
use webcoop_protocol::changes_feed::{
    self, ChangeEntry, ChangeKind, ChangesFeed, InlineDelta, Resync,
};
use webcoop_protocol::dates::format_w3cdtf;
use webcoop_protocol::delta::{DeltaEncoding, dcz, unified};
use webcoop_protocol::robots_rdf::{self, Channel, Extensions, RdfItem, RobotsRdf, UpdatePeriod};
use webcoop_protocol::sitemap::{self, ChangeFreq, SitemapLayout, UrlEntry};
use webcoop_protocol::validator::Sha256Digest;
use webcoop_testkit::{reference_python, reference_script, run_ok, run_reference, tool};

fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 0).single().unwrap()
}

fn site() -> Url {
    Url::parse("https://www.example.org/").unwrap()
}

/// Paths that stress escaping: IRIs, ampersands, spaces, quotes, a very long one.
fn awkward_paths() -> Vec<String> {
    vec![
        "index.html".into(),
        "docs/a&b.html?x=1&y=<2>".into(),
        "with space/file name.html".into(),
        "ünïcödé/日本語.html".into(),
        "quote\"and'apos.html".into(),
        format!("long/{}.html", "segment-".repeat(200)),
        "percent%20already.html".into(),
    ]
}

fn sample_rdf() -> RobotsRdf {
    let items = awkward_paths()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let url = site().join(p).unwrap();
            let mut extensions = Extensions::default();
            extensions
                .insert("popularity", format!("{}", 0.5 / (i + 1) as f64))
                .unwrap();
            RdfItem {
                title: format!("/{p} — “title” <{i}> & more"),
                modified: t(i as i64 * 3_600),
                size: Some(1000 + i as u64),
                content_type: Some("text/html; charset=utf-8".into()),
                etag: Some(Sha256Digest::of(p.as_bytes()).etag()),
                delta: Some(
                    site()
                        .join(&format!(".well-known/webcoop/delta/{p}"))
                        .unwrap(),
                ),
                extensions,
                url,
            }
        })
        .collect();
    RobotsRdf {
        channel: Channel {
            about: site().join("robots.rdf").unwrap(),
            title: "www.example.org & friends".into(),
            link: site(),
            description: "Every public resource of www.example.org".into(),
            date: Some(t(100_000)),
            update_period: UpdatePeriod::Hourly,
            update_frequency: 60,
            update_base: Some(t(0)),
            changes: Some(site().join(".well-known/webcoop/changes").unwrap()),
            hub: Some(site().join(".well-known/webcoop/hub").unwrap()),
            snapshot: Some(
                site()
                    .join(".well-known/webcoop/snapshot/snapshot-000000000042.warc.zst")
                    .unwrap(),
            ),
            snapshot_max_record: Some(1 << 20),
            complete: true,
            seq: Some(42),
            content_usage: None,
            parts: Vec::new(),
        },
        items,
    }
}

fn second(dt: DateTime<Utc>) -> String {
    dt.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[test]
fn feedparser_and_rdflib_read_our_robots_rdf() {
    let Some(python) = reference_python() else {
        return;
    };
    let doc = sample_rdf();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("robots.rdf");
    std::fs::write(&path, robots_rdf::write(&doc)).unwrap();

    let seen: Value = serde_json::from_str(&run_reference(
        &python,
        "feed_check.py",
        &[path.as_os_str()],
    ))
    .unwrap();
    assert_eq!(
        seen["bozo"], false,
        "feedparser flagged the document: {}",
        seen["bozo_exception"]
    );
    assert_eq!(seen["version"], "rss10");
    assert_eq!(seen["feed"]["title"], doc.channel.title);
    assert_eq!(seen["feed"]["sy_updateperiod"], "hourly");
    assert_eq!(seen["feed"]["sy_updatefrequency"], "60");
    let entries = seen["entries"].as_array().unwrap();
    assert_eq!(entries.len(), doc.items.len());
    for (entry, item) in entries.iter().zip(&doc.items) {
        assert_eq!(entry["link"], item.url.as_str());
        assert_eq!(entry["title"], item.title);
        assert_eq!(entry["updated"], second(item.modified), "{}", item.url);
    }

    let rdf: Value =
        serde_json::from_str(&run_reference(&python, "rdf_check.py", &[path.as_os_str()])).unwrap();
    assert_eq!(rdf["channel"], doc.channel.about.as_str());
    let seq: Vec<&str> = rdf["seq"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let urls: Vec<&str> = doc.items.iter().map(|i| i.url.as_str()).collect();
    assert_eq!(seq, urls);
    for item in &doc.items {
        let triples = &rdf["items"][item.url.as_str()];
        assert_eq!(triples["date"], format_w3cdtf(item.modified));
        assert_eq!(triples["format"], item.content_type.as_deref().unwrap());
        assert_eq!(triples["size"], item.size.unwrap().to_string());
        assert_eq!(triples["etag"], item.etag.as_ref().unwrap().to_string());
    }
}

#[test]
fn rdflib_and_feedparser_read_an_index_of_parts() {
    let Some(python) = reference_python() else {
        return;
    };
    let mut doc = sample_rdf();
    doc.items.clear();
    doc.channel.parts = awkward_paths()
        .iter()
        .enumerate()
        .map(|(i, p)| robots_rdf::ListingPart {
            url: site().join(&format!("robots-{p}.rdf")).unwrap(),
            date: t(i as i64 * 60),
            version: format!("{i:016x}"),
            items: 2000 + i as u64,
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("robots.rdf");
    std::fs::write(&path, robots_rdf::write(&doc)).unwrap();
    let rdf: Value =
        serde_json::from_str(&run_reference(&python, "rdf_check.py", &[path.as_os_str()])).unwrap();
    let parts = rdf["parts"].as_object().unwrap();
    assert_eq!(parts.len(), doc.channel.parts.len());
    for part in &doc.channel.parts {
        let triples = &parts[part.url.as_str()];
        assert_eq!(triples["date"], format_w3cdtf(part.date), "{}", part.url);
        assert_eq!(triples["version"], part.version);
        assert_eq!(triples["items"], part.items.to_string());
    }
    // To an RSS reader the index is a channel without items (not an error).
    let seen: Value = serde_json::from_str(&run_reference(
        &python,
        "feed_check.py",
        &[path.as_os_str()],
    ))
    .unwrap();
    assert_eq!(seen["bozo"], false, "{}", seen["bozo_exception"]);
    assert_eq!(seen["version"], "rss10");
    assert_eq!(seen["entries"].as_array().unwrap().len(), 0);
}

fn sample_feed() -> ChangesFeed {
    let paths = awkward_paths();
    let mut entries = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let kind = [
            ChangeKind::Created,
            ChangeKind::Modified,
            ChangeKind::Deleted,
        ][i % 3];
        let mut e = ChangeEntry::new(
            100 + i as u64,
            kind,
            site().join(p).unwrap(),
            t(i as i64 * 60),
        );
        if kind != ChangeKind::Deleted {
            e.etag = Some(Sha256Digest::of(format!("v2 {p}").as_bytes()).etag());
            e.size = Some(10 * i as u64);
            e.content_type = Some("text/html".into());
        }
        if kind == ChangeKind::Modified {
            e.previous_etag = Some(Sha256Digest::of(format!("v1 {p}").as_bytes()).etag());
            e.changed_fraction = Some(0.0125);
            e.delta = Some(InlineDelta {
                encoding: DeltaEncoding::Dcz,
                base: e.previous_etag.clone().unwrap(),
                data: dcz::encode(
                    format!("v1 {p}").as_bytes(),
                    format!("v2 {p}").as_bytes(),
                    3,
                )
                .unwrap(),
            });
        }
        entries.push(e);
    }
    ChangesFeed {
        id: "https://www.example.org/.well-known/webcoop/changes".into(),
        title: "Changes of www.example.org".into(),
        updated: t(10_000),
        self_link: site().join(".well-known/webcoop/changes").unwrap(),
        hub: Some(site().join(".well-known/webcoop/hub").unwrap()),
        next: Some(
            site()
                .join(".well-known/webcoop/changes?since=106")
                .unwrap(),
        ),
        head_seq: Some(200),
        resync: Some(Resync {
            since: 99,
            listing: site().join("robots.rdf").unwrap(),
            snapshot: Some(
                site()
                    .join(".well-known/webcoop/snapshot/snapshot-000000000042.warc.zst")
                    .unwrap(),
            ),
        }),
        content_usage: Some("search=y, train-ai=n".into()),
        entries,
    }
}

#[test]
fn feedparser_reads_our_changes_feed() {
    let Some(python) = reference_python() else {
        return;
    };
    let feed = sample_feed();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("changes.atom");
    std::fs::write(&path, changes_feed::write(&feed)).unwrap();
    let seen: Value = serde_json::from_str(&run_reference(
        &python,
        "feed_check.py",
        &[path.as_os_str()],
    ))
    .unwrap();
    assert_eq!(
        seen["bozo"], false,
        "feedparser flagged the document: {}",
        seen["bozo_exception"]
    );
    assert_eq!(seen["version"], "atom10");
    assert_eq!(seen["feed"]["updated"], second(feed.updated));
    let rels: Vec<(&str, &str)> = seen["feed"]["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["rel"].as_str().unwrap(), l["href"].as_str().unwrap()))
        .collect();
    assert!(rels.contains(&("self", feed.self_link.as_str())));
    assert!(rels.contains(&("hub", feed.hub.as_ref().unwrap().as_str())));
    let entries = seen["entries"].as_array().unwrap();
    assert_eq!(entries.len(), feed.entries.len());
    for (seen, ours) in entries.iter().zip(&feed.entries) {
        assert_eq!(seen["link"], ours.url.as_str());
        assert_eq!(seen["updated"], second(ours.time));
        assert_eq!(seen["id"], format!("{}#{}", feed.id, ours.seq));
        assert_eq!(seen["terms"], serde_json::json!([ours.kind.as_str()]));
    }
}

fn sitemap_entries(n: usize) -> Vec<UrlEntry> {
    let paths = awkward_paths();
    (0..n)
        .map(|i| UrlEntry {
            loc: site()
                .join(&format!("{}/{i}", paths[i % paths.len()].replace('?', "_")))
                .unwrap(),
            lastmod: Some(t(i as i64 * 60)),
            changefreq: Some(ChangeFreq::Daily),
            priority: Some(((i % 10) as f32) / 10.0),
        })
        .collect()
}

/// Starts usp's loopback server, writes the set for the server's real address (index entries
/// are absolute URLs), then lets usp fetch and parse it.
fn check_sitemap_with_usp(python: &Path, entries: &[UrlEntry], max_urls: usize) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(python)
        .arg(reference_script("sitemap_check.py"))
        .arg(dir.path())
        .arg("sitemap.xml")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut base = String::new();
    stdout.read_line(&mut base).unwrap();
    let mut layout = SitemapLayout::new(Url::parse(base.trim()).unwrap());
    layout.max_urls = max_urls;
    let set = sitemap::build(entries, &layout, t(0)).unwrap();
    std::fs::write(dir.path().join(&set.root.name), &set.root.bytes).unwrap();
    for part in &set.parts {
        std::fs::write(dir.path().join(&part.name), &part.bytes).unwrap();
    }
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut json = String::new();
    stdout.read_to_string(&mut json).unwrap();
    assert!(child.wait().unwrap().success(), "sitemap_check.py failed");
    let seen: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        seen["invalid"],
        serde_json::json!([]),
        "usp found invalid sitemaps"
    );
    let pages = seen["pages"].as_array().unwrap();
    assert_eq!(pages.len(), entries.len());
    for (page, entry) in pages.iter().zip(entries) {
        assert_eq!(page["url"], entry.loc.as_str());
        assert_eq!(page["lastmod"], second(entry.lastmod.unwrap()));
        assert_eq!(page["changefreq"], "daily");
        assert!(
            (page["priority"].as_f64().unwrap() - f64::from(entry.priority.unwrap())).abs() < 1e-6
        );
    }
    seen
}

#[test]
fn ultimate_sitemap_parser_reads_a_single_urlset() {
    let Some(python) = reference_python() else {
        return;
    };
    let seen = check_sitemap_with_usp(&python, &sitemap_entries(20), 50_000);
    assert_eq!(seen["kind"], "PagesXMLSitemap");
}

#[test]
fn ultimate_sitemap_parser_follows_our_index_and_gzip_parts() {
    let Some(python) = reference_python() else {
        return;
    };
    let seen = check_sitemap_with_usp(&python, &sitemap_entries(30), 7);
    assert_eq!(seen["kind"], "IndexXMLSitemap");
    let subs = seen["sub_sitemaps"].as_array().unwrap();
    assert_eq!(
        subs.len(),
        5,
        "30 URLs at 7 per part make 5 parts: {subs:?}"
    );
}

/// Text pairs a crawler meets: small edits in long HTML lines, appended text, no final newline,
/// CRLF files, non-ASCII text, creation from empty and deletion to empty.
fn text_edits() -> Vec<(String, String)> {
    let long_line = format!("<p>{}</p>", "Lorem ipsum dolor sit amet. ".repeat(2000));
    let page = |v: &str| {
        format!(
            "<!DOCTYPE html>\n<html><head><title>Docs {v}</title></head>\n<body>{long_line}\n<footer>Version {v}</footer></body></html>\n"
        )
    };
    vec![
        (page("3.11.4"), page("3.11.5")),
        (
            "line 1\nline 2\nline 3".into(),
            "line 1\nline two\nline 3".into(),
        ),
        ("a\nb\n".into(), "a\nb\nc".into()),
        (
            "windows\r\nline\r\nend\r\n".into(),
            "windows\r\nLINE\r\nend\r\n".into(),
        ),
        (
            "日本語のテキスト\nüber\n".into(),
            "日本語のテキスト\nunter\n".into(),
        ),
        (String::new(), "created\n".into()),
        ("to be removed\n".into(), String::new()),
    ]
}

#[test]
fn gnu_patch_applies_our_unified_diffs_byte_for_byte() {
    let Some(patch) = tool("patch") else { return };
    let dir = tempfile::tempdir().unwrap();
    for (i, (old, new)) in text_edits().into_iter().enumerate() {
        let diff =
            unified::diff(old.as_bytes(), new.as_bytes(), "a/page.html", "b/page.html").unwrap();
        let old_path = dir.path().join(format!("old{i}"));
        let diff_path = dir.path().join(format!("diff{i}"));
        let out_path = dir.path().join(format!("new{i}"));
        std::fs::write(&old_path, &old).unwrap();
        std::fs::write(&diff_path, &diff).unwrap();
        // --binary keeps CRLF lines as they are instead of letting patch strip the CRs.
        run_ok(
            Command::new(&patch)
                .args(["--quiet", "--binary", "--force", "-o"])
                .arg(&out_path)
                .arg(&old_path)
                .arg(&diff_path),
        );
        assert_eq!(
            std::fs::read(&out_path).unwrap(),
            new.as_bytes(),
            "edit {i}:\n{diff}"
        );
        // And our own applier agrees with GNU patch.
        assert_eq!(
            unified::apply(old.as_bytes(), &diff).unwrap(),
            new.as_bytes()
        );
    }
}

#[test]
fn stock_zstd_decodes_our_dcz_and_we_decode_its_patches() {
    let Some(zstd) = tool("zstd") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut edits = text_edits();
    let binary_old: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut binary_new = binary_old.clone();
    binary_new[1000..1010].copy_from_slice(b"0123456789");
    for (i, (old, new)) in edits
        .drain(..)
        .map(|(o, n)| (o.into_bytes(), n.into_bytes()))
        .chain([(binary_old, binary_new)])
        .enumerate()
    {
        let old_path = dir.path().join(format!("old{i}"));
        std::fs::write(&old_path, &old).unwrap();

        // Ours -> stock zstd.
        let delta = dcz::encode(&old, &new, 19).unwrap();
        let delta_path = dir.path().join(format!("delta{i}.dcz"));
        std::fs::write(&delta_path, &delta).unwrap();
        let out_path = dir.path().join(format!("new{i}"));
        run_ok(
            Command::new(&zstd)
                .arg("-q")
                .arg("-d")
                .arg("-f")
                .arg(format!("--patch-from={}", old_path.display()))
                .arg(&delta_path)
                .arg("-o")
                .arg(&out_path),
        );
        assert_eq!(std::fs::read(&out_path).unwrap(), new, "edit {i}");

        // Stock zstd -> ours: its --patch-from output behind a dcz header decodes with our
        // decoder. (zstd 1.5.4's CLI aborts on an empty input with --patch-from, so that
        // direction is checked on non-empty versions only.)
        if new.is_empty() {
            continue;
        }
        let new_path = dir.path().join(format!("target{i}"));
        std::fs::write(&new_path, &new).unwrap();
        let zst_path = dir.path().join(format!("stock{i}.zst"));
        run_ok(
            Command::new(&zstd)
                .args(["-q", "-f", "-19"])
                .arg(format!("--patch-from={}", old_path.display()))
                .arg(&new_path)
                .arg("-o")
                .arg(&zst_path),
        );
        let mut framed = dcz::MAGIC.to_vec();
        framed.extend_from_slice(&Sha256Digest::of(&old).0);
        framed.extend(std::fs::read(&zst_path).unwrap());
        let expected = Sha256Digest::of(&new).etag();
        assert_eq!(
            dcz::decode_verified(&old, &framed, &expected, 1 << 30).unwrap(),
            new,
            "edit {i}"
        );
    }
}

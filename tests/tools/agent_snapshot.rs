//! A snapshot of a real site as the agent publishes it and nginx serves it: one `.warc.zst`
//! whose records are exactly the files robots.rdf lists, read by programs this project did not
//! write (the zstd command-line tool decompresses it with the dictionary it carries; warcio
//! checks every record's digest in the result), resumable with `Range`, with a CDXJ index
//! whose every line points at a frame that decodes alone to that URL's record.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use webcoop::servers::{Nginx, example_nginx_conf, http_get};
use webcoop_agent::{Agent, AgentOptions, Config};
use webcoop_protocol::clock::SystemClock;
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_protocol::snapshot::{Entry, SnapshotInfo};
use webcoop_protocol::warc::ZstdWarcReader;
use webcoop_testkit::{reference_python, run_ok, tool};

/// Up to `n` pages of Debian's Python documentation (real HTML with shared navigation), or
/// generated pages where it is not installed.
fn site(www: &Path, n: usize) {
    let docs = Path::new("/usr/share/doc/python3.11/html/library");
    let mut copied = 0;
    if let Ok(dir) = std::fs::read_dir(docs) {
        let mut names: Vec<_> = dir.flatten().map(|e| e.path()).collect();
        names.sort();
        for p in names
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "html"))
        {
            if copied == n {
                break;
            }
            let Ok(body) = std::fs::read(&p) else {
                continue;
            };
            std::fs::create_dir_all(www.join("library")).unwrap();
            std::fs::write(www.join("library").join(p.file_name().unwrap()), body).unwrap();
            copied += 1;
        }
    }
    for i in copied..n {
        let body = format!(
            "<!doctype html><title>Page {i}</title><nav><a href=/>home</a></nav><p>{}</p>",
            "text of the page ".repeat(i % 40 + 1)
        );
        std::fs::create_dir_all(www.join("gen")).unwrap();
        std::fs::write(www.join(format!("gen/p{i}.html")), body).unwrap();
    }
    std::fs::write(
        www.join("logo.png"),
        (0..2000u32)
            .map(|i| (i * 7 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(www.join(".htpasswd"), "admin:secret").unwrap();
}

fn agent(www: &Path, state: &Path, base: &str) -> Agent {
    let options = AgentOptions {
        docroot: Some(www.to_path_buf()),
        base_url: Some(base.to_string()),
        state: Some(state.to_path_buf()),
        debounce_ms: Some(0),
        ..AgentOptions::default()
    };
    Agent::open(
        Config::from_options(options).unwrap(),
        Arc::new(SystemClock),
    )
    .unwrap()
}

#[test]
fn nginx_serves_a_snapshot_that_zstd_and_warcio_read_record_for_record() {
    let (Some(nginx_bin), Some(zstd)) = (tool("nginx"), tool("zstd")) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    site(&www, 120);
    let www = www.canonicalize().unwrap();
    let nginx = Nginx::start(&nginx_bin, &example_nginx_conf(), &www);
    let base = nginx.url();
    let mut agent = agent(&www, &tmp.path().join("state"), &base);
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    assert!(
        agent.snapshot_due().unwrap(),
        "a published site without a snapshot needs one"
    );
    let built = agent.build_snapshot().unwrap();
    assert_eq!(built.records, 121);
    assert_eq!(built.left_out, 0);
    assert!(!agent.snapshot_due().unwrap(), "nothing changed since");
    assert!(
        built.file_bytes * 4 < built.content_bytes,
        "{} bytes of snapshot for {} of content",
        built.file_bytes,
        built.content_bytes
    );

    // robots.rdf names the snapshot; nginx serves it whole, and from an offset.
    let rdf = http_get(nginx.addr, "/robots.rdf", &[]).unwrap();
    let listing = robots_rdf::parse(&rdf.body, &RdfLimits::default()).unwrap();
    let url = listing
        .channel
        .snapshot
        .clone()
        .expect("robots.rdf names the snapshot");
    let whole = http_get(nginx.addr, url.path(), &[]).unwrap();
    assert_eq!(whole.status, 200, "{url}");
    assert_eq!(whole.body, std::fs::read(&built.path).unwrap());
    assert_eq!(whole.header("content-type"), Some("application/zstd"));
    let from = whole.body.len() / 3;
    let rest = http_get(
        nginx.addr,
        url.path(),
        &[("Range", &format!("bytes={from}-"))],
    )
    .unwrap();
    assert_eq!(rest.status, 206);
    assert_eq!(rest.body, whole.body[from..]);

    // Our reader: the warcinfo, then one checked entry per listed file, each the file's bytes.
    let mut reader = ZstdWarcReader::new(&whole.body[..], 64 << 20).unwrap();
    let info = SnapshotInfo::from_record(&reader.next().unwrap().unwrap().record).unwrap();
    assert_eq!(info.sequence, listing.channel.seq.unwrap());
    assert_eq!(info.site, base);
    let entries: BTreeMap<String, Entry> = reader
        .map(|r| {
            let e = Entry::from_record(r.unwrap().record).unwrap();
            (e.url.clone(), e)
        })
        .collect();
    let listed: Vec<String> = listing.items.iter().map(|i| i.url.to_string()).collect();
    assert_eq!(entries.keys().cloned().collect::<Vec<_>>(), {
        let mut l = listed.clone();
        l.sort();
        l
    });
    for item in &listing.items {
        let served = http_get(nginx.addr, item.url.path(), &[]).unwrap();
        assert_eq!(entries[item.url.as_str()].body, served.body, "{}", item.url);
    }

    // The zstd tool: the dictionary frame holds a zstd-compressed dictionary; with it, the
    // frames after it decompress to a plain WARC.
    let bytes = &whole.body;
    assert_eq!(bytes[..4], 0x184D_2A5Du32.to_le_bytes());
    let dict_len = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    let work = tmp.path();
    std::fs::write(work.join("dict.zst"), &bytes[8..8 + dict_len]).unwrap();
    std::fs::write(work.join("records.zst"), &bytes[8 + dict_len..]).unwrap();
    run_ok(
        Command::new(&zstd)
            .args(["-q", "-d", "-f"])
            .arg(work.join("dict.zst"))
            .arg("-o")
            .arg(work.join("dict")),
    );
    run_ok(
        Command::new(&zstd)
            .args(["-q", "-d", "-f", "-D"])
            .arg(work.join("dict"))
            .arg(work.join("records.zst"))
            .arg("-o")
            .arg(work.join("snapshot.warc")),
    );
    let plain = std::fs::read(work.join("snapshot.warc")).unwrap();
    assert!(plain.starts_with(b"WARC/1.1\r\nWARC-Type: warcinfo\r\n"));

    // warcio checks each record's digest and lists the same URLs.
    if let Some(python) = reference_python() {
        let check = run_ok(
            Command::new(&python)
                .args(["-m", "warcio.cli", "check", "-v"])
                .arg(work.join("snapshot.warc")),
        );
        let text = String::from_utf8_lossy(&check.stdout);
        assert!(!text.contains("digest failed"), "{text}");
        assert_eq!(text.matches("digest pass").count(), 121, "{text}");
        let index = run_ok(
            Command::new(&python)
                .args([
                    "-m",
                    "warcio.cli",
                    "index",
                    "-f",
                    "warc-type,warc-target-uri",
                ])
                .arg(work.join("snapshot.warc")),
        );
        let uris: Vec<String> = String::from_utf8_lossy(&index.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["warc-type"] == "resource")
            .map(|v| v["warc-target-uri"].as_str().unwrap_or("").to_string())
            .collect();
        let mut sorted = uris.clone();
        sorted.sort();
        assert_eq!(sorted, entries.keys().cloned().collect::<Vec<_>>());
    }

    // Every index line points at a frame that decodes alone (with the dictionary) to its URL.
    let index_url = url.as_str().replace(".warc.zst", ".cdxj");
    let index = http_get(nginx.addr, url::Url::parse(&index_url).unwrap().path(), &[]).unwrap();
    assert_eq!(index.status, 200);
    let lines = String::from_utf8(index.body).unwrap();
    assert_eq!(lines.lines().count(), 121);
    let dict_frame = &bytes[..8 + dict_len];
    for line in lines.lines() {
        let json: serde_json::Value =
            serde_json::from_str(line.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let offset: usize = json["offset"].as_str().unwrap().parse().unwrap();
        let length: usize = json["length"].as_str().unwrap().parse().unwrap();
        let mut alone = dict_frame.to_vec();
        alone.extend_from_slice(&bytes[offset..offset + length]);
        let rec = ZstdWarcReader::new(&alone[..], 64 << 20)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(rec.record.field("WARC-Target-URI"), json["url"].as_str());
    }
}

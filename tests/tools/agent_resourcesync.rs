//! ResourceSync as the agent publishes it and nginx serves it, read by `resync`, the reference
//! client by the standard's authors: a baseline synchronisation from the Source Description,
//! then an incremental one from the Change List after edits, a creation and a deletion, each
//! ending in an exact copy of what the site publishes (and nothing it refuses); and the
//! Resource Dump built beside a snapshot, its ZIP package and manifest read by Python's zipfile
//! and resync's own manifest parser.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use webcoop::servers::{Nginx, example_nginx_conf, http_get};
use webcoop_agent::{Agent, AgentOptions, Config};
use webcoop_protocol::clock::SystemClock;
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_testkit::{reference_python, run_ok, tool};

fn agent(www: &Path, state: &Path, base: &str) -> Agent {
    let options = AgentOptions {
        docroot: Some(www.to_path_buf()),
        base_url: Some(base.to_string()),
        state: Some(state.to_path_buf()),
        debounce_ms: Some(0),
        resource_dump: Some(true),
        ..AgentOptions::default()
    };
    Agent::open(
        Config::from_options(options).unwrap(),
        Arc::new(SystemClock),
    )
    .unwrap()
}

/// Every file under `dir`, by path, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What the site publishes: every URL robots.rdf lists, as nginx serves it, by path.
fn published(nginx: &Nginx) -> BTreeMap<String, Vec<u8>> {
    let rdf = http_get(nginx.addr, "/robots.rdf", &[]).unwrap();
    let listing = robots_rdf::parse(&rdf.body, &RdfLimits::default()).unwrap();
    listing
        .items
        .iter()
        .map(|i| {
            let served = http_get(nginx.addr, i.url.path(), &[]).unwrap();
            assert_eq!(served.status, 200, "{}", i.url);
            (
                i.url.path().trim_start_matches('/').to_string(),
                served.body,
            )
        })
        .collect()
}

#[test]
fn resync_copies_the_site_exactly_by_baseline_then_by_its_change_list() {
    let Some(nginx_bin) = tool("nginx") else {
        return;
    };
    let Some(python) = reference_python() else {
        return;
    };
    let resync = python.with_file_name("resync-sync");
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir_all(www.join("docs/deep")).unwrap();
    for i in 0..30 {
        std::fs::write(
            www.join(format!("docs/p{i}.html")),
            format!(
                "<!doctype html><title>{i}</title><p>{}</p>",
                "words ".repeat(i + 1)
            ),
        )
        .unwrap();
    }
    std::fs::write(www.join("index.html"), "<a href=docs/p0.html>docs</a>").unwrap();
    std::fs::write(
        www.join("docs/deep/data.bin"),
        (0..5000u32).map(|i| (i % 253) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(www.join(".htpasswd"), "admin:secret").unwrap();
    let www = www.canonicalize().unwrap();
    let nginx = Nginx::start(&nginx_bin, &example_nginx_conf(), &www);
    let base = nginx.url();
    let mut agent = agent(&www, &tmp.path().join("state"), &base);
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();

    // The Source Description is served as XML where the standard puts it.
    let sd = http_get(nginx.addr, "/.well-known/resourcesync", &[]).unwrap();
    assert_eq!(sd.status, 200);
    assert_eq!(sd.header("content-type"), Some("application/xml"));

    let copy = tmp.path().join("copy");
    let sync = |args: &[&str]| {
        let o = run_ok(
            Command::new(&resync)
                .current_dir(tmp.path())
                .args(args)
                .arg(format!("{base}={}", copy.display())),
        );
        String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout)
    };
    let said = sync(&["--baseline", "--delete", "--verbose"]);
    // Found through the Source Description and the Capability List, not a guessed sitemap.
    assert!(
        said.contains(".well-known/webcoop/resourcesync/resourcelist.xml"),
        "{said}"
    );
    let truth = published(&nginx);
    assert_eq!(truth.len(), 32);
    assert!(!truth.contains_key(".htpasswd"));
    assert_eq!(files(&copy), truth, "after the baseline");
    let audit = sync(&["--audit"]);
    assert!(audit.contains("IN SYNC"), "{audit}");

    // Edits, a creation in a new directory and a deletion; the agent publishes them.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(www.join("docs/p3.html"), "<p>edited</p>").unwrap();
    std::fs::write(www.join("docs/deep/data.bin"), b"new binary content").unwrap();
    std::fs::create_dir_all(www.join("news")).unwrap();
    std::fs::write(www.join("news/today.html"), "<p>today</p>").unwrap();
    std::fs::remove_file(www.join("docs/p7.html")).unwrap();
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    let changes = format!("{base}.well-known/webcoop/resourcesync/changelist.xml");
    let said = sync(&["--incremental", "--delete", "--changelist-uri", &changes]);
    assert!(said.contains("created=1, updated=2, deleted=1"), "{said}");
    let truth = published(&nginx);
    assert_eq!(files(&copy), truth, "after the incremental synchronisation");
}

/// Reads a Resource Dump as a ResourceSync client would: the dump names one package; the
/// package holds a manifest resync parses, and each file the manifest names at its path, with
/// its length and SHA-256. Prints `files bytes` of the package.
const READ_DUMP: &str = r#"
import hashlib, io, sys, urllib.request, zipfile
from resync.resource_dump import ResourceDump
from resync.resource_dump_manifest import ResourceDumpManifest
dump = ResourceDump()
dump.read(uri=sys.argv[1])
packages = list(dump.resources)
assert len(packages) == 1, packages
package = packages[0]
data = urllib.request.urlopen(package.uri).read()
assert len(data) == package.length, (len(data), package.length)
assert hashlib.sha256(data).hexdigest() == package.sha256, "package digest"
z = zipfile.ZipFile(io.BytesIO(data))
manifest = ResourceDumpManifest()
manifest.parse(str_data=z.read("manifest.xml").decode())
assert manifest.capability == "resourcedump-manifest", manifest.capability
for r in manifest.resources:
    body = z.read(r.path.lstrip("/"))
    assert len(body) == r.length, r.uri
    assert hashlib.sha256(body).hexdigest() == r.sha256, r.uri
    live = urllib.request.urlopen(r.uri).read()
    assert live == body, r.uri
print(len(manifest.resources), len(data))
"#;

#[test]
fn a_resource_dump_is_built_beside_the_snapshot_and_reads_with_resync() {
    let Some(nginx_bin) = tool("nginx") else {
        return;
    };
    let Some(python) = reference_python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir_all(www.join("docs")).unwrap();
    for i in 0..40 {
        std::fs::write(
            www.join(format!("docs/p{i}.html")),
            format!(
                "<!doctype html><title>{i}</title><p>{}</p>",
                "text ".repeat(i + 3)
            ),
        )
        .unwrap();
    }
    std::fs::write(
        www.join("logo.png"),
        (0..3000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(www.join(".env"), "PASSWORD=hunter2").unwrap();
    let www = www.canonicalize().unwrap();
    let nginx = Nginx::start(&nginx_bin, &example_nginx_conf(), &www);
    let base = nginx.url();
    let mut agent = agent(&www, &tmp.path().join("state"), &base);
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    let capabilities = |nginx: &Nginx| {
        let r = http_get(
            nginx.addr,
            "/.well-known/webcoop/resourcesync/capabilitylist.xml",
            &[],
        )
        .unwrap();
        String::from_utf8_lossy(&r.body).into_owned()
    };
    assert!(
        !capabilities(&nginx).contains("resourcedump"),
        "no dump before a snapshot"
    );
    agent.build_snapshot().unwrap();
    assert!(capabilities(&nginx).contains("capability=\"resourcedump\""));
    let o = run_ok(Command::new(&python).args(["-c", READ_DUMP]).arg(format!(
        "{base}.well-known/webcoop/resourcesync/resourcedump.xml"
    )));
    let said = String::from_utf8_lossy(&o.stdout);
    let files: usize = said.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(files, published(&nginx).len(), "{said}");
    assert_eq!(files, 41);
}

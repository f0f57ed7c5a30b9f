//! The crawler never reaches inside a network a website names: robots.txt's `Sitemap:` and
//! `Robots-RDF:` lines, a hub, links and redirects to loopback in every spelling, to the cloud
//! metadata address, and names resolved there. The site lives on 127.0.0.2, the only address
//! the crawler is allowed beyond the public ones; 127.0.0.1 stands for the inside, where a
//! listener counts every connection that would have leaked.

use super::support::{Canned, HostileWeb, crawl_bin};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

/// A listener on the inside that counts the connections it gets.
struct Inside {
    listener: TcpListener,
    port: u16,
}

impl Inside {
    fn start() -> Inside {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        Inside { listener, port }
    }

    fn connections(&self) -> usize {
        std::iter::from_fn(|| self.listener.accept().ok()).count()
    }
}

#[test]
fn a_crawler_never_reaches_inside_a_network_a_site_names() {
    let inside = Inside::start();
    let p = inside.port;
    let web = HostileWeb::start_on([127, 0, 0, 2]);
    let site = web.origin("site.test");
    web.set(
        "site.test",
        "/robots.txt",
        Canned::ok(
            "text/plain",
            format!(
                "User-agent: *\nAllow: /\nSitemap: http://127.0.0.1:{p}/sitemap.xml\n\
                 Robots-RDF: http://2130706433:{p}/robots.rdf\n"
            ),
        ),
    );
    let mut home = Canned::ok(
        "text/html",
        format!(
            "<html><head><link rel=\"hub\" href=\"http://127.0.0.1:{p}/hub\">\
             <link rel=\"self\" href=\"{site}/\"></head><body>\
             <a href=\"http://0x7f.1:{p}/hex\">a</a> <a href=\"http://[::ffff:127.0.0.1]:{p}/mapped\">b</a>\
             <a href=\"http://localhost:{p}/name\">c</a> <a href=\"http://127.1:{p}/short\">d</a>\
             <a href=\"http://169.254.169.254/latest/meta-data/\">e</a>\
             <a href=\"http://metadata.test/computeMetadata/v1/\">f</a>\
             <a href=\"/redirect\">g</a> <a href=\"/page.html\">h</a></body></html>"
        ),
    );
    home.headers.push((
        "link".into(),
        format!("<http://[::1]:{p}/hub>; rel=\"hub\""),
    ));
    web.set("site.test", "/", home);
    web.set(
        "site.test",
        "/redirect",
        Canned {
            status: 302,
            headers: vec![(
                "location".into(),
                format!("http://127.0.0.1:{p}/from-a-redirect"),
            )],
            body: std::sync::Arc::new(Vec::new()),
        },
    );
    web.set(
        "site.test",
        "/page.html",
        Canned::ok("text/html", "<p>a page</p>"),
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    let started = Instant::now();
    let o = Command::new(crawl_bin())
        .arg("crawl")
        .arg("--out")
        .arg(&out)
        .args(["--seeds", &format!("{site}/"), "--scope", "any"])
        .args(["--allow-net", "127.0.0.2/32"])
        .args(web.resolve_args(&["site.test"]))
        .args(["--resolve", "metadata.test=169.254.169.254"])
        .args(["--coop", "push", "--keep-fresh", "--run-for", "6"])
        .args(["--callback-listen", "127.0.0.2:0"])
        .args([
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
            "--progress",
            "quiet",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Nothing reached the inside, and the metadata address never held the crawl up.
    assert_eq!(inside.connections(), 0, "a connection leaked inside");
    assert!(started.elapsed() < Duration::from_secs(30));
    // The site itself was crawled.
    let asked: Vec<String> = web.log();
    assert!(
        asked.iter().any(|r| r.ends_with(" /page.html")),
        "{asked:?}"
    );
    assert!(asked.iter().any(|r| r.ends_with(" /redirect")), "{asked:?}");
    // Every refusal is counted and its host given up, with the reason.
    let s = super::listing_site::status_json(&out);
    let refused = s["net_refused"].as_u64().unwrap_or(0);
    assert!(refused >= 7, "{refused} refusals: {s}");
    let skipped = s["skipped_hosts"].to_string();
    for host in ["127.0.0.1", "localhost", "169.254.169.254", "metadata.test"] {
        assert!(skipped.contains(host), "{host} not given up: {skipped}");
    }
    assert!(
        skipped.contains("loopback") && skipped.contains("link-local"),
        "{skipped}"
    );
    let text = Command::new(crawl_bin())
        .args(["status", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("connections to addresses inside a network"),
        "{text}"
    );
    // Nothing from inside is in the archive.
    let log = std::fs::read_to_string(out.join("crawl.log")).unwrap_or_default();
    for l in log.lines().filter(|l| l.contains(&format!(":{p}/"))) {
        assert!(l.contains("refused"), "{l}");
    }
}

#[test]
fn a_seed_inside_a_network_is_refused_naming_the_option_that_allows_it() {
    let inside = Inside::start();
    let p = inside.port;
    let dir = tempfile::tempdir().unwrap();
    for seed in [
        format!("http://127.0.0.1:{p}/"),
        format!("http://localhost:{p}/"),
        format!("http://2130706433:{p}/"),
    ] {
        let o = Command::new(crawl_bin())
            .arg("crawl")
            .arg("--out")
            .arg(dir.path().join("refused"))
            .args(["--seeds", &seed, "--progress", "quiet"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{seed}: {err}");
        assert!(
            err.contains("loopback") && err.contains("--allow-net"),
            "{seed}: {err}"
        );
    }
    assert_eq!(inside.connections(), 0);
    // Allowed by the operator, the same seed is crawled.
    let o = Command::new(crawl_bin())
        .arg("crawl")
        .arg("--out")
        .arg(dir.path().join("allowed"))
        .args(["--seeds", &format!("http://127.0.0.1:{p}/")])
        .args([
            "--allow-net",
            "127.0.0.1/32",
            "--timeout",
            "2",
            "--run-for",
            "3",
        ])
        .args(["--progress", "quiet"])
        .args(["--coop", "off"])
        .output()
        .unwrap();
    drop(o);
    assert!(
        inside.connections() > 0,
        "the allowed seed was not asked for"
    );
}

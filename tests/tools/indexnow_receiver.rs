//! The crawler's IndexNow endpoint (`--indexnow-listen`), fed by a PyPI IndexNow client we did
//! not write (index-now-for-python), as a site's CMS would: a first submission is received with
//! its key's proof pending (202), the key file is fetched from the site once, and only then are
//! the submitted pages fetched; a later one is answered 200, GET as POST. Hostile submissions
//! are refused by the protocol's statuses (400, 422, 429, 403), and a key whose file does not
//! hold it changes nothing: none of its URLs is requested. Asserted from the server's side.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{HostSpec, TestWeb};

const KEY: &str = "3f1c0b9e7a5d4c2b8e6f";
const WRONG: &str = "aaaabbbbccccdddd";

struct Crawl(Child);

impl Drop for Crawl {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the reference client: `code` with `auth(host, key, location)`, `endpoint` and `submit`
/// in scope; prints the status it returned.
fn client(python: &std::path::Path, endpoint: &str, code: &str) -> u16 {
    let script = format!(
        "from index_now import IndexNowAuthentication as A, submit_url_to_index_now as one, submit_urls_to_index_now as many\n\
         endpoint = {endpoint:?}\n\
         def auth(host, key, location): return A(host=host, api_key=key, api_key_location=location)\n\
         print({code})\n"
    );
    let o = Command::new(python).args(["-c", &script]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    out.lines()
        .filter_map(|l| l.trim().parse().ok())
        .next_back()
        .unwrap_or_else(|| panic!("{out}\n{}", String::from_utf8_lossy(&o.stderr)))
}

/// A raw request to the endpoint, its body given on standard input: (status, body).
fn raw(endpoint: &str, method: &str, body: &str) -> (u16, String) {
    use std::io::Write;
    let script = format!(
        "import sys, requests\nr = requests.request({method:?}, {endpoint:?}, data=sys.stdin.buffer.read(), headers={{'Content-Type': 'application/json; charset=utf-8'}})\nprint(r.status_code)\nprint(r.text)\n"
    );
    let python = testkit::reference_python().unwrap();
    let mut child = Command::new(python)
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(body.as_bytes()).unwrap();
    }
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut lines = out.lines();
    let status = lines.next().and_then(|l| l.parse().ok()).unwrap_or(0);
    (status, lines.collect::<Vec<_>>().join("\n"))
}

fn wait_until(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn submissions_wait_for_their_key_and_hostile_ones_are_refused_by_the_protocol() {
    let Some(python) = testkit::reference_python() else {
        return;
    };
    let mut site = HostSpec::new("site.test", 12);
    site.files = vec![(format!("/{KEY}.txt"), format!("{KEY}\n"))];
    let mut liar = HostSpec::new("liar.test", 4);
    liar.files = vec![(format!("/{WRONG}.txt"), "not the key\n".into())];
    let web = TestWeb::start(vec![site, liar]);
    let port = testkit::free_port();
    let endpoint = format!("http://127.0.0.1:{port}/indexnow");
    let dir = tempfile::tempdir().unwrap();
    let origin = web.origin("site.test");
    let crawl = Command::new(testkit::workspace_bin("webcoop-crawl"))
        .args(["crawl", "--allow-net", "127.0.0.0/8", "--progress", "quiet"])
        .args(["--seeds", &format!("{origin}/")])
        .args([
            "--scope",
            "any",
            "--delay-min",
            "0.05",
            "--delay-factor",
            "0",
        ])
        .args(["--keep-fresh", "--refresh-cycle", "3600", "--run-for", "30"])
        .args(["--indexnow-listen", &format!("127.0.0.1:{port}")])
        .args(web.resolve_args())
        .arg("--out")
        .arg(dir.path().join("crawl"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let crawl = Crawl(crawl);
    let fetched = |host: &str, path: &str| {
        web.log()
            .iter()
            .filter(|r| r.host == host && r.target == path && r.status != 0)
            .map(|r| r.arrived)
            .collect::<Vec<_>>()
    };
    // The first pass over the site, then the endpoint is up.
    // The whole first pass (pages are fetched best first, not in order).
    wait_until("the first pass", Duration::from_secs(20), || {
        (0..12).all(|i| !fetched("site.test", &format!("/p/{i}.html")).is_empty())
    });
    wait_until("the endpoint", Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let before = Instant::now();
    web.change("site.test", "/p/3.html");
    web.change("site.test", "/p/4.html");
    let auth = format!("auth('site.test', {KEY:?}, '{origin}/{KEY}.txt')");
    let status = client(
        &python,
        &endpoint,
        &format!(
            "many({auth}, ['{origin}/p/3.html', '{origin}/p/4.html', '{origin}/new.html'], endpoint)"
        ),
    );
    assert_eq!(status, 202, "received, its key to be proved");
    // The key file is fetched, then (and only then) the submitted pages.
    wait_until(
        "the submitted pages fetched",
        Duration::from_secs(15),
        || {
            fetched("site.test", "/p/3.html")
                .iter()
                .any(|t| *t > before)
                && fetched("site.test", "/p/4.html")
                    .iter()
                    .any(|t| *t > before)
        },
    );
    let key_at = fetched("site.test", &format!("/{KEY}.txt"));
    assert_eq!(key_at.len(), 1, "the key file once");
    for page in ["/p/3.html", "/p/4.html", "/new.html"] {
        for t in fetched("site.test", page).iter().filter(|t| **t > before) {
            assert!(*t > key_at[0], "{page} fetched before its key was proved");
        }
    }
    // Proved: a GET is taken at once, and answered 200; the key file is not asked again.
    web.change("site.test", "/p/5.html");
    let again = Instant::now();
    let status = client(
        &python,
        &endpoint,
        &format!("one({auth}, '{origin}/p/5.html', endpoint)"),
    );
    assert_eq!(status, 200);
    wait_until("the page of a proved key", Duration::from_secs(10), || {
        fetched("site.test", "/p/5.html").iter().any(|t| *t > again)
    });
    assert_eq!(fetched("site.test", &format!("/{KEY}.txt")).len(), 1);

    // A key its file does not hold: received, then refused; none of its URLs requested.
    let liar = web.origin("liar.test");
    let lie = format!("auth('liar.test', {WRONG:?}, '{liar}/{WRONG}.txt')");
    let status = client(
        &python,
        &endpoint,
        &format!("many({lie}, ['{liar}/p/1.html', '{liar}/p/2.html'], endpoint)"),
    );
    assert_eq!(status, 202);
    wait_until("the liar's key file read", Duration::from_secs(15), || {
        !fetched("liar.test", &format!("/{WRONG}.txt")).is_empty()
    });
    wait_until("the liar's key refused", Duration::from_secs(5), || {
        client(
            &python,
            &endpoint,
            &format!("one({lie}, '{liar}/p/3.html', endpoint)"),
        ) == 403
    });
    std::thread::sleep(Duration::from_secs(2));
    for p in ["/p/1.html", "/p/2.html", "/p/3.html"] {
        assert!(
            fetched("liar.test", p).is_empty(),
            "{p} of a refused key fetched"
        );
    }

    // What the protocol refuses, by its statuses.
    let body = |host: &str, key: &str, urls: &[String]| {
        serde_json::json!({"host": host, "key": key, "urlList": urls}).to_string()
    };
    let page = format!("{origin}/p/1.html");
    for (what, b, want) in [
        ("not JSON", "{nope".to_string(), 400),
        ("no URL", body("site.test", KEY, &[]), 400),
        (
            "a URL of another host",
            body("site.test", KEY, &[format!("{liar}/p/1.html")]),
            422,
        ),
        (
            "a key not of the protocol's form",
            body("site.test", "bad key!", std::slice::from_ref(&page)),
            422,
        ),
        (
            "more than 10,000 URLs",
            body(
                "site.test",
                KEY,
                &(0..10_001)
                    .map(|i| format!("{origin}/x/{i}"))
                    .collect::<Vec<_>>(),
            ),
            400,
        ),
    ] {
        let (status, text) = raw(&endpoint, "POST", &b);
        assert_eq!(status, want, "{what}: {text}");
    }
    let (status, _) = raw(&endpoint, "GET", "");
    assert_eq!(status, 400, "a GET without url and key");
    // A host may not submit more than its hour's share.
    let flood: Vec<String> = (0..9_000).map(|i| format!("{origin}/f/{i}")).collect();
    let (first, text) = raw(&endpoint, "POST", &body("site.test", KEY, &flood));
    assert_eq!(first, 200, "{text}");
    let (second, text) = raw(&endpoint, "POST", &body("site.test", KEY, &flood[..2_000]));
    assert_eq!(second, 429, "{text}");
    // Another site's share is its own.
    let (other, text) = raw(
        &endpoint,
        "POST",
        &body("liar.test", WRONG, &[format!("{liar}/p/9.html")]),
    );
    assert_eq!(other, 403, "{text}");
    drop(crawl);
}

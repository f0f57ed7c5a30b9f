//! Web Bot Auth end to end, each side checked by an implementation we did not write
//! (pyauth's `http-message-signatures`, tests/reference/web_bot_auth.py): the crawler signs
//! every request of a push-mode crawl through Debian's nginx, its keys rotating during it,
//! and the agent, told to take subscriptions from verified crawlers only, verifies what the
//! independent signer signs and refuses the hostile cases.

use super::crawl_coop::{Site, crawler, held, log_of, wait_for};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};
use webcoop::servers::{Killed, Nginx, http_get, http_request};
use webcoop_testkit::{reference_python, run_ok, run_reference, tool, workspace_bin};

/// Every request nginx answers, with the headers a signature lives in, one JSON line each.
const LOG_FORMAT: &str = r#"log_format wba escape=json '{"host":"$http_host","uri":"$request_uri","method":"$request_method","status":$status,"ua":"$http_user_agent","sig":"$http_signature","input":"$http_signature_input","agent":"$http_signature_agent","digest":"$http_content_digest"}';"#;

/// The shipped server block, logging every request to `log`; the last page's link (to a page
/// that does not exist) redirects to the first, so a redirect's hop is signed too.
fn logged(conf: String, log: &Path) -> String {
    conf.replacen(
        "server {",
        &format!(
            "{LOG_FORMAT}\nserver {{\n    access_log {} wba;\n    location = /p151.html {{ return 301 /p1.html; }}",
            log.display()
        ),
        1,
    )
}

/// nginx serving `root` as the origin a crawler publishes its key directory at; `directory`
/// is the location block of the well-known path.
fn key_origin(nginx: &Path, root: &Path, directory: &str) -> Nginx {
    std::fs::create_dir_all(root.join(".well-known")).unwrap();
    let conf = format!(
        "server {{\n    listen 80;\n    root /unused;\n    location = /.well-known/http-message-signatures-directory {{\n        default_type application/http-message-signatures-directory+json;\n        {directory}\n    }}\n}}\n"
    );
    Nginx::start(nginx, &conf, root)
}

/// `webcoop-crawl keys serve` on a free loopback port: a crawler's origin whose key directory
/// carries its binding signatures; stopped when dropped.
pub(crate) struct KeyServer {
    _child: Killed,
    /// `http://127.0.0.1:PORT`, the Signature-Agent to name.
    pub(crate) origin: String,
}

pub(crate) fn key_server(key_file: &Path) -> KeyServer {
    use std::io::BufRead;
    let mut child = Command::new(workspace_bin("webcoop-crawl"))
        .args(["keys", "serve", "--listen", "127.0.0.1:0", "--key-file"])
        .arg(key_file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Killed(child);
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_else(|| panic!("keys serve said {line:?}"));
    let origin = url
        .strip_suffix("/.well-known/http-message-signatures-directory")
        .unwrap_or_else(|| panic!("keys serve said {line:?}"))
        .to_string();
    KeyServer {
        _child: child,
        origin,
    }
}

fn keys(args: &[&OsStr]) -> String {
    let o = run_ok(
        Command::new(workspace_bin("webcoop-crawl"))
            .arg("keys")
            .args(args),
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn directory_path(root: &Path) -> PathBuf {
    root.join(".well-known/http-message-signatures-directory")
}

#[test]
fn a_signed_crawl_verifies_with_an_independent_verifier_and_keys_rotate_during_it() {
    let (Some(python), Some(_)) = (reference_python(), tool("nginx")) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("access.log");
    let Some(site) = Site::start_conf(150, |c| logged(c, &log), &["--hub-subscribers", "verified"])
    else {
        return;
    };
    let root = tmp.path().join("crawler-origin");
    std::fs::create_dir_all(root.join(".well-known")).unwrap();
    let key_file = tmp.path().join("keys.json");
    let first = keys(&["new".as_ref(), "--key-file".as_ref(), key_file.as_os_str()]);
    // The crawler's origin serves its directory signed; the file written beside it is what
    // the independent verifier reads the keys from.
    let origin = key_server(&key_file);
    let agent = origin.origin.clone();
    let publish = || {
        keys(&[
            "directory".as_ref(),
            "--key-file".as_ref(),
            key_file.as_os_str(),
            "--output".as_ref(),
            directory_path(&root).as_os_str(),
        ])
    };
    publish();

    let out = tmp.path().join("crawl");
    let c = crawler(
        &site,
        &out,
        "push",
        60,
        &[
            "--callback-listen",
            "127.0.0.1:0",
            "--signing-key",
            key_file.to_str().unwrap(),
            "--signature-agent",
            &agent,
            // Page by page, so that both keys sign pages.
            "--coop-snapshots",
            "false",
        ],
    );
    wait_for("the first pages", Duration::from_secs(20), || {
        log_of(&out).lines().count() >= 10
    });
    // Rotation: a new key, published beside the old one, signs from now on.
    let second = keys(&["new".as_ref(), "--key-file".as_ref(), key_file.as_os_str()]);
    publish();
    wait_for("the first crawl", Duration::from_secs(40), || {
        held(&out) == site.truth()
    });
    wait_for(
        "the subscription the verified-only hub accepted",
        Duration::from_secs(15),
        || log_of(&out).contains("202 "),
    );
    wait_for("the redirect", Duration::from_secs(15), || {
        log_of(&out).contains("p151.html")
    });
    drop(c);

    // The served directory binds both keys to its authority, for an independent verifier.
    let served: Value = serde_json::from_str(&run_reference(
        &python,
        "web_bot_auth.py",
        &[
            "verify-directory".as_ref(),
            format!("{agent}/.well-known/http-message-signatures-directory").as_ref(),
        ],
    ))
    .unwrap();
    assert_eq!(
        served["content_type"],
        "application/http-message-signatures-directory+json"
    );
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    assert_eq!(served["bound"], serde_json::json!(both), "{served}");

    // Only the crawler's requests: the agent asks nginx about its files too, unsigned.
    let crawler_lines: String = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"ua\":\"webcoop-crawl/"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        crawler_lines
            .lines()
            .any(|l| l.contains("\"uri\":\"/p151.html\"") && l.contains("\"status\":301")),
        "the redirect was followed: {}",
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| l.contains("p151"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let crawler_log = tmp.path().join("crawler.log");
    std::fs::write(&crawler_log, &crawler_lines).unwrap();
    let summary: Value = serde_json::from_str(&run_reference(
        &python,
        "web_bot_auth.py",
        &[
            "verify-log".as_ref(),
            crawler_log.as_os_str(),
            directory_path(&root).as_os_str(),
        ],
    ))
    .unwrap();
    eprintln!("independent verifier: {summary}");
    let total = summary["total"].as_u64().unwrap();
    assert!(total >= 150, "{summary}");
    assert_eq!(summary["verified"], total, "{summary}");
    assert!(
        crawler_lines.contains("\"method\":\"POST\""),
        "the hub subscription is among the verified requests"
    );
    assert_eq!(
        summary["keyids"],
        serde_json::json!(both),
        "both keys signed: {summary}"
    );
    assert_eq!(
        summary["agents"],
        serde_json::json!([format!("\"{agent}\"")])
    );

    // The agent named the crawler by its directory, and fetched that directory rarely.
    let metrics = http_get(site.nginx.addr, "/.well-known/webcoop/metrics", &[]).unwrap();
    let text = String::from_utf8_lossy(&metrics.body);
    let identity = format!("identity=\"{agent}/.well-known/http-message-signatures-directory\"");
    assert!(
        text.lines()
            .any(|l| l.contains(&identity) && l.contains("endpoint=\"hub\"")),
        "{text}"
    );
    let fetches: f64 = text
        .lines()
        .find(|l| l.starts_with("webcoop_key_directory_fetches_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(
        (1.0..=3.0).contains(&fetches),
        "one fetch, one more for the new key: {fetches}"
    );
}

/// The form of a subscription to the site's changes feed.
fn hub_form(site: &Site) -> String {
    format!(
        "hub.mode=subscribe&hub.topic={}.well-known%2Fwebcoop%2Fchanges&hub.callback=http%3A%2F%2F127.0.0.1%3A9%2Fcb",
        site.nginx.url().replace(':', "%3A").replace('/', "%2F")
    )
}

/// A hub subscription request with `headers`, sent through nginx as `host`.
fn subscribe(
    site: &Site,
    host: &str,
    headers: &[(String, String)],
) -> (u16, String, Option<String>) {
    let body = hub_form(site);
    let mut h: Vec<(&str, &str)> = vec![
        ("Host", host),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    h.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let r = http_request(
        site.nginx.addr,
        "POST",
        "/.well-known/webcoop/hub",
        &h,
        body.as_bytes(),
    )
    .unwrap();
    let asks = r.header("accept-signature").map(str::to_string);
    (
        r.status,
        String::from_utf8_lossy(&r.body).into_owned(),
        asks,
    )
}

/// The headers the independent signer makes for `method url`, naming `agent`.
pub(super) fn signed(
    python: &Path,
    key: &Path,
    method: &str,
    url: &str,
    agent: &str,
    times: Option<(i64, i64)>,
) -> Vec<(String, String)> {
    let mut args: Vec<String> = vec![
        "sign".into(),
        key.display().to_string(),
        method.into(),
        url.into(),
        agent.into(),
    ];
    if let Some((created, expires)) = times {
        args.push(created.to_string());
        args.push(expires.to_string());
    }
    reference_headers(python, &args)
}

/// The headers the independent signer makes for a form POST of `body` to `url`: covering the
/// method, target, authority and `Content-Digest`, as a hub asks.
fn signed_post(
    python: &Path,
    key: &Path,
    url: &str,
    agent: &str,
    body: &str,
) -> Vec<(String, String)> {
    let args: Vec<String> = vec![
        "sign-post".into(),
        key.display().to_string(),
        url.into(),
        agent.into(),
        body.into(),
    ];
    reference_headers(python, &args)
}

fn reference_headers(python: &Path, args: &[String]) -> Vec<(String, String)> {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let v: Value = serde_json::from_str(&run_reference(python, "web_bot_auth.py", &args)).unwrap();
    v.as_object()
        .unwrap()
        .iter()
        .map(|(n, v)| (n.clone(), v.as_str().unwrap().to_string()))
        .collect()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn the_agent_verifies_an_independent_signer_and_refuses_the_hostile() {
    let (Some(python), Some(nginx)) = (reference_python(), tool("nginx")) else {
        return;
    };
    let Some(site) = Site::start_conf(
        3,
        |c| c.replace("# auth_request", "auth_request"),
        &[
            "--hub-subscribers",
            "verified",
            "--rate-verified",
            "4",
            "--rate-unverified",
            "3",
        ],
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("key.json");
    let good_root = tmp.path().join("good");
    std::fs::create_dir_all(good_root.join(".well-known")).unwrap();
    run_reference(
        &python,
        "web_bot_auth.py",
        &[
            "keygen".as_ref(),
            key.as_os_str(),
            directory_path(&good_root).as_os_str(),
        ],
    );
    // The independent signer's key, its directory served signed by `keys serve`.
    let good = key_server(&key);
    let good_agent = good.origin.clone();
    let host = site.nginx.addr.to_string();
    let hub = format!("{}.well-known/webcoop/hub", site.nginx.url());
    let form = hub_form(&site);

    // Unsigned: refused, and asked for a signature over the method, target and body.
    let (status, body, asks) = subscribe(&site, &host, &[]);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("not signed"), "{body}");
    let asks = asks.expect("Accept-Signature");
    for c in [
        "\"@method\"",
        "\"@target-uri\"",
        "\"content-digest\"",
        "tag=\"web-bot-auth\"",
    ] {
        assert!(asks.contains(c), "{asks}");
    }

    // A valid page-request signature (the draft's minimum) replayed on the hub: refused.
    let page = signed(&python, &key, "POST", &hub, &good_agent, None);
    let (status, body, _) = subscribe(&site, &host, &page);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("must cover @method"), "{body}");

    // Signed over another body (a digest that does not describe this one): refused.
    let other_body = signed_post(&python, &key, &hub, &good_agent, "hub.mode=unsubscribe");
    let (status, body, _) = subscribe(&site, &host, &other_body);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("does not match the body"), "{body}");

    // The same key's directory served as a plain file, without binding signatures: its keys
    // are not believed.
    let unbound = key_origin(&nginx, &good_root, "");
    let h = signed_post(
        &python,
        &key,
        &hub,
        &format!("http://{}", unbound.addr),
        &form,
    );
    let (status, body, _) = subscribe(&site, &host, &h);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("binding signature"), "{body}");

    // Signed by the independent implementation as the hub asked: accepted.
    let headers = signed_post(&python, &key, &hub, &good_agent, &form);
    let (status, body, _) = subscribe(&site, &host, &headers);
    assert_eq!(status, 202, "{body}");

    // The same request again: a replay.
    let (status, body, _) = subscribe(&site, &host, &headers);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("replay"), "{body}");

    // A forged signature.
    let mut forged = signed_post(&python, &key, &hub, &good_agent, &form);
    for (n, v) in forged.iter_mut() {
        if n == "signature" {
            let flip = if v.as_bytes()[10] == b'A' { "B" } else { "A" };
            v.replace_range(10..11, flip);
        }
    }
    let (status, body, _) = subscribe(&site, &host, &forged);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("does not verify"), "{body}");

    // Expired.
    let t = now();
    let old = signed(
        &python,
        &key,
        "POST",
        &hub,
        &good_agent,
        Some((t - 900, t - 600)),
    );
    let (status, body, _) = subscribe(&site, &host, &old);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("expired"), "{body}");

    // Made for another site and replayed here with that site's name.
    let other = signed(
        &python,
        &key,
        "POST",
        "http://other.example/.well-known/webcoop/hub",
        &good_agent,
        None,
    );
    let (status, body, _) = subscribe(&site, "other.example", &other);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("not this site"), "{body}");

    // A key the directory does not publish.
    let stranger = tmp.path().join("stranger.json");
    run_reference(
        &python,
        "web_bot_auth.py",
        &[
            "keygen".as_ref(),
            stranger.as_os_str(),
            tmp.path().join("stranger-directory.json").as_os_str(),
        ],
    );
    let h = signed_post(&python, &stranger, &hub, &good_agent, &form);
    let (status, body, _) = subscribe(&site, &host, &h);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("holds no valid key"), "{body}");

    // Directories that must not be believed: one that redirects, one too large, one at an
    // address the operator did not allow.
    let redirecting = key_origin(
        &nginx,
        &tmp.path().join("redirecting"),
        &format!("return 302 {good_agent}/.well-known/http-message-signatures-directory;"),
    );
    let huge_root = tmp.path().join("huge");
    let huge = key_origin(&nginx, &huge_root, "");
    let mut big = std::fs::read_to_string(directory_path(&good_root)).unwrap();
    big.insert_str(1, &format!("\"padding\":\"{}\",", "x".repeat(1 << 20)));
    std::fs::write(directory_path(&huge_root), big).unwrap();
    for (agent, why) in [
        (format!("http://{}", redirecting.addr), "redirect"),
        (format!("http://{}", huge.addr), "larger than"),
        ("https://10.1.2.3".to_string(), "--allow-callback-net"),
        ("http://www.example.org".to_string(), "must be https"),
    ] {
        let h = signed_post(&python, &key, &hub, &agent, &form);
        let (status, body, _) = subscribe(&site, &host, &h);
        assert_eq!(status, 403, "{agent}: {body}");
        assert!(body.contains(why), "{agent}: {body}");
    }

    // Rates: four requests a minute for the verified signer, three for an unsigned address,
    // snapshots counted through nginx's auth_request.
    let changes = format!("{}.well-known/webcoop/changes?since=0", site.nginx.url());
    let get = |path: &str, headers: &[(String, String)]| {
        let mut h: Vec<(&str, &str)> = vec![("Host", host.as_str())];
        h.extend(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        http_request(site.nginx.addr, "GET", path, &h, b"").unwrap()
    };
    let snapshot_path = "/.well-known/webcoop/snapshot/none.warc.zst";
    for _ in 0..3 {
        let h = signed(&python, &key, "GET", &changes, &good_agent, None);
        assert_eq!(get("/.well-known/webcoop/changes?since=0", &h).status, 200);
    }
    let h = signed(
        &python,
        &key,
        "GET",
        &format!(
            "{}{}",
            site.nginx.url().trim_end_matches('/'),
            snapshot_path
        ),
        &good_agent,
        None,
    );
    assert_eq!(get(snapshot_path, &h).status, 404, "allowed, and absent");
    let h = signed(&python, &key, "GET", &changes, &good_agent, None);
    let r = get("/.well-known/webcoop/changes?since=0", &h);
    assert_eq!(r.status, 429, "the verified signer's fifth request");
    assert!(r.header("accept-signature").is_none());
    for _ in 0..2 {
        assert_eq!(get("/.well-known/webcoop/changes?since=0", &[]).status, 200);
    }
    assert_eq!(get(snapshot_path, &[]).status, 404);
    let r = get("/.well-known/webcoop/changes?since=0", &[]);
    assert_eq!(r.status, 429, "the unsigned address's fourth request");
    assert!(r.header("accept-signature").is_some());
    assert_eq!(get(snapshot_path, &[]).status, 403, "auth_request refuses");

    // The console names the verified signer and the refusals.
    let metrics = http_get(site.nginx.addr, "/.well-known/webcoop/metrics", &[]).unwrap();
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.contains("webcoop_signed_requests_total{outcome=\"invalid\"}"),
        "{text}"
    );
    assert!(
        text.contains("webcoop_rate_limited_total{outcome=\"unsigned\"} 2"),
        "{text}"
    );
}

/// `--sign-requests asked`: nothing is signed until a site answers with `Accept-Signature`;
/// the refused request goes again at once, signed, and so does everything after it there.
#[test]
fn a_crawler_that_signs_when_asked_signs_where_a_site_asks() {
    let (Some(python), Some(nginx)) = (reference_python(), tool("nginx")) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir_all(www.join("members")).unwrap();
    let page = |links: &[&str]| {
        let a: String = links
            .iter()
            .map(|l| format!("<a href=\"{l}\">{l}</a>"))
            .collect();
        format!("<html><body>{a}</body></html>")
    };
    std::fs::write(
        www.join("index.html"),
        page(&["/a.html", "/members/m.html"]),
    )
    .unwrap();
    std::fs::write(www.join("a.html"), page(&["/b.html"])).unwrap();
    std::fs::write(www.join("b.html"), page(&[])).unwrap();
    std::fs::write(www.join("members/m.html"), page(&["/c.html"])).unwrap();
    std::fs::write(www.join("c.html"), page(&[])).unwrap();
    let log = tmp.path().join("access.log");
    let conf = format!(
        "{LOG_FORMAT}\nserver {{\n    listen 80;\n    root /unused;\n    access_log {} wba;\n    location /members/ {{\n        if ($http_signature = \"\") {{\n            add_header Accept-Signature '{}' always;\n            return 403;\n        }}\n    }}\n}}\n",
        log.display(),
        r#"sig1=("@authority" "signature-agent";key="sig1");created;expires;tag="web-bot-auth""#
    );
    let site = Nginx::start(&nginx, &conf, &www);
    let root = tmp.path().join("crawler-origin");
    let origin = key_origin(&nginx, &root, "");
    let key_file = tmp.path().join("keys.json");
    keys(&["new".as_ref(), "--key-file".as_ref(), key_file.as_os_str()]);
    keys(&[
        "directory".as_ref(),
        "--key-file".as_ref(),
        key_file.as_os_str(),
        "--output".as_ref(),
        directory_path(&root).as_os_str(),
    ]);
    let out = tmp.path().join("crawl");
    run_ok(
        crate::common::loopback_crawl()
            .args(["--sign-requests", "asked", "--signing-key"])
            .arg(&key_file)
            .args(["--signature-agent", &format!("http://{}", origin.addr)])
            .arg("--seeds")
            .arg(format!("{}index.html", site.url()))
            .arg("--out")
            .arg(&out),
    );
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(String, u64, bool)> = lines
        .iter()
        .map(|v| {
            (
                v["uri"].as_str().unwrap().to_string(),
                v["status"].as_u64().unwrap(),
                !v["sig"].as_str().unwrap().is_empty(),
            )
        })
        .collect();
    let asked = seen
        .iter()
        .position(|(u, s, signed)| u == "/members/m.html" && *s == 403 && !signed)
        .unwrap_or_else(|| panic!("refused unsigned first: {seen:?}"));
    assert_eq!(
        seen[asked + 1],
        ("/members/m.html".to_string(), 200, true),
        "sent again at once, signed: {seen:?}"
    );
    assert!(
        seen[..asked].iter().all(|(_, _, signed)| !signed),
        "{seen:?}"
    );
    assert!(
        seen[asked + 1..].iter().all(|(_, _, signed)| *signed),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|(u, s, _)| u == "/c.html" && *s == 200),
        "{seen:?}"
    );
    // What was signed verifies with the independent implementation.
    let signed_lines: String = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("\"sig\":\"\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let signed_log = tmp.path().join("signed.log");
    std::fs::write(&signed_log, signed_lines).unwrap();
    let summary: Value = serde_json::from_str(&run_reference(
        &python,
        "web_bot_auth.py",
        &[
            "verify-log".as_ref(),
            signed_log.as_os_str(),
            directory_path(&root).as_os_str(),
        ],
    ))
    .unwrap();
    assert_eq!(summary["verified"], summary["total"], "{summary}");
}

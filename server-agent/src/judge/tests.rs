//! The judge through its interface, against a server of the test's own on loopback: what it
//! asks (a stranger's GET: the site's `Host`, a crawler's `User-Agent`, identity coding, no
//! cookie, from the source address it was given) and the verdict each kind of answer earns.

use super::{Ask, Judge, JudgeSettings, Refusal, Verdict};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use url::Url;
use webcoop_protocol::validator::Sha256Digest;

const FILE: &[u8] = b"<h1>the file</h1>\n";

/// Each request's head and the address it came from.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A server answering each request by its path, recording what it was asked.
fn server() -> (Url, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}/", listener.local_addr().unwrap())).unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).is_ok_and(|n| n == 1) {
                    head.push(b[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let peer = s
                    .peer_addr()
                    .map(|a| a.ip().to_string())
                    .unwrap_or_default();
                log.lock().unwrap().push((head.clone(), peer));
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let ok = |body: &[u8], extra: &str| {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(body);
                    r
                };
                let answer = match path.as_str() {
                    "/public.html" => ok(FILE, ""),
                    "/runs.php" => ok(b"<h1>the output of the file</h1>\n", ""),
                    "/gzipped.html" => ok(FILE, "Content-Encoding: gzip\r\n"),
                    "/moved.html" => {
                        b"HTTP/1.1 301 Moved\r\nLocation: /elsewhere.html\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
                    }
                    "/slow.html" => {
                        std::thread::sleep(Duration::from_secs(3));
                        ok(FILE, "")
                    }
                    _ => b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_vec(),
                };
                let _ = s.write_all(&answer);
            });
        }
    });
    (url, seen)
}

fn ask(path: &str) -> Ask {
    Ask {
        path: path.into(),
        sha256: Sha256Digest::of(FILE),
        size: FILE.len() as u64,
    }
}

/// A judge of `www.example.org` asking the server at `server_url` from 127.0.0.1, a second
/// allowed for each answer.
fn judge_of(server_url: &Url) -> Judge {
    let settings = JudgeSettings {
        server_url: server_url.clone(),
        server_url_given: true,
        source: None,
        connections: 2,
        timeout: Duration::from_secs(1),
    };
    let base = Url::parse("http://www.example.org/").unwrap();
    Judge::new(&base, &settings, server_url, "127.0.0.1".parse().unwrap()).unwrap()
}

#[test]
fn a_file_is_public_only_when_a_stranger_is_served_its_bytes() {
    let (server_url, seen) = server();
    let judge = judge_of(&server_url);
    let paths = [
        "public.html",
        "runs.php",
        "secret.html",
        "moved.html",
        "gzipped.html",
        "slow.html",
    ];
    let verdicts = judge.judge(paths.iter().map(|p| ask(p)).collect());
    assert_eq!(verdicts.len(), paths.len());
    assert_eq!(verdicts[0], Verdict::Public);
    assert_eq!(verdicts[1], Verdict::Refused(Refusal::NotTheFile));
    assert_eq!(verdicts[2], Verdict::Refused(Refusal::Status(403)));
    assert!(
        matches!(&verdicts[3], Verdict::Refused(Refusal::Redirect(301, to)) if to.contains("elsewhere")),
        "{:?}",
        verdicts[3]
    );
    assert!(
        matches!(&verdicts[4], Verdict::Refused(Refusal::Coded(c)) if c == "gzip"),
        "{:?}",
        verdicts[4]
    );
    // No answer in time: nothing is decided, the file is neither published nor refused.
    assert!(
        matches!(&verdicts[5], Verdict::Unknown(why) if why.contains("no answer in time")),
        "{:?}",
        verdicts[5]
    );
    // Asked as a stranger: the site's name, a crawler's agent, identity, no cookie.
    let seen = seen.lock().unwrap();
    let (head, peer) = seen
        .iter()
        .find(|(h, _)| h.starts_with("GET /public.html "))
        .unwrap();
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("host: www.example.org\r\n"), "{head}");
    assert!(
        lower.contains("user-agent: mozilla/5.0 (compatible; webcoop-crawl/"),
        "{head}"
    );
    assert!(lower.contains("accept-encoding: identity\r\n"), "{head}");
    assert!(
        !lower.contains("cookie:") && !lower.contains("authorization:"),
        "{head}"
    );
    assert_eq!(peer, "127.0.0.1");
}

#[test]
fn a_server_out_of_reach_leaves_every_file_undecided() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server_url = Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
    let judge = judge_of(&server_url);
    let verdicts = judge.judge(vec![ask("a.html"), ask("b.html"), ask("c.html")]);
    assert_eq!(verdicts.len(), 3);
    for v in verdicts {
        assert!(
            matches!(&v, Verdict::Unknown(why) if why.contains("cannot connect")),
            "{v:?}"
        );
    }
}

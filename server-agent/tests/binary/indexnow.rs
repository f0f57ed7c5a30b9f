//! The agent's IndexNow pings as a process without `--listen`: it serves nothing, and the
//! pings still go out as its change log moves (they were accepted, the key file published, and
//! nothing ever sent). The twin: an endpoint in a network the agent was not allowed to reach
//! gets nothing, and the log says why.

use crate::common::BASE;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop_testkit::static_site::StaticServer;

const KEY: &str = "abcdef0123456789-key";

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback IndexNow endpoint: the JSON bodies it received.
fn endpoint(rt: &tokio::runtime::Runtime) -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let received: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/indexnow",
        axum::routing::post(move |body: bytes::Bytes| {
            let sink = sink.clone();
            async move {
                if let Ok(v) = serde_json::from_slice(&body) {
                    sink.lock().unwrap().push(v);
                }
                axum::http::StatusCode::ACCEPTED
            }
        }),
    );
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/indexnow", listener.local_addr().unwrap());
    rt.spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

fn start(
    www: &std::path::Path,
    state: &std::path::Path,
    server: &StaticServer,
    endpoint: &str,
    allow: bool,
    log: &std::path::Path,
) -> Running {
    let mut c = Command::new(env!("CARGO_BIN_EXE_webcoop-agent"));
    c.arg("--docroot")
        .arg(www)
        .arg("--state")
        .arg(state)
        .args(["--base-url", BASE, "--debounce-ms", "50"])
        .args(["--server-url", &server.url()])
        .args(["--indexnow-endpoint", endpoint, "--indexnow-key", KEY])
        .env("WEBCOOP_LOG", "info")
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    if allow {
        c.args(["--allow-callback-net", "127.0.0.0/8"]);
    }
    Running(c.spawn().unwrap())
}

fn posted(received: &Mutex<Vec<serde_json::Value>>) -> Vec<String> {
    received
        .lock()
        .unwrap()
        .iter()
        .flat_map(|b| b["urlList"].as_array().cloned().unwrap_or_default())
        .filter_map(|u| u.as_str().map(str::to_string))
        .collect()
}

#[test]
fn pings_go_out_without_listen_and_never_into_a_network_not_allowed() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for allow in [true, false] {
        let (url, received) = endpoint(&rt);
        let tmp = tempfile::tempdir().unwrap();
        let www = tmp.path().join("www");
        std::fs::create_dir(&www).unwrap();
        let www = www.canonicalize().unwrap();
        std::fs::write(www.join("index.html"), "<p>home</p>").unwrap();
        let server = StaticServer::serve(&www);
        let log = tmp.path().join("agent.log");
        let _agent = start(&www, &tmp.path().join("state"), &server, &url, allow, &log);
        // The first run publishes the key file; the pings start from the head it found.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !www.join(format!("{KEY}.txt")).exists() || !www.join("robots.rdf").exists() {
            assert!(Instant::now() < deadline, "the agent did not publish");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(500));
        std::fs::write(www.join("new.html"), "<p>new</p>").unwrap();
        let want = format!("{BASE}new.html");
        let deadline = Instant::now() + Duration::from_secs(if allow { 20 } else { 6 });
        while Instant::now() < deadline && !posted(&received).contains(&want) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if allow {
            assert!(posted(&received).contains(&want), "nothing posted\n{text}");
            let first = received.lock().unwrap()[0].clone();
            assert_eq!(first["key"], KEY);
            assert_eq!(first["host"], "site.example");
            assert_eq!(first["keyLocation"], format!("{BASE}{KEY}.txt"));
        } else {
            assert!(
                received.lock().unwrap().is_empty(),
                "posted into a network not allowed"
            );
            assert!(text.contains("IndexNow"), "{text}");
        }
    }
}

//! What the hostile scenarios share: the agent binary beside Debian's nginx over a temporary
//! docroot, a loopback web whose every answer a test writes byte for byte, and small HTTP
//! helpers.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::Response;
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use webcoop::servers::Killed;
use webcoop::servers::{Nginx, example_nginx_conf, http_get};
use webcoop_testkit::{tool, workspace_bin};

pub(crate) fn agent_bin() -> PathBuf {
    workspace_bin("webcoop-agent", "webcoop-agent")
}

pub(crate) fn crawl_bin() -> PathBuf {
    workspace_bin("webcoop-crawler", "webcoop-crawl")
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// An HTTP client that goes straight to loopback (reqwest is built without a TLS provider of
/// its own: ring's is installed once).
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Polls `ok` every 50 ms until it holds, failing the test with `what` after `secs` seconds.
pub(crate) fn wait_for(secs: u64, what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A docroot served by nginx with the shipped server block (plus `extra` directives), and the
/// agent binary beside it with its service proxied under `/.well-known/webcoop/`.
pub(crate) struct AgentSite {
    pub tmp: tempfile::TempDir,
    pub www: PathBuf,
    pub nginx: Nginx,
    pub agent: Option<Killed>,
    pub agent_port: u16,
    /// The nginx server block as run (also usable as `--server-config`).
    pub server_conf: PathBuf,
    /// The agent's stderr (its log), appended to across restarts.
    pub log: PathBuf,
    args: Vec<String>,
    envs: Vec<(String, String)>,
}

impl AgentSite {
    /// `files` are written before the agent first scans; `extra` goes into nginx's server
    /// block; `args` are added to the agent's command line.
    pub(crate) fn start(
        files: &[(&str, &[u8])],
        extra: &str,
        args: &[&str],
        prepare: impl FnOnce(&Path),
    ) -> Option<AgentSite> {
        Self::start_with_env(files, extra, args, &[], prepare)
    }

    pub(crate) fn start_with_env(
        files: &[(&str, &[u8])],
        extra: &str,
        args: &[&str],
        envs: &[(&str, &str)],
        prepare: impl FnOnce(&Path),
    ) -> Option<AgentSite> {
        let nginx_bin = tool("nginx")?;
        let tmp = tempfile::tempdir().unwrap();
        let www = tmp.path().join("www");
        std::fs::create_dir(&www).unwrap();
        let www = www.canonicalize().unwrap();
        // nginx's workers run as the web user, as in production: they must reach the docroot.
        webcoop::servers::open_to_web_user(&www, false);
        for (rel, bytes) in files {
            let p = www.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        prepare(&www);
        let agent_port = free_port();
        let conf = example_nginx_conf().replacen(
            "    # The agent's service",
            &format!("{extra}\n    # The agent's service"),
            1,
        );
        let upstream = Some(([127, 0, 0, 1], agent_port).into());
        let nginx = match Nginx::start_as_web_user(&nginx_bin, &conf, &www, upstream) {
            Some(n) => n,
            None => Nginx::start_proxying(&nginx_bin, &conf, &www, upstream),
        };
        let server_conf = tmp.path().join("site.conf");
        std::fs::write(&server_conf, &conf).unwrap();
        let log = tmp.path().join("agent.log");
        let mut site = AgentSite {
            tmp,
            www,
            nginx,
            agent: None,
            agent_port,
            server_conf,
            log,
            args: args.iter().map(|s| s.to_string()).collect(),
            envs: envs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        site.start_agent();
        Some(site)
    }

    pub(crate) fn state(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    /// The agent's command line up to its own arguments.
    pub(crate) fn agent_command(&self) -> Command {
        let mut c = Command::new(agent_bin());
        c.arg("--docroot")
            .arg(&self.www)
            .arg("--state")
            .arg(self.state())
            .args(["--base-url", &self.nginx.url()]);
        c
    }

    pub(crate) fn start_agent(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut c = self.agent_command();
        c.args([
            "--listen",
            &format!("127.0.0.1:{}", self.agent_port),
            "--allow-callback-net",
            "127.0.0.0/8",
            "--hub-window-ms",
            "100",
            "--debounce-ms",
            "50",
        ])
        // nginx on this machine proxies the agent, as in production; a test that wants
        // another proxy (or none) trusted names it.
        .args(if self.args.iter().any(|a| a == "--trusted-proxy") {
            &[][..]
        } else {
            &["--trusted-proxy", "127.0.0.1/32"][..]
        })
        .args(&self.args)
        .envs(self.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::null())
        .stderr(log);
        self.agent = Some(Killed(c.spawn().unwrap()));
        let log = self.log.clone();
        wait_for(30, "the agent's service", || {
            http_get(self.nginx.addr, "/.well-known/webcoop/healthz", &[])
                .is_ok_and(|r| r.status == 200)
                || panic_if_exited(&mut self.agent, &log)
        });
    }

    /// Kills the agent as `kill -9` would.
    pub(crate) fn kill_agent(&mut self) {
        self.agent = None;
    }

    /// Starts the agent again with `more` arguments too.
    pub(crate) fn restart_agent_with(&mut self, more: &[&str]) {
        self.kill_agent();
        self.args.extend(more.iter().map(|s| s.to_string()));
        self.start_agent();
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn get(&self, path: &str, headers: &[(&str, &str)]) -> webcoop::servers::Response {
        http_get(self.nginx.addr, path, headers).unwrap()
    }

    /// The URLs robots.rdf lists, as docroot paths.
    pub(crate) fn listed(&self) -> Vec<String> {
        let r = self.get("/robots.rdf", &[]);
        assert_eq!(r.status, 200);
        let doc = webcoop_protocol::robots_rdf::parse(
            &r.body,
            &webcoop_protocol::robots_rdf::RdfLimits::default(),
        )
        .unwrap();
        let base = self.nginx.url();
        let mut out: Vec<String> = doc
            .items
            .iter()
            .map(|i| i.url.as_str().trim_start_matches(&base).to_string())
            .collect();
        out.sort();
        out
    }

    /// The newest sequence number the service reports.
    pub(crate) fn head(&self) -> u64 {
        let r = self.get("/.well-known/webcoop/healthz", &[]);
        String::from_utf8_lossy(&r.body)
            .trim()
            .trim_start_matches("ok ")
            .parse()
            .unwrap_or(0)
    }

    /// Writes a file and waits until the service has logged a change after it.
    pub(crate) fn write_and_wait(&self, rel: &str, bytes: &[u8]) {
        let before = self.head();
        let p = self.www.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        wait_for(20, &format!("the change of {rel}"), || self.head() > before);
        // robots.rdf is written right after the change is committed.
        std::thread::sleep(Duration::from_millis(200));
    }

    /// Everything the changes feed has said since the beginning.
    pub(crate) fn feed_text(&self) -> String {
        let r = self.get("/.well-known/webcoop/changes?since=0", &[]);
        String::from_utf8_lossy(&r.body).into_owned()
    }
}

fn panic_if_exited(agent: &mut Option<Killed>, log: &Path) -> bool {
    if let Some(k) = agent.as_mut()
        && let Ok(Some(status)) = k.0.try_wait()
    {
        panic!(
            "the agent exited with {status}:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
    false
}

/// POSTs `body` over HTTP/1.0 and returns the status (0 if the server hung up first).
pub(crate) fn http_post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> u16 {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(addr) else {
        return 0;
    };
    let mut head = format!(
        "POST {path} HTTP/1.0\r\nHost: cb.test\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = s.write_all(head.as_bytes());
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// One canned answer.
#[derive(Clone)]
pub(crate) struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Arc<Vec<u8>>,
}

impl Canned {
    pub(crate) fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Canned {
        Canned {
            status: 200,
            headers: vec![("content-type".into(), content_type.into())],
            body: Arc::new(body.into()),
        }
    }
}

/// POST bodies received, with `host path`.
type Posts = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A web on loopback whose answers a test writes byte for byte, per host and path; anything
/// else is 404. Every request is logged as `host path`.
pub(crate) struct HostileWeb {
    pub addr: SocketAddr,
    pages: Arc<Mutex<HashMap<(String, String), Canned>>>,
    log: Arc<Mutex<Vec<String>>>,
    posts: Posts,
    _runtime: tokio::runtime::Runtime,
}

impl HostileWeb {
    pub(crate) fn start() -> HostileWeb {
        Self::start_on([127, 0, 0, 1])
    }

    /// On another loopback address (`127.0.0.2`), so that `127.0.0.1` can stand for the
    /// inside of a network the crawler must never reach.
    pub(crate) fn start_on(ip: [u8; 4]) -> HostileWeb {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let pages: Arc<Mutex<HashMap<(String, String), Canned>>> = Arc::default();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let posts: Posts = Arc::default();
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::from(ip), 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (p, l, b) = (pages.clone(), log.clone(), posts.clone());
        runtime.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new().fallback(move |req: Request<Body>| {
                let (pages, log, bodies) = (p.clone(), l.clone(), b.clone());
                async move {
                    let host = req
                        .headers()
                        .get("host")
                        .and_then(|h| h.to_str().ok())
                        .unwrap_or("")
                        .split(':')
                        .next()
                        .unwrap_or("")
                        .to_string();
                    let path = req
                        .uri()
                        .path_and_query()
                        .map(|p| p.as_str().to_string())
                        .unwrap_or_default();
                    log.lock().unwrap().push(format!("{host} {path}"));
                    let canned = pages
                        .lock()
                        .unwrap()
                        .get(&(host.clone(), req.uri().path().to_string()))
                        .cloned();
                    if req.method() == axum::http::Method::POST {
                        let body = axum::body::to_bytes(req.into_body(), 1 << 20)
                            .await
                            .map(|b| b.to_vec())
                            .unwrap_or_default();
                        bodies
                            .lock()
                            .unwrap()
                            .push((format!("{host} {path}"), body));
                    }
                    match canned {
                        Some(c) => {
                            let mut r = Response::builder()
                                .status(StatusCode::from_u16(c.status).unwrap_or(StatusCode::OK));
                            for (n, v) in &c.headers {
                                r = r.header(n.as_str(), v.as_str());
                            }
                            r.body(Body::from(c.body.as_ref().clone())).unwrap()
                        }
                        None => Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .body(Body::from("not found"))
                            .unwrap(),
                    }
                }
            });
            let _ = axum::serve(listener, app).await;
        });
        HostileWeb {
            addr,
            pages,
            log,
            posts,
            _runtime: runtime,
        }
    }

    pub(crate) fn set(&self, host: &str, path: &str, canned: Canned) {
        self.pages
            .lock()
            .unwrap()
            .insert((host.to_string(), path.to_string()), canned);
    }

    pub(crate) fn origin(&self, host: &str) -> String {
        format!("http://{host}:{}", self.addr.port())
    }

    pub(crate) fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The bodies of the POST requests so far, with `host path`.
    pub(crate) fn posts(&self) -> Vec<(String, Vec<u8>)> {
        self.posts.lock().unwrap().clone()
    }

    /// `--resolve` arguments sending these hosts here.
    pub(crate) fn resolve_args(&self, hosts: &[&str]) -> Vec<String> {
        hosts
            .iter()
            .flat_map(|h| ["--resolve".to_string(), format!("{h}={}", self.addr.ip())])
            .collect()
    }
}

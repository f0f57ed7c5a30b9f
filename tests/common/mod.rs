//! A real agent with its HTTP service, in-process on loopback, over a temporary docroot.

#![allow(dead_code)]

pub(crate) mod subscriber;

use chrono::{TimeZone, Utc};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use webcoop_agent::Agent;
use webcoop_agent::Running;
use webcoop_agent::{AgentOptions, Config};
use webcoop_protocol::clock::ManualClock;

pub(crate) const BASE: &str = "https://site.example/";

/// Settings a test may change before starting.
pub(crate) struct Options {
    pub hub_window_ms: u64,
    pub retain_changes: Option<usize>,
    pub feed_entries: Option<usize>,
    pub delivery_timeout: Duration,
    pub drop_after: Option<u64>,
    pub indexnow: Option<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            hub_window_ms: 100,
            retain_changes: None,
            feed_entries: None,
            delivery_timeout: Duration::from_secs(2),
            drop_after: None,
            indexnow: None,
        }
    }
}

/// The agent and its service.
pub(crate) struct Site {
    /// The web server the agent asks about each file.
    pub server: webcoop_testkit::static_site::StaticServer,
    pub tmp: tempfile::TempDir,
    pub docroot: PathBuf,
    pub clock: Arc<ManualClock>,
    pub client: reqwest::Client,
    pub addr: std::net::SocketAddr,
    running: Option<Running>,
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
    options_state: PathBuf,
    config: Config,
}

pub(crate) fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The agent's configuration for a docroot judged by `server`, as the tests run it.
pub(crate) fn config_for(docroot: &Path, state: &Path, server: &str, options: &Options) -> Config {
    let cli = AgentOptions {
        docroot: Some(docroot.to_path_buf()),
        server_url: Some(server.to_string()),
        base_url: Some(BASE.into()),
        state: Some(state.to_path_buf()),
        debounce_ms: Some(30),
        listen: Some("127.0.0.1:0".into()),
        allow_callback_net: Some(vec!["127.0.0.0/8".into()]),
        hub_window_ms: Some(options.hub_window_ms),
        hub_drop_after: options.drop_after,
        retain_changes: options.retain_changes,
        feed_entries: options.feed_entries,
        indexnow_endpoint: options.indexnow.as_ref().map(|(e, _)| e.clone()),
        indexnow_key: options.indexnow.as_ref().map(|(_, k)| k.clone()),
        ..AgentOptions::default()
    };
    let mut config = Config::from_options(cli).unwrap();
    if let Some(s) = config.service.as_mut() {
        s.delivery_timeout = options.delivery_timeout;
    }
    config
}

impl Site {
    /// A docroot with `files`, its agent scanned and published, the service started.
    pub(crate) async fn start(files: &[(&str, &str)], options: Options) -> Site {
        install_tls_provider();
        let tmp = tempfile::tempdir().unwrap();
        let docroot = tmp.path().join("www");
        std::fs::create_dir(&docroot).unwrap();
        let docroot = docroot.canonicalize().unwrap();
        for (p, c) in files {
            let path = docroot.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, c).unwrap();
        }
        let state = tmp.path().join("state");
        let server = webcoop_testkit::static_site::StaticServer::serve(&docroot);
        let config = config_for(&docroot, &state, &server.url(), &options);
        let clock = Arc::new(ManualClock::new(
            Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
        ));
        let mut site = Site {
            server,
            tmp,
            docroot,
            clock,
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            addr: "127.0.0.1:0".parse().unwrap(),
            running: None,
            stop: Arc::new(AtomicBool::new(false)),
            watcher: None,
            options_state: state,
            config,
        };
        site.launch().await;
        site
    }

    async fn launch(&mut self) {
        let mut agent = Agent::open(self.config.clone(), self.clock.clone()).unwrap();
        agent.start_watching();
        agent.full_scan(false).unwrap();
        agent.publish().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let running = webcoop_agent::start_service(&self.config, self.clock.clone(), listener)
            .await
            .unwrap();
        self.addr = running.local_addr;
        agent.observe(running.observer());
        self.stop = Arc::new(AtomicBool::new(false));
        let stop = self.stop.clone();
        self.watcher = Some(std::thread::spawn(move || {
            agent.watch(&stop).unwrap();
        }));
        self.running = Some(running);
    }

    /// Stops the service and the agent, as a shutdown would; `restart` brings them back.
    pub(crate) async fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = tokio::task::spawn_blocking(move || w.join()).await;
        }
        if let Some(r) = self.running.take() {
            r.stop().await;
        }
    }

    pub(crate) async fn restart(&mut self) {
        self.shutdown().await;
        self.launch().await;
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}/.well-known/webcoop/{path}", self.addr)
    }

    pub(crate) fn topic(&self) -> String {
        format!("{BASE}.well-known/webcoop/changes")
    }

    pub(crate) fn write(&self, rel: &str, content: &str) {
        let p = self.docroot.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// The newest sequence number the service reports.
    pub(crate) async fn head(&self) -> u64 {
        let text = self
            .client
            .get(self.url("healthz"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.trim().trim_start_matches("ok ").parse().unwrap()
    }

    /// Waits until the service has seen sequence number `seq`.
    pub(crate) async fn wait_head(&self, seq: u64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.head().await < seq {
            assert!(
                Instant::now() < deadline,
                "change {seq} never reached the service"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Posts a subscription request to the hub; returns the status and text.
    pub(crate) async fn hub_request(&self, pairs: &[(&str, &str)]) -> (u16, String) {
        let mut form = form_urlencoded::Serializer::new(String::new());
        for (k, v) in pairs {
            form.append_pair(k, v);
        }
        let r = self
            .client
            .post(self.url("hub"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.finish())
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// What the service noted for the console (IndexNow answers, deliveries).
    pub(crate) fn activity(&self) -> std::sync::Arc<webcoop_agent::Activity> {
        self.running
            .as_ref()
            .map(|r| r.state.activity.clone())
            .unwrap_or_default()
    }

    pub(crate) async fn metric(&self, name: &str) -> f64 {
        let text = self
            .client
            .get(self.url("metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .filter(|l| l.starts_with(name) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
            .sum()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `webcoop-crawl crawl` for a site on loopback: politeness off, no progress shown, no
/// cooperation; the test adds its seeds, its directory and what it is about.
pub(crate) fn loopback_crawl() -> std::process::Command {
    let mut cmd = std::process::Command::new(webcoop_testkit::workspace_bin("webcoop-crawl"));
    cmd.args(["crawl", "--allow-net", "127.0.0.0/8", "--coop", "off"])
        .args([
            "--delay-min",
            "0",
            "--delay-factor",
            "0",
            "--progress",
            "quiet",
        ]);
    cmd
}

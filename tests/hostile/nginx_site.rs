//! The agent binary beside Debian's nginx over a temporary docroot: the site every scenario
//! about what the agent reveals runs against.

use super::support::{agent_bin, free_port, wait_for};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use webcoop::servers::Killed;
use webcoop::servers::{Nginx, example_nginx_conf, http_get};
use webcoop_testkit::tool;

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

//! Real `redis-server` processes on loopback for the tests of the shared frontier: one server,
//! or a Redis Cluster of three masters made with `redis-cli --cluster create`. Each runs in a
//! temporary directory of its own and is killed when dropped.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `redis-server` (append-only file `everysec`, no snapshots).
pub struct RedisServer {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
    cluster: bool,
}

/// Starts `redis-server` on `port` with its files in `dir`.
fn spawn(port: u16, dir: &Path, cluster: bool) -> Option<Child> {
    let mut cmd = Command::new("redis-server");
    cmd.current_dir(dir)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
        ])
        .args(["--dir", &dir.to_string_lossy()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if cluster {
        cmd.args([
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ]);
    }
    cmd.spawn().ok()
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free on loopback whose cluster bus port (port + 10000) is free too.
fn free_port() -> u16 {
    for _ in 0..200 {
        let p: u16 = 20_000 + (rand_u16() % 10_000);
        let a = TcpListener::bind(("127.0.0.1", p));
        let b = TcpListener::bind(("127.0.0.1", p + 10_000));
        if a.is_ok() && b.is_ok() {
            return p;
        }
    }
    panic!("no free port pair on loopback")
}

fn rand_u16() -> u16 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    ((t ^ (std::process::id() << 7)) % 65_521) as u16
}

fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

impl RedisServer {
    /// Starts a server, in cluster mode when `cluster`; none when `redis-server` is not
    /// installed.
    pub fn start(cluster: bool) -> Option<RedisServer> {
        crate::tool("redis-server")?;
        // A port found free may be taken before the server binds it: then another.
        for _ in 0..5 {
            if let Some(server) = Self::try_start(cluster) {
                return Some(server);
            }
        }
        panic!("redis-server did not start on 5 ports in a row");
    }

    fn try_start(cluster: bool) -> Option<RedisServer> {
        let dir = tempfile::tempdir().ok()?;
        let port = free_port();
        let child = spawn(port, dir.path(), cluster)?;
        let mut server = RedisServer {
            child,
            port,
            dir,
            cluster,
        };
        server.wait_up().then_some(server)
    }

    fn wait_up(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        // The server on the port must be this one: another test's, started on the same port
        // a moment before, answers a ping too, and this one then exits.
        let ours = format!("process_id:{}\r", self.child.id());
        while !cli(self.port, &["info", "server"]).is_some_and(|o| o.contains(&ours)) {
            if self.child.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        true
    }

    /// Stops the server as an operator's restart does (SIGTERM: the append-only file is
    /// written out), keeps it down for `down`, and starts it again on the same port and
    /// files.
    pub fn restart(&mut self, down: Duration) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let _ = self.child.wait();
        std::thread::sleep(down);
        let child = spawn(self.port, self.dir.path(), self.cluster)
            .unwrap_or_else(|| panic!("redis-server did not start again"));
        self.child = child;
        assert!(
            self.wait_up(),
            "redis-server did not come back on {}",
            self.port
        );
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Where it keeps its files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// A Redis Cluster of three masters, no replicas.
pub struct RedisCluster {
    /// The masters.
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts three servers in cluster mode and joins them; none without `redis-server`.
    pub fn start() -> Option<RedisCluster> {
        crate::tool("redis-cli")?;
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| RedisServer::start(true))
            .collect::<Option<_>>()?;
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args: Vec<&str> = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        cli(nodes[0].port, &args)?;
        let port = nodes[0].port;
        wait_for(|| {
            cli(port, &["cluster", "info"]).is_some_and(|i| i.contains("cluster_state:ok"))
        });
        Some(RedisCluster { nodes })
    }

    /// The frontier address of the cluster, as `--frontier` takes it.
    pub fn frontier_url(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// The nodes' URLs.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }
}

fn wait_for(mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "redis did not come up in 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

//! webcoop-testkit: what the cross-crate tests and examples use and the products never link.
//! Finding the real outside components the tests run (the Python reference clients' venv and
//! command-line tools such as GNU `patch` and `zstd`), building the workspace's binaries, a
//! tmpfs to fill, and [`testweb`], a web of generated sites with known links and traps.
//!
//! `scripts/test.sh` installs them and sets `WEBCOOP_REQUIRE_TOOLS=1`, which turns a missing
//! tool into a test failure. A plain `cargo test` on a machine without them skips those checks
//! with a message on stderr instead, so the rest of the suite still runs.

pub mod browser;
pub mod circles;
pub mod layers;
pub mod pywb;
pub mod redis;
pub mod reply_cutter;
pub mod static_site;
pub mod testweb;
pub mod webshape;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A loopback port that was free a moment ago, for a server that cannot listen on port 0 and
/// say which port it took (nginx, MariaDB, a command line's `--listen`): another process may
/// still take it first, so a start that fails to bind is the caller's to retry.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding a loopback port")
}

/// The workspace root (where the README and `scripts/` are).
pub fn workspace_root() -> PathBuf {
    let kit = Path::new(env!("CARGO_MANIFEST_DIR"));
    kit.parent().unwrap_or(kit).to_path_buf()
}

/// Whether missing tools fail the tests (set by `scripts/test.sh`).
pub fn tools_required() -> bool {
    std::env::var_os("WEBCOOP_REQUIRE_TOOLS").is_some_and(|v| v != "0" && !v.is_empty())
}

fn unavailable(what: &str, hint: &str) -> Option<PathBuf> {
    missing(what, hint)
}

/// A tool or server the test needs is not there: a failure when tools are required, else a
/// note on stderr and `None`, so the test skips.
pub fn missing<T>(what: &str, hint: &str) -> Option<T> {
    skip(&format!(
        "{what} is not available ({hint}); run scripts/test.sh to install it"
    ));
    None
}

/// A test cannot run here, for `why` (a missing tool, package or privilege): under the test
/// command (`WEBCOOP_REQUIRE_TOOLS`) that is a failure, whatever the cause; elsewhere a note on
/// stderr, and a line in `$WEBCOOP_SKIP_LOG` when set, which the test command counts.
pub fn skip(why: &str) {
    if let Some(log) = std::env::var_os("WEBCOOP_SKIP_LOG") {
        let line = format!(
            "{}: {why}\n",
            std::thread::current().name().unwrap_or("a test")
        );
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
    }
    if tools_required() {
        panic!("this test cannot run here and WEBCOOP_REQUIRE_TOOLS is set: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

/// The Python interpreter of the reference-client venv: `$WEBCOOP_PYTHON`, or
/// `target/refvenv/bin/python` as `scripts/test.sh` creates it.
pub fn reference_python() -> Option<PathBuf> {
    let candidate = std::env::var_os("WEBCOOP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/refvenv/bin/python"));
    if candidate.is_file() {
        Some(candidate)
    } else {
        unavailable(
            "the Python reference-client venv",
            &format!("{} does not exist", candidate.display()),
        )
    }
}

/// A tool whose name starts with `prefix` (Debian names some by version: `php-fpm8.2`), in
/// the PATH or the system's sbin directories.
pub fn tool_named_like(prefix: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let extra = [PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")];
    let found = std::env::split_paths(&path).chain(extra).find_map(|dir| {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
            .ok()?
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        names.sort();
        names.pop()
    });
    match found {
        Some(p) => Some(p),
        None => unavailable(prefix, &format!("no {prefix}* in the PATH")),
    }
}

/// A command-line tool on the PATH (e.g. `patch`, `zstd`, `nginx`).
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let extra = [PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")];
    std::env::split_paths(&path)
        .chain(extra)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .or_else(|| unavailable(name, "not found on PATH"))
}

/// A reference script in `tests/reference/`.
pub fn reference_script(name: &str) -> PathBuf {
    workspace_root().join("tests/reference").join(name)
}

/// Runs a command and returns its output, failing the test with its stderr when it fails.
pub fn run_ok(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed with {}:\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs a Python reference script with arguments; returns its stdout.
pub fn run_reference(python: &Path, script: &str, args: &[&std::ffi::OsStr]) -> String {
    let output = run_ok(
        Command::new(python)
            .arg(reference_script(script))
            .args(args),
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A binary of the workspace (for example `webcoop-crawl`), built first if needed so a test
/// never runs a stale one, in the profile the caller was built with (a no-op when it is up to
/// date). For tests, `cargo build --workspace --bin`: its features are then those of the
/// tests' build, which finds everything compiled (scripts/test.sh builds the binaries so
/// before the tests). For benchmarks (an optimised profile), the binary's package alone: the
/// binary a user runs.
pub fn workspace_bin(name: &str) -> PathBuf {
    use std::sync::Mutex;
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    // target/<profile>/deps/<test binary>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test binary location {}", exe.display()))
        .to_path_buf();
    let bin = profile_dir.join(name);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !built.iter().any(|b| b == name) {
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev".to_string(),
            Some(other) => other.to_string(),
            None => "dev".to_string(),
        };
        let target_dir = profile_dir.parent().unwrap_or(&profile_dir).to_path_buf();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        // Cargo gives the test process the variables of the package under test; build
        // scripts (ring's) declare some of them with rerun-if-env-changed, so passing them on
        // would rebuild half the dependency graph on every run, and again in the next build.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let cargo_config = ["CARGO_HOME", "CARGO_BUILD_", "CARGO_PROFILE_", "CARGO_NET_"]
                .iter()
                .any(|p| key.starts_with(p));
            if (key.starts_with("CARGO_") && !cargo_config) || key == "OUT_DIR" {
                command.env_remove(key.as_ref());
            }
        }
        // An optimised binary is built as its package alone, as `cargo run --release -p` and
        // `cargo install` build it: with the workspace's features unified its dependencies
        // are other code, under other symbol names than its hot-text list gives
        // (build-support/hot_text.rs). Tests share the workspace's build, built once.
        let selection = match (profile.as_str(), package_of(name)) {
            ("dev" | "test", _) | (_, None) => "--workspace".to_string(),
            (_, Some(package)) => format!("--package={package}"),
        };
        run_ok(
            command
                .args(["build", "--quiet", "--profile", &profile, &selection])
                .args(["--bin", name])
                .env("CARGO_TARGET_DIR", &target_dir)
                .current_dir(workspace_root()),
        );
        built.push(name.to_string());
    }
    assert!(bin.is_file(), "{} was not built", bin.display());
    bin
}

/// The workspace package that builds binary `name`.
fn package_of(name: &str) -> Option<&'static str> {
    match name {
        "webcoop-crawl" => Some("webcoop-crawler"),
        "webcoop-agent" => Some("webcoop-agent"),
        "webcoop-bench" => Some("webcoop"),
        _ => None,
    }
}

/// A file or directory a package installs (for example the Python docs of `python3.11-doc`).
pub fn installed_path(path: &str, package: &str) -> Option<PathBuf> {
    let p = PathBuf::from(path);
    if p.exists() {
        Some(p)
    } else {
        unavailable(path, &format!("install the Debian package {package}"))
    }
}

/// A small tmpfs mounted for a test, to fill a disk for real; unmounted when dropped.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts `size` (as mount(8) reads it: `300k`, `64m`) on a new directory; none where the
    /// process may not mount (only root may), which fails the test under `scripts/test.sh`.
    pub fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            skip("a tmpfs mount is not permitted here (mount -t tmpfs needs root)");
            return None;
        }
        Some(Tmpfs { dir })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Grows (or shrinks) it in place, keeping its files: the disk "freed".
    pub fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(self.dir.path())
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "remount {} to {size}",
            self.dir.path().display()
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// A crawl's WARC files (`DIR/warc/*`), in order.
pub fn warc_files(crawl_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(crawl_dir.join("warc"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Checks a crawl's archive (`DIR/warc/*.warc.gz`) with warcio, failing on any digest that
/// does not match, and returns its records as `(type, target URI)`; empty without the venv.
pub fn warcio_records(crawl_dir: &Path) -> Vec<(String, String)> {
    let Some(python) = reference_python() else {
        return Vec::new();
    };
    let files = warc_files(crawl_dir);
    assert!(
        !files.is_empty(),
        "no WARC files in {}",
        crawl_dir.display()
    );
    let warcio = |args: &[&str]| {
        let mut c = Command::new(&python);
        c.args(["-m", "warcio.cli"]).args(args).args(&files);
        run_ok(&mut c)
    };
    let check = warcio(&["check", "-v"]);
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(!text.contains("digest failed"), "warcio check:\n{text}");
    let index = warcio(&["index", "-f", "warc-type,warc-target-uri"]);
    String::from_utf8_lossy(&index.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["warc-type"].as_str().unwrap_or("").to_string(),
                v["warc-target-uri"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::skip;
    use std::process::Command;

    #[test]
    #[ignore = "run in a child process by the test below"]
    fn a_test_that_cannot_run() {
        skip("a test that needs what this machine lacks");
    }

    /// Under the test command a test that cannot run fails, and each skip is written to the
    /// log the command counts; elsewhere it passes with a note.
    #[test]
    fn a_skip_fails_under_the_test_command_and_is_counted_always() {
        let exe = std::env::current_exe().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skips");
        let run = |required: bool| {
            let mut c = Command::new(&exe);
            c.args(["--exact", "tests::a_test_that_cannot_run", "--ignored"])
                .env("WEBCOOP_SKIP_LOG", &log)
                .env_remove("WEBCOOP_REQUIRE_TOOLS");
            if required {
                c.env("WEBCOOP_REQUIRE_TOOLS", "1");
            }
            c.output().unwrap()
        };
        let lines = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let required = run(true);
        assert!(
            !required.status.success(),
            "a skip under the test command passed"
        );
        assert_eq!(lines(), 1);
        let elsewhere = run(false);
        assert!(elsewhere.status.success());
        assert_eq!(lines(), 2);
    }
}

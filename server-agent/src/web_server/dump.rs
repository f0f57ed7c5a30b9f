//! What the server itself says its configuration is: `nginx -T` prints every file it loaded;
//! Apache lists the files it read (`-t -D DUMP_INCLUDES`), its virtual hosts with the address
//! each answers on, and the `Define`s in effect (`-t -D DUMP_VHOSTS -D DUMP_RUN_CFG`). Each
//! is run as the running server was started (its binary, its `-c`/`-p`/`-f`/`-d`/`-D`, its
//! environment), bounded in time and in output.

use super::process::ServerProcess;
use crate::server_config::ApacheIncludes;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Time allowed to a dump.
const DUMP_TIMEOUT: Duration = Duration::from_secs(10);
/// Output kept from a dump, at most.
const DUMP_LIMIT: usize = 32 << 20;

/// What `nginx -T` printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NginxDump {
    /// The file it loaded first.
    pub(crate) main: PathBuf,
    /// Every file it loaded, with its text.
    pub(crate) files: BTreeMap<PathBuf, String>,
}

/// What Apache said of its configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ApacheDump {
    /// The files it read, each with the file and line that included it.
    pub(crate) includes: ApacheIncludes,
    /// `Define`s in effect, and the environment it was started with.
    pub(crate) defines: Vec<(String, String)>,
    /// Its `ServerRoot`.
    pub(crate) server_root: Option<PathBuf>,
    /// Its main `DocumentRoot`.
    pub(crate) main_docroot: Option<String>,
    /// Its `PidFile`.
    pub(crate) pid_file: Option<PathBuf>,
    /// Each virtual host's address as Apache resolved it, by where it is defined.
    pub(crate) vhost_addrs: HashMap<(String, usize), String>,
}

/// Runs `cmd`, reading at most [`DUMP_LIMIT`] of its output, for at most [`DUMP_TIMEOUT`].
fn run(mut cmd: Command) -> Result<(bool, String, String), String> {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{shown} cannot be run: {e}"))?;
    let read_all = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let _ = r.take(DUMP_LIMIT as u64 + 1).read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = read_all(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = read_all(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + DUMP_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{shown} took over {} s", DUMP_TIMEOUT.as_secs()));
            }
            Err(e) => return Err(format!("{shown}: {e}")),
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    if out.len() > DUMP_LIMIT {
        return Err(format!("{shown} printed over {} MiB", DUMP_LIMIT >> 20));
    }
    Ok((
        status.success(),
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    ))
}

/// The arguments of `args` that say which configuration a server reads: those named in
/// `keep` with their value; everything else (`-s reload`, `-k start`, `-t`) is left out.
fn configuration_args(args: &[String], keep: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some(flag) = keep.iter().find(|k| a.starts_with(**k)) {
            if a.len() > flag.len() {
                // `-Dname`, `-c/etc/x`.
                out.push(flag.to_string());
                out.push(a[flag.len()..].to_string());
            } else if let Some(v) = args.get(i + 1) {
                out.push(a.clone());
                out.push(v.clone());
                i += 1;
            }
        }
        i += 1;
    }
    out
}

/// The last line of what a failed command printed, for messages.
fn last_words(err: &str) -> String {
    err.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .chars()
        .take(300)
        .collect()
}

/// `nginx -T` for the running nginx.
pub(crate) fn nginx(p: &ServerProcess) -> Result<NginxDump, String> {
    let mut cmd = Command::new(&p.exe);
    cmd.args(configuration_args(&p.args, &["-p", "-c", "-g", "-e"]))
        .arg("-T");
    let (ok, out, err) = run(cmd)?;
    if !ok {
        return Err(format!(
            "{} -T failed: {}",
            p.exe.display(),
            last_words(&err)
        ));
    }
    parse_nginx_t(&out)
}

/// Parses what `nginx -T` printed: each file after `# configuration file PATH:`.
pub(crate) fn parse_nginx_t(out: &str) -> Result<NginxDump, String> {
    let mut files: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut main = None;
    let mut current: Option<(PathBuf, String)> = None;
    for line in out.split_inclusive('\n') {
        let header = line
            .trim_end_matches(['\n', '\r'])
            .strip_prefix("# configuration file ")
            .and_then(|r| r.strip_suffix(':'));
        match header {
            Some(path) => {
                if let Some((p, t)) = current.take() {
                    files.insert(p, t);
                }
                let p = PathBuf::from(path);
                main.get_or_insert_with(|| p.clone());
                current = Some((p, String::new()));
            }
            None => {
                if let Some((_, t)) = current.as_mut() {
                    t.push_str(line);
                }
            }
        }
    }
    if let Some((p, t)) = current.take() {
        files.insert(p, t);
    }
    let main = main.ok_or("nginx -T printed no configuration file")?;
    Ok(NginxDump { main, files })
}

/// Apache's account of its configuration, as the running server was started.
pub(crate) fn apache(p: &ServerProcess) -> Result<ApacheDump, String> {
    let args = configuration_args(&p.args, &["-d", "-f", "-C", "-c", "-D"]);
    let command = |dumps: &[&str]| {
        let mut cmd = match &p.env {
            Some(env) => {
                let mut c = Command::new(&p.exe);
                c.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
                c
            }
            // Debian's apache2ctl reads its envvars first; the process's own environment
            // could not be read.
            None if Path::new("/etc/apache2/envvars").is_file() => {
                let mut c = Command::new("/bin/sh");
                c.arg("-c")
                    .arg(". /etc/apache2/envvars && exec \"$0\" \"$@\"")
                    .arg(&p.exe);
                c
            }
            None => Command::new(&p.exe),
        };
        cmd.args(&args).arg("-t");
        for d in dumps {
            cmd.arg("-D").arg(d);
        }
        cmd
    };
    let (ok, out, err) = run(command(&["DUMP_INCLUDES"]))?;
    if !ok {
        return Err(format!(
            "{} -t -D DUMP_INCLUDES failed: {}",
            p.exe.display(),
            last_words(&err)
        ));
    }
    let includes = ApacheIncludes::parse(&out)?;
    let (ok, out, err) = run(command(&["DUMP_VHOSTS", "DUMP_RUN_CFG"]))?;
    if !ok {
        return Err(format!(
            "{} -t -D DUMP_VHOSTS -D DUMP_RUN_CFG failed: {}",
            p.exe.display(),
            last_words(&err)
        ));
    }
    let mut dump = parse_apache_s(&out);
    dump.includes = includes;
    // The environment's variables come after the Defines, which win.
    if let Some(env) = &p.env {
        for (k, v) in env {
            if !dump.defines.iter().any(|(n, _)| n == k) {
                dump.defines.push((k.clone(), v.clone()));
            }
        }
    }
    Ok(dump)
}

/// Parses `apache2 -S` (`DUMP_VHOSTS` and `DUMP_RUN_CFG`).
pub(crate) fn parse_apache_s(out: &str) -> ApacheDump {
    let mut d = ApacheDump::default();
    let quoted = |v: &str| v.trim().trim_matches('"').to_string();
    let mut group: Option<String> = None;
    for raw in out.lines() {
        let line = raw.trim();
        if let Some(v) = line.strip_prefix("ServerRoot:") {
            d.server_root = Some(PathBuf::from(quoted(v)));
        } else if let Some(v) = line.strip_prefix("Main DocumentRoot:") {
            d.main_docroot = Some(quoted(v));
        } else if let Some(v) = line.strip_prefix("PidFile:") {
            d.pid_file = Some(PathBuf::from(quoted(v)));
        } else if let Some(v) = line.strip_prefix("Define:") {
            let v = v.trim();
            let (k, val) = v.split_once('=').unwrap_or((v, ""));
            if !matches!(k, "DUMP_VHOSTS" | "DUMP_RUN_CFG") {
                d.defines.push((k.to_string(), val.to_string()));
            }
        } else if let Some(addr) = line.strip_suffix("is a NameVirtualHost") {
            group = Some(addr.trim().to_string());
        } else if let Some((before, at)) = line.rsplit_once('(')
            && let Some((file, n)) = at.trim_end_matches(')').rsplit_once(':')
            && let Ok(n) = n.parse::<usize>()
        {
            // `ADDR:PORT NAME (FILE:LINE)` on its own, or an entry of a group.
            let addr = if raw.starts_with(' ') || raw.starts_with('\t') {
                group.clone()
            } else {
                group = None;
                before.split_whitespace().next().map(str::to_string)
            };
            if let Some(a) = addr {
                d.vhost_addrs.insert((file.to_string(), n), a);
            }
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_t_is_split_into_its_files() {
        let out = "# configuration file /etc/nginx/nginx.conf:\nuser www-data;\nhttp { include /etc/nginx/sites-enabled/*; }\n\n\
                   # configuration file /etc/nginx/sites-enabled/default:\nserver { listen 80; }\n";
        let d = parse_nginx_t(out).unwrap();
        assert_eq!(d.main, PathBuf::from("/etc/nginx/nginx.conf"));
        assert_eq!(d.files.len(), 2);
        assert!(d.files[&PathBuf::from("/etc/nginx/sites-enabled/default")].contains("listen 80"));
        assert!(parse_nginx_t("nothing").is_err());
    }

    #[test]
    fn apache_s_names_roots_defines_and_addresses() {
        let out = [
            "VirtualHost configuration:",
            "127.0.0.1:8099         www.site.test (/tmp/ap/apache.conf:25)",
            "*:80                   is a NameVirtualHost",
            "         default server www.example.org (/etc/apache2/sites-enabled/000-default.conf:1)",
            "         port 80 namevhost www.example.org (/etc/apache2/sites-enabled/000-default.conf:1)",
            "         port 80 namevhost other.org (/etc/apache2/sites-enabled/other.conf:3)",
            "                 alias www.other.org",
            "ServerRoot: \"/tmp/ap\"",
            "Main DocumentRoot: \"/var/www/html\"",
            "PidFile: \"/tmp/ap/apache.pid\"",
            "Define: DUMP_VHOSTS",
            "Define: DUMP_RUN_CFG",
            "Define: DOCROOT=/tmp/ap/www",
            "Define: FOREGROUND",
        ]
        .join("\n");
        let d = parse_apache_s(&out);
        assert_eq!(d.server_root, Some(PathBuf::from("/tmp/ap")));
        assert_eq!(d.main_docroot.as_deref(), Some("/var/www/html"));
        assert_eq!(d.pid_file, Some(PathBuf::from("/tmp/ap/apache.pid")));
        assert_eq!(
            d.defines,
            [
                ("DOCROOT".to_string(), "/tmp/ap/www".to_string()),
                ("FOREGROUND".to_string(), String::new())
            ]
        );
        assert_eq!(
            d.vhost_addrs
                .get(&("/tmp/ap/apache.conf".to_string(), 25))
                .map(String::as_str),
            Some("127.0.0.1:8099")
        );
        assert_eq!(
            d.vhost_addrs
                .get(&("/etc/apache2/sites-enabled/other.conf".to_string(), 3))
                .map(String::as_str),
            Some("*:80")
        );
    }

    #[test]
    fn only_the_arguments_that_choose_a_configuration_are_kept() {
        let a: Vec<String> = [
            "-k",
            "start",
            "-d",
            "/srv/ap",
            "-DFOREGROUND",
            "-f",
            "x.conf",
            "-X",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            configuration_args(&a, &["-d", "-f", "-C", "-c", "-D"]),
            ["-d", "/srv/ap", "-D", "FOREGROUND", "-f", "x.conf"]
        );
        let n: Vec<String> = ["-p", "/tmp/ng", "-c", "/tmp/ng/nginx.conf", "-s", "reload"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            configuration_args(&n, &["-p", "-c", "-g", "-e"]),
            ["-p", "/tmp/ng", "-c", "/tmp/ng/nginx.conf"]
        );
    }
}

//! The web server process behind the site: the process that listens on the site's port
//! (`/proc/net/tcp*` names the socket, `/proc/PID/fd` its holders), or, where another user's
//! descriptors cannot be read, the one nginx master or Apache parent the machine runs. What
//! it is comes from its executable and its command line (nginx rewrites its title to
//! `nginx: master process /usr/sbin/nginx -c ...`, which keeps the original arguments).

use crate::server_config::ServerKind;
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

/// A listening TCP socket of this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listener {
    /// Its address (`0.0.0.0` or `::` for every address).
    pub(crate) addr: IpAddr,
    /// Its port.
    pub(crate) port: u16,
    /// Its inode, which names it in `/proc/PID/fd`.
    pub(crate) inode: u64,
}

/// A web server process, as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerProcess {
    /// Its process id.
    pub(crate) pid: u32,
    /// What it is.
    pub(crate) kind: ServerKind,
    /// Its executable (from `/proc/PID/exe`, or its command line).
    pub(crate) exe: PathBuf,
    /// Its arguments after the executable, as it was started.
    pub(crate) args: Vec<String>,
    /// Its environment, when it can be read (Apache substitutes `${VAR}` from it).
    pub(crate) env: Option<Vec<(String, String)>>,
    /// How it was found, in words.
    pub(crate) found_by: String,
}

/// Parses one of `/proc/net/tcp` or `/proc/net/tcp6`: the listening sockets.
pub(crate) fn listeners_in(text: &str, v6: bool) -> Vec<Listener> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        if f.len() < 10 || f[3] != "0A" {
            continue;
        }
        let Some((addr, port)) = f[1].split_once(':') else {
            continue;
        };
        let (Ok(port), Ok(inode)) = (u16::from_str_radix(port, 16), f[9].parse::<u64>()) else {
            continue;
        };
        let Some(addr) = (if v6 { hex_v6(addr) } else { hex_v4(addr) }) else {
            continue;
        };
        out.push(Listener { addr, port, inode });
    }
    out
}

/// `0100007F` (little-endian) as 127.0.0.1.
fn hex_v4(h: &str) -> Option<IpAddr> {
    let n = u32::from_str_radix(h, 16).ok()?;
    Some(IpAddr::V4(Ipv4Addr::from(n.swap_bytes())))
}

/// Four little-endian 32-bit words as an IPv6 address.
fn hex_v6(h: &str) -> Option<IpAddr> {
    if h.len() != 32 {
        return None;
    }
    let mut bytes = [0u8; 16];
    for w in 0..4 {
        let word = u32::from_str_radix(&h[w * 8..w * 8 + 8], 16).ok()?;
        bytes[w * 4..w * 4 + 4].copy_from_slice(&word.to_le_bytes());
    }
    let a = Ipv6Addr::from(bytes);
    Some(match a.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(a),
    })
}

/// This machine's listening sockets.
pub(crate) fn listeners() -> Vec<Listener> {
    let mut out = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        if let Ok(text) = std::fs::read_to_string(file) {
            out.extend(listeners_in(&text, v6));
        }
    }
    out
}

/// The processes holding any of these socket inodes (those whose descriptors can be read).
fn holders(inodes: &BTreeSet<u64>) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .ok()
                .and_then(|l| {
                    let s = l.to_string_lossy().into_owned();
                    s.strip_prefix("socket:[")
                        .and_then(|r| r.strip_suffix(']'))
                        .and_then(|n| n.parse::<u64>().ok())
                })
                .is_some_and(|i| inodes.contains(&i))
        });
        if holds {
            out.push(pid);
        }
    }
    out
}

/// A process's parent.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name in parentheses may hold spaces: the fields follow the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A process's command line, as arguments.
fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then_some(args)
}

/// nginx's retitled master (`nginx: master process /usr/sbin/nginx -c x`) as the arguments it
/// was started with; any other command line as it is.
fn original_args(args: Vec<String>) -> Vec<String> {
    let joined = args.join(" ");
    match joined.split_once("master process ") {
        Some((_, rest)) if args.len() == 1 || joined.starts_with("nginx:") => split_title(rest),
        _ => args,
    }
}

/// nginx's title is one string: its arguments split on spaces, where `-g` takes the rest of
/// a directive list (`-g daemon on; master_process on;`).
fn split_title(rest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = rest.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w == "-g" {
            out.push(w.to_string());
            let mut directives = Vec::new();
            while let Some(n) = words.peek() {
                if n.starts_with('-')
                    && directives.last().is_some_and(|d: &String| d.ends_with(';'))
                {
                    break;
                }
                directives.push(words.next().unwrap_or_default().to_string());
            }
            out.push(directives.join(" "));
        } else {
            out.push(w.to_string());
        }
    }
    out
}

/// What a program is, by its name (a retitled nginx process, `nginx: worker process`, too).
pub(crate) fn kind_of(program: &str) -> Option<ServerKind> {
    if program.starts_with("nginx: ") {
        return Some(ServerKind::Nginx);
    }
    let name = Path::new(program)
        .file_name()?
        .to_string_lossy()
        .to_ascii_lowercase();
    let name = name.split([':', ' ']).next().unwrap_or_default();
    if name == "nginx" || name.starts_with("nginx-") {
        Some(ServerKind::Nginx)
    } else if matches!(name, "apache2" | "httpd" | "apache") {
        Some(ServerKind::Apache)
    } else {
        None
    }
}

/// What a process is, by its command line.
fn kind_of_process(pid: u32) -> Option<ServerKind> {
    cmdline(pid).and_then(|a| a.first().and_then(|p| kind_of(p)))
}

/// The topmost process of the same server above `pid`: nginx's master above a worker (whose
/// descriptors another user may see when the workers run as that user), Apache's parent.
fn master_of(pid: u32) -> u32 {
    let Some(kind) = kind_of_process(pid) else {
        return pid;
    };
    let mut cur = pid;
    for _ in 0..8 {
        match parent_of(cur) {
            Some(p) if p > 1 && kind_of_process(p) == Some(kind) => cur = p,
            _ => break,
        }
    }
    cur
}

/// The web server process `pid`, if it is nginx or Apache.
fn server_process(pid: u32, found_by: String) -> Option<ServerProcess> {
    let args = original_args(cmdline(pid)?);
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        // A binary replaced by an upgrade shows as `/usr/sbin/nginx (deleted)`.
        .map(|p| PathBuf::from(p.to_string_lossy().trim_end_matches(" (deleted)")))
        .unwrap_or_else(|| PathBuf::from(&args[0]));
    let kind = kind_of(&exe.to_string_lossy()).or_else(|| kind_of(&args[0]))?;
    let env = std::fs::read(format!("/proc/{pid}/environ"))
        .ok()
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter_map(|kv| {
                    let kv = String::from_utf8_lossy(kv);
                    kv.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                })
                .collect()
        });
    Some(ServerProcess {
        pid,
        kind,
        exe,
        args: args[1..].to_vec(),
        env,
        found_by,
    })
}

/// The web server that listens on `port` (on one of `addrs`, or on every address), or the
/// one nginx or Apache of the machine when the listener's process cannot be seen.
pub(crate) fn find(port: u16, addrs: &[IpAddr]) -> Result<Option<ServerProcess>, String> {
    let all = listeners();
    let on_port: Vec<&Listener> = all.iter().filter(|l| l.port == port).collect();
    let wanted: Vec<&Listener> = on_port
        .iter()
        .copied()
        .filter(|l| l.addr.is_unspecified() || addrs.contains(&l.addr))
        .collect();
    let pool = if wanted.is_empty() { &on_port } else { &wanted };
    let inodes: BTreeSet<u64> = pool.iter().map(|l| l.inode).collect();
    if inodes.is_empty() {
        // Nothing listens there on this machine: the server is elsewhere.
        return Ok(None);
    }
    let pids = holders(&inodes);
    // The master: the holder whose parent holds none of the sockets.
    let master = pids
        .iter()
        .copied()
        .find(|p| parent_of(*p).is_none_or(|pp| !pids.contains(&pp)));
    if let Some(pid) = master.map(master_of) {
        return Ok(server_process(
            pid,
            format!("the process listening on port {port} (pid {pid})"),
        ));
    }
    // The sockets' holders cannot be seen (another user's process): the machine's one server.
    let mut masters = Vec::new();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Some(args) = cmdline(pid).map(original_args) else {
                continue;
            };
            let Some(kind) = args.first().and_then(|a| kind_of(a)) else {
                continue;
            };
            let parent_same = parent_of(pid)
                .and_then(cmdline)
                .map(original_args)
                .is_some_and(|pa| pa.first().and_then(|a| kind_of(a)) == Some(kind));
            if !parent_same {
                masters.push(pid);
            }
        }
    }
    match masters.as_slice() {
        [] => Ok(None),
        [pid] => Ok(server_process(
            *pid,
            format!(
                "the one web server process of the machine (pid {pid}; the listener on port {port} could not be seen)"
            ),
        )),
        several => Err(format!(
            "{} web server processes run ({}), and which listens on port {port} cannot be seen from this user: give --server-config",
            several.len(),
            several
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_tcp_is_read() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                   0: 0200007F:1FA2 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 26826 1 0\n   \
                   1: 00000000:1FA1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 26828 1 0\n   \
                   2: 0100007F:1FA2 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0\n";
        let l = listeners_in(tcp, false);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].addr, "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(l[0].port, 8098);
        assert_eq!(l[0].inode, 26826);
        assert!(l[1].addr.is_unspecified());
        let tcp6 = "header\n 0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 0:0 0:0 0 0 0 99 1\n \
                    1: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 0:0 0:0 0 0 0 98 1\n";
        let l6 = listeners_in(tcp6, true);
        assert_eq!(l6[0].addr, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(l6[0].port, 80);
        assert_eq!(l6[1].addr, "127.0.0.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn nginx_titles_keep_their_arguments() {
        assert_eq!(
            original_args(vec![
                "nginx: master process /usr/sbin/nginx -p /tmp/ng -c /tmp/ng/nginx.conf".into()
            ]),
            [
                "/usr/sbin/nginx",
                "-p",
                "/tmp/ng",
                "-c",
                "/tmp/ng/nginx.conf"
            ]
        );
        assert_eq!(
            original_args(vec![
                "nginx: master process /usr/sbin/nginx -g daemon on; master_process on;".into()
            ]),
            ["/usr/sbin/nginx", "-g", "daemon on; master_process on;"]
        );
        assert_eq!(
            original_args(vec![
                "/usr/sbin/apache2".into(),
                "-k".into(),
                "start".into()
            ]),
            ["/usr/sbin/apache2", "-k", "start"]
        );
        assert_eq!(kind_of("/usr/sbin/nginx"), Some(ServerKind::Nginx));
        assert_eq!(
            kind_of("nginx: master process /usr/sbin/nginx"),
            Some(ServerKind::Nginx)
        );
        assert_eq!(kind_of("nginx: worker process"), Some(ServerKind::Nginx));
        assert_eq!(kind_of("/usr/sbin/apache2"), Some(ServerKind::Apache));
        assert_eq!(kind_of("/usr/sbin/httpd"), Some(ServerKind::Apache));
        assert_eq!(kind_of("python3"), None);
    }

    #[test]
    fn this_process_is_found_by_its_socket_but_is_no_web_server() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(listeners().iter().any(|s| s.port == port));
        let inodes: BTreeSet<u64> = listeners()
            .iter()
            .filter(|s| s.port == port)
            .map(|s| s.inode)
            .collect();
        assert!(holders(&inodes).contains(&std::process::id()));
        // The test binary listens there; it is neither nginx nor Apache.
        assert_eq!(server_process(std::process::id(), String::new()), None);
    }
}

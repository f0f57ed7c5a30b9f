//! What the server says it is: the `Server` header of its answer to a `HEAD /`, for when its
//! process cannot be seen. nginx says `nginx` even with `server_tokens off`; Apache says
//! `Apache` even with `ServerTokens Prod`.

use crate::server_config::ServerKind;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// The `Server` header at `addr` for `host`, over plain HTTP, if it answers within a second
/// or two.
pub(crate) fn server_header(addr: SocketAddr, host: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    let req = format!(
        "HEAD / HTTP/1.0\r\nHost: {host}\r\nUser-Agent: webcoop-agent/{}\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut buf = Vec::new();
    let _ = s.take(16 << 10).read_to_end(&mut buf);
    let head = String::from_utf8_lossy(&buf);
    head.lines()
        .take_while(|l| !l.trim().is_empty())
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("server")
                .then(|| value.trim().chars().take(200).collect())
        })
}

/// The kind of server a `Server` header names.
pub(crate) fn kind_of_header(server: &str) -> Option<ServerKind> {
    let s = server.to_ascii_lowercase();
    if s.starts_with("nginx") || s.starts_with("openresty") {
        Some(ServerKind::Nginx)
    } else if s.starts_with("apache") {
        Some(ServerKind::Apache)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_name_servers() {
        assert_eq!(kind_of_header("nginx/1.22.1"), Some(ServerKind::Nginx));
        assert_eq!(kind_of_header("nginx"), Some(ServerKind::Nginx));
        assert_eq!(
            kind_of_header("Apache/2.4.62 (Debian)"),
            Some(ServerKind::Apache)
        );
        assert_eq!(kind_of_header("SimpleHTTP/0.6 Python/3.11.7"), None);
    }

    #[test]
    fn a_server_header_is_read_from_a_real_answer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 512];
            let _ = c.read(&mut buf);
            c.write_all(b"HTTP/1.0 200 OK\r\nServer: nginx/1.22.1\r\nContent-Length: 0\r\n\r\n")
                .unwrap();
        });
        assert_eq!(
            server_header(addr, "www.example.org").as_deref(),
            Some("nginx/1.22.1")
        );
        t.join().unwrap();
    }
}

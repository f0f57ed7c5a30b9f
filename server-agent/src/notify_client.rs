//! The sending side of `webcoop-agent notify`: one WebSub publish to the running agent's ping
//! endpoint, over plain HTTP/1.0 to its (loopback) listen address.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Largest answer read.
const MAX_ANSWER: u64 = 64 << 10;

/// Posts the publish form `body` to `addr`, with `secret` as a bearer token when given;
/// returns the status and the answer's text.
pub fn send_notice(
    addr: SocketAddr,
    secret: Option<&str>,
    body: &str,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut request = format!(
        "POST /.well-known/webcoop/ping HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(s) = secret {
        request.push_str(&format!("Authorization: Bearer {s}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    stream.take(MAX_ANSWER).read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("the answer is not HTTP"))?;
    Ok((status, rest.to_string()))
}

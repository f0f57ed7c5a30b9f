//! The floor's HTTP part: the pages a crawl archived fetched again, one after another on one
//! kept-alive connection, by the crawler's own HTTP client, timing the exchange and its
//! decoding (`examples/crawl_bench --floor-of`). Beside `archive::floor`, which sends the
//! same pages through the per-page library calls; here, not in the archive, because it
//! fetches.

use crate::archive::floor::{Floor, calls, thread_cpu};
use crate::archive::warc;
use crate::fetch;
use std::io;
use std::path::Path;

/// Connections kept between the floor's requests, which follow one another.
const IDLE: std::time::Duration = std::time::Duration::from_secs(15);

/// [`crate::archive::floor::floor`], and then the same pages fetched again in the order archived, one at a time on
/// one kept-alive connection, by the crawler's client on a single-threaded runtime, timing
/// the fetches (request, response, HTTP decoding, body collection). The site must still be
/// serving the same pages, in one of the networks `allow_net` names if it is not public.
pub fn with_http(out: &Path, level: u32, allow_net: &[ipnet::IpNet]) -> io::Result<Floor> {
    let mut pages = Vec::new();
    let mut f = calls(out, level, |url, http| {
        pages.push((url.clone(), warc::digest(&http.body)))
    })?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let limits = fetch::FetchLimits::default();
    let guard = webcoop_netguard::GuardedResolver::new(
        webcoop_netguard::NetPolicy::new(allow_net.to_vec(), "--allow-net"),
        Vec::new(),
    );
    let client = fetch::client("webcoop-floor/1", &limits, guard, 1, None, IDLE)
        .map_err(io::Error::other)?;
    for (url, digest) in pages {
        let request = fetch::FetchRequest {
            url,
            etag: None,
            last_modified: None,
            headers: Vec::new(),
        };
        let start = thread_cpu();
        let got = rt.block_on(fetch::fetch(&client, &request, &limits));
        f.http += thread_cpu().saturating_sub(start);
        match got {
            Ok(resp) if warc::digest(&resp.body) == digest => {}
            Ok(_) => f.differed += 1,
            Err(e) => return Err(io::Error::other(format!("{}: {e}", request.url))),
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn fetching_again_times_the_exchange_and_counts_pages_that_changed() {
        use std::io::{BufRead, BufReader, Write};
        // A loopback server answering /same with the body archived and /moved with another,
        // on kept-alive connections.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let body: &[u8] = if line.contains("/same") {
                        b"<p>same</p>"
                    } else {
                        b"<p>new</p>"
                    };
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    if out
                        .write_all(head.as_bytes())
                        .and_then(|()| out.write_all(body))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let mut w =
            warc::WarcWriter::new(&dir.path().join("warc"), "webcoop", 1 << 30, "bot", 6).unwrap();
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
        for (path, body) in [("same", &b"<p>same</p>"[..]), ("moved", b"<p>old</p>")] {
            let uri = format!("http://127.0.0.1:{port}/{path}");
            let r = warc::test_response(&uri, head, body, 6);
            w.append(&r).unwrap();
        }
        w.sync().unwrap();
        let f = with_http(dir.path(), 6, &["127.0.0.0/8".parse().unwrap()]).unwrap();
        assert_eq!((f.pages, f.differed), (2, 1), "the moved page differed");
        assert!(f.http > Duration::ZERO, "the fetches were timed");
        assert!(f.ms_per_page() >= f.http_ms_per_page());
    }
}

//! A TCP proxy on loopback that loses one answer: armed with a pattern, it lets the next
//! request holding it through to the server, waits for the server to answer all it was sent,
//! and then closes both connections instead of passing the answer on. The client sees a
//! connection that broke after its request ran, the case a retry must survive without running
//! the request's effects twice.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the server's answer may pause before it counts as whole.
const QUIET: Duration = Duration::from_millis(300);

/// The proxy; it stops accepting when dropped (connections open stay until their ends close).
pub struct ReplyCutter {
    /// Its port on 127.0.0.1.
    pub port: u16,
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    armed: Mutex<Option<Vec<u8>>>,
    cut: AtomicUsize,
    connections: AtomicUsize,
    closed: AtomicBool,
}

impl ReplyCutter {
    /// Forwards 127.0.0.1:(its port) to 127.0.0.1:`upstream`.
    pub fn start(upstream: u16) -> std::io::Result<ReplyCutter> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared::default());
        let s = shared.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.closed.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                s.connections.fetch_add(1, Ordering::Relaxed);
                pump(client, server, s.clone());
            }
        });
        Ok(ReplyCutter { port, shared })
    }

    /// The next request whose bytes hold `pattern` runs, and its answer is lost.
    pub fn cut_answer_to(&self, pattern: &[u8]) {
        if let Ok(mut armed) = self.shared.armed.lock() {
            *armed = Some(pattern.to_vec());
        }
    }

    /// Answers lost so far.
    pub fn cut(&self) -> usize {
        self.shared.cut.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }
}

impl Drop for ReplyCutter {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Relaxed);
        // Wakes the accepting thread so that it sees `closed`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Runs the two directions of one connection, each on a thread of its own.
fn pump(client: TcpStream, server: TcpStream, shared: Arc<Shared>) {
    let marked = Arc::new(AtomicBool::new(false));
    let (Ok(mut from_client), Ok(mut to_server)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let (m, s) = (marked.clone(), shared.clone());
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = from_client.read(&mut buf) {
            let chunk = &buf[..n];
            if let Ok(mut armed) = s.armed.lock()
                && armed
                    .as_ref()
                    .is_some_and(|p| chunk.windows(p.len()).any(|w| w == p.as_slice()))
            {
                *armed = None;
                m.store(true, Ordering::Relaxed);
            }
            if to_server.write_all(chunk).is_err() {
                break;
            }
        }
        let _ = to_server.shutdown(Shutdown::Write);
    });
    let (mut from_server, mut to_client) = (server, client);
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = from_server.read(&mut buf) {
            if marked.load(Ordering::Relaxed) {
                // The request was sent whole: everything the server says until it falls
                // quiet is its answer (and the answers of what came before it), and is lost.
                let _ = from_server.set_read_timeout(Some(QUIET));
                while let Ok(1..) = from_server.read(&mut buf) {}
                shared.cut.fetch_add(1, Ordering::Relaxed);
                let _ = from_server.shutdown(Shutdown::Both);
                let _ = to_client.shutdown(Shutdown::Both);
                return;
            }
            if to_client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Write);
    });
}

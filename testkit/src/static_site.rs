//! A plain static file server over a directory, on loopback: the web server the agent asks
//! about each file (its judge) in the tests where no particular server is part of the story.
//! Tests about what a real server refuses run Debian's nginx or Apache instead.

use std::net::SocketAddr;
use std::path::Path;

/// A running server; stopped when dropped.
pub struct StaticServer {
    /// Where it listens.
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        // Never blocks: the server may be dropped inside a test's own runtime.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl StaticServer {
    /// Serves `dir` (every file in it, as its bytes) on a free loopback port.
    pub fn serve(dir: &Path) -> StaticServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("a runtime for the static server: {e}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("binding the static server: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("the static server's address: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("the static server's socket: {e}"));
        let service = tower_http::services::ServeDir::new(dir);
        runtime.spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            // Headers and a file's body go out in two writes: without NODELAY, Nagle holds
            // the body until the client's delayed ACK, tens of milliseconds per request.
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let app = axum::Router::new().fallback_service(service);
            let _ = axum::serve(listener, app).await;
        });
        StaticServer {
            addr,
            runtime: Some(runtime),
        }
    }

    /// Its origin, for `--server-url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

//! The HTTP pieces both consoles' servers are made of (axum): every request through the
//! [`access::Gate`](super::access::Gate), the page with its security headers, the embedded
//! assets, JSON errors, and the binary's store opened read-only at first use.

use super::access::Gate;
use super::assets;
use axum::Json;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// A JSON error: `{"error": why}` with `status`.
pub fn error(status: StatusCode, why: &str) -> Response {
    (status, Json(json!({ "error": why }))).into_response()
}

/// Lets a request through `gate` or refuses it, adding the headers the gate asks for (the
/// token's cookie when it came in the query); `admitted` runs for every request let in.
pub async fn admit(gate: &Gate, request: Request, next: Next, admitted: impl FnOnce()) -> Response {
    let h = request.headers();
    let verdict = gate.admit_request(request.method().as_str(), request.uri().query(), |name| {
        h.get(name).and_then(|v| v.to_str().ok())
    });
    match verdict {
        Err(refusal) => error(
            StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::FORBIDDEN),
            refusal.reason,
        ),
        Ok(added) => {
            admitted();
            let mut response = next.run(request).await;
            let headers = response.headers_mut();
            for (name, value) in added {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    headers.insert(name, v);
                }
            }
            response
        }
    }
}

/// The console's page, with the policy that lets only the console's own scripts run.
pub fn page(html: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, assets::CSP),
            (header::X_FRAME_OPTIONS, "DENY"),
        ],
        html,
    )
        .into_response()
}

/// An embedded asset of media type `kind`.
pub fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// A read-only store, opened at first use (a crawl or an agent just started may not have
/// written its database yet) and then kept.
pub struct LazyStore<S> {
    open: Box<dyn Fn() -> Result<S, String> + Send + Sync>,
    store: Mutex<Option<S>>,
}

impl<S: Send + 'static> LazyStore<S> {
    /// A store `open` opens when first needed.
    pub fn new(open: impl Fn() -> Result<S, String> + Send + Sync + 'static) -> Self {
        LazyStore {
            open: Box::new(open),
            store: Mutex::new(None),
        }
    }

    /// Runs `f` on the store on a blocking thread; a store that cannot be opened (or read) is
    /// `503`, named `what` when it is not open.
    pub async fn read<T, E>(
        self: &Arc<Self>,
        what: &'static str,
        f: impl FnOnce(&S) -> Result<T, E> + Send + 'static,
    ) -> Result<T, Response>
    where
        T: Send + 'static,
        E: std::fmt::Display,
    {
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = this.store.lock().unwrap_or_else(|p| p.into_inner());
            if guard.is_none() {
                *guard = Some((this.open)()?);
            }
            match guard.as_ref() {
                Some(s) => f(s).map_err(|e| e.to_string()),
                None => Err(format!("{what} is not open")),
            }
        })
        .await
        .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))?
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, &e))
    }
}

/// `router` with the stylesheet and the script both consoles' pages load.
pub fn with_shared_assets<S: Clone + Send + Sync + 'static>(
    router: axum::Router<S>,
) -> axum::Router<S> {
    router
        .route(
            "/assets/console.css",
            axum::routing::get(|| async { asset("text/css", assets::CSS) }),
        )
        .route(
            "/assets/console.js",
            axum::routing::get(|| async { asset("text/javascript", assets::JS) }),
        )
}

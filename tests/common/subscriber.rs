//! A WebSub subscriber on loopback whose behaviour a test sets: how it answers verification of
//! intent and deliveries, and what it received.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the callback answers a verification of intent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Verify {
    Echo,
    WrongEcho,
    NotFound,
}

/// How the callback answers deliveries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Deliver {
    Ok,
    Unavailable,
    Gone,
    Hang,
    /// 415 to a compressed delivery (RFC 7694), naming identity as the only coding accepted.
    RefuseCompressed,
    /// 415 to a CBOR delivery (a subscriber that asked for it and cannot read it after all).
    RefuseCbor,
}

#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub at: Instant,
    pub headers: HeaderMap,
    pub body: Bytes,
}

#[derive(Default)]
pub(crate) struct Callback {
    pub verify: Option<Verify>,
    pub deliver: Option<Deliver>,
    /// `Accept-Encoding` sent with the answer to a verification (RFC 7694).
    pub accept_encoding: Option<&'static str>,
    /// `Accept` sent with it (a webcoop subscriber asks for CBOR).
    pub accept: Option<&'static str>,
    pub verifications: Vec<HashMap<String, String>>,
    pub deliveries: Vec<Delivery>,
    pub attempts: usize,
}

/// The subscriber server: callbacks at `/cb/{name}`.
#[derive(Clone)]
pub(crate) struct Subscriber {
    pub addr: SocketAddr,
    pub callbacks: Arc<Mutex<HashMap<String, Callback>>>,
}

async fn verify(
    State(sub): State<Subscriber>,
    Path(name): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let params: HashMap<String, String> = form_urlencoded::parse(q.unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    let (mode, accept) = {
        let mut all = sub.callbacks.lock().unwrap();
        let cb = all.entry(name).or_default();
        cb.verifications.push(params.clone());
        (
            cb.verify.unwrap_or(Verify::Echo),
            (cb.accept_encoding, cb.accept),
        )
    };
    let challenge = params.get("hub.challenge").cloned().unwrap_or_default();
    match mode {
        Verify::Echo => {
            let mut r = (StatusCode::OK, challenge).into_response();
            if let Some(a) = accept.0 {
                r.headers_mut()
                    .insert("accept-encoding", HeaderValue::from_static(a));
            }
            if let Some(a) = accept.1 {
                r.headers_mut()
                    .insert("accept", HeaderValue::from_static(a));
            }
            r
        }
        Verify::WrongEcho => (StatusCode::OK, format!("{challenge}x")).into_response(),
        Verify::NotFound => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn deliver(
    State(sub): State<Subscriber>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mode = {
        let mut all = sub.callbacks.lock().unwrap();
        let cb = all.entry(name).or_default();
        cb.attempts += 1;
        let mut mode = cb.deliver.unwrap_or(Deliver::Ok);
        if mode == Deliver::RefuseCompressed && !headers.contains_key("content-encoding") {
            mode = Deliver::Ok;
        }
        let cbor = headers
            .get("content-type")
            .is_some_and(|t| t.as_bytes().ends_with(b"+cbor"));
        if mode == Deliver::RefuseCbor && !cbor {
            mode = Deliver::Ok;
        }
        if mode == Deliver::Ok {
            cb.deliveries.push(Delivery {
                at: Instant::now(),
                headers,
                body,
            });
        }
        mode
    };
    match mode {
        Deliver::Ok => StatusCode::NO_CONTENT.into_response(),
        Deliver::Unavailable => StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Deliver::Gone => StatusCode::GONE.into_response(),
        Deliver::RefuseCbor => StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response(),
        Deliver::RefuseCompressed => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            [("accept-encoding", "identity")],
        )
            .into_response(),
        Deliver::Hang => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            StatusCode::NO_CONTENT.into_response()
        }
    }
}

impl Subscriber {
    pub(crate) async fn start() -> Subscriber {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let sub = Subscriber {
            addr: listener.local_addr().unwrap(),
            callbacks: Arc::new(Mutex::new(HashMap::new())),
        };
        let app = Router::new()
            .route("/cb/{name}", get(verify).post(deliver))
            .with_state(sub.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        sub
    }

    pub(crate) fn callback(&self, name: &str) -> String {
        format!("http://{}/cb/{name}?token=t-{name}", self.addr)
    }

    pub(crate) fn set(&self, name: &str, verify: Verify, deliver: Deliver) {
        let mut all = self.callbacks.lock().unwrap();
        let cb = all.entry(name.to_string()).or_default();
        cb.verify = Some(verify);
        cb.deliver = Some(deliver);
    }

    /// Makes callback `name` ask for compressed deliveries when it confirms a subscription.
    pub(crate) fn accept(&self, name: &str, accept_encoding: &'static str) {
        let mut all = self.callbacks.lock().unwrap();
        all.entry(name.to_string()).or_default().accept_encoding = Some(accept_encoding);
    }

    /// Makes callback `name` ask for CBOR deliveries (`Accept`) when it confirms.
    pub(crate) fn accept_type(&self, name: &str, accept: &'static str) {
        let mut all = self.callbacks.lock().unwrap();
        all.entry(name.to_string()).or_default().accept = Some(accept);
    }

    pub(crate) fn with<T>(&self, name: &str, f: impl FnOnce(&Callback) -> T) -> T {
        let mut all = self.callbacks.lock().unwrap();
        f(all.entry(name.to_string()).or_default())
    }

    /// Waits until `done` holds for callback `name`, failing after `limit`.
    pub(crate) async fn wait(
        &self,
        name: &str,
        limit: Duration,
        what: &str,
        done: impl Fn(&Callback) -> bool,
    ) {
        let deadline = Instant::now() + limit;
        while !self.with(name, &done) {
            assert!(
                Instant::now() < deadline,
                "{name}: {what} did not happen within {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

//! `POST /.well-known/webcoop/ping`: being told that pages of the site changed, by an XML-RPC
//! `weblogUpdates` ping (what WordPress's Update Services send), a WebSub publish (here, or at
//! the hub with `hub.mode=publish`) or `webcoop-agent notify`.
//!
//! Anyone can send a ping, so one is let in only from an address the webmaster named
//! (`--notify-from`) or with the shared secret (`--notify-secret-file`, as `Authorization:
//! Bearer` or `?key=`). A request that came through a proxy the agent does not trust is not
//! let in by its address: behind nginx, every stranger would look like loopback. A ping names
//! pages of this site only; the agent then asks its own web server what changed, so a ping can
//! cost a few requests to the origin but never put anything in what is published.

use super::ServiceState;
use super::client_ip::client_ip;
use crate::config::NotifySettings;
use crate::origin::Notice;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::Arc;
use url::Url;
use webcoop_protocol::ping;

/// Where pings go, and who may send them.
pub(crate) struct NoticeDesk {
    pub(crate) settings: NotifySettings,
    /// Query parameters that may name a page (`--allow-query`).
    pub(crate) queries: Vec<String>,
    pub(crate) tx: std::sync::mpsc::SyncSender<Notice>,
}

impl NoticeDesk {
    /// In origin mode, the desk that takes pings and where the agent receives them.
    pub(crate) fn of(
        config: &crate::config::Config,
    ) -> (
        Option<NoticeDesk>,
        Option<std::sync::mpsc::Receiver<Notice>>,
    ) {
        let Some(origin) = &config.origin else {
            return (None, None);
        };
        let (tx, rx) = std::sync::mpsc::sync_channel(256);
        let desk = NoticeDesk {
            settings: config.notify.clone(),
            queries: origin.queries.clone(),
            tx,
        };
        (Some(desk), Some(rx))
    }
}

/// Headers a proxy adds: their presence says the peer is not the sender.
const FORWARDING: [&str; 3] = ["x-forwarded-for", "forwarded", "x-real-ip"];

/// Whether the request may tell of changes, or why not.
fn admitted(
    desk: &NoticeDesk,
    peer: SocketAddr,
    headers: &HeaderMap,
    uri: &Uri,
    trusted: &[ipnet::IpNet],
) -> Result<(), &'static str> {
    if let Some(secret) = &desk.settings.secret {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        let key = uri.query().and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "key")
                .map(|(_, v)| v.into_owned())
        });
        let given = bearer.map(str::to_string).or(key);
        if given.is_some_and(|g| webcoop_daemon::console::access::equal(&g, secret)) {
            return Ok(());
        }
    }
    let proxied = FORWARDING.iter().any(|h| headers.contains_key(*h));
    let peer_trusted = trusted.iter().any(|n| n.contains(&peer.ip()));
    if proxied && !peer_trusted {
        return Err("came through a proxy the agent does not trust (--trusted-proxy)");
    }
    let who = client_ip(peer, headers, trusted);
    if desk.settings.from.iter().any(|n| n.contains(&who)) {
        return Ok(());
    }
    Err("not from an address --notify-from names, and without the secret")
}

/// The endpoint.
pub(crate) async fn ping_endpoint(
    State(s): State<Arc<ServiceState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    take(&s, peer, &uri, &headers, &body)
}

/// Takes a ping (XML-RPC or a publish form) and answers in the sender's own terms.
pub(crate) fn take(
    s: &ServiceState,
    peer: SocketAddr,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let xml = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<');
    let answer = |status: StatusCode, text: &str| -> Response {
        if xml {
            (
                status,
                [(header::CONTENT_TYPE, "text/xml; charset=utf-8")],
                ping::xmlrpc_reply(!status.is_success(), text),
            )
                .into_response()
        } else {
            super::plain(status, &format!("{text}\n"))
        }
    };
    let Some(desk) = &s.notices else {
        return answer(
            StatusCode::NOT_FOUND,
            "this agent watches files; pings are for origin mode (--origin)",
        );
    };
    if let Err(why) = admitted(desk, peer, headers, uri, &s.hub.trusted_proxies) {
        return answer(StatusCode::FORBIDDEN, &format!("not let in: {why}"));
    }
    let parsed = if xml {
        ping::parse_xmlrpc(body).map_err(|e| e.to_string())
    } else {
        ping::parse_publish(body).map_err(|e| e.to_string())
    };
    let p = match parsed {
        Ok(p) => p,
        Err(e) => return answer(StatusCode::BAD_REQUEST, &e),
    };
    let mut paths = Vec::new();
    for u in &p.urls {
        let Ok(url) = Url::parse(u) else {
            return answer(StatusCode::BAD_REQUEST, &format!("{u:?} is not a URL"));
        };
        match crate::urls::site_path(&s.base_url, &url, &desk.queries) {
            Ok(path) => paths.push(path),
            Err(why) => {
                return answer(
                    StatusCode::BAD_REQUEST,
                    &format!("{u} {why}: this agent publishes {}", s.base_url),
                );
            }
        }
    }
    // A full queue means pings come faster than the origin is read: the queued ones already
    // bring a reading of the sitemaps, and every page is checked again at its pace anyway.
    let _ = desk.tx.try_send(Notice { paths });
    answer(StatusCode::OK, "Thanks for the ping.")
}

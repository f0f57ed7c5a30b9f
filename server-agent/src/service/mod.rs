//! The agent's HTTP service, which the web server proxies under `/.well-known/webcoop/`:
//! `changes` (everything since a sequence number), `delta/{path}` (the difference against the
//! version a client holds), `hub` (WebSub), `metrics` (Prometheus) and `healthz`.

pub(crate) mod batch;
pub(crate) mod bodies;
pub(crate) mod callback_net;
pub(crate) mod changes;
mod changes_page;
mod client_ip;
pub(crate) mod delta;
pub(crate) mod encodings;
pub(crate) mod hub;
pub(crate) mod identity;
pub(crate) mod indexnow;
pub(crate) mod metrics;
pub(crate) mod negotiate;
pub(crate) mod notify;
pub(crate) mod reader;

use crate::config::Config;
use crate::inventory::Inventory;
use crate::store::LoggedChange;
use axum::Router;
use axum::body::HttpBody;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use callback_net::CallbackPolicy;
use encodings::EncodingCache;
use hub::HubHandle;
use hub::dispatch::{DispatchSettings, Dispatcher};
use metrics::{EndpointLabels, Metrics};
use reader::Reader;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use url::Url;
use webcoop_protocol::clock::Clock;

/// Everything the handlers share.
pub struct ServiceState {
    /// The agent's state, read-only.
    pub(crate) reader: Reader,
    /// Encoded deltas and bodies.
    pub(crate) encodings: Arc<EncodingCache>,
    /// The hub.
    pub(crate) hub: HubHandle,
    /// Counters.
    pub metrics: Arc<Metrics>,
    /// Time.
    pub(crate) clock: Arc<dyn Clock>,
    /// The site.
    pub(crate) base_url: Url,
    /// The changes endpoint: the WebSub topic.
    pub(crate) topic: Url,
    /// The topic of ResourceSync Change Notifications.
    pub(crate) resourcesync_topic: Url,
    /// The hub endpoint.
    pub(crate) hub_url: Url,
    /// robots.rdf, where clients resync.
    pub(crate) listing_url: Url,
    /// The output directory, when snapshots are published there: a 410 names the newest.
    pub(crate) snapshots_in: Option<std::path::PathBuf>,
    /// `Link` header every answer carries.
    pub(crate) link: HeaderValue,
    /// What the agent did lately, for its console.
    pub activity: Arc<crate::activity::Activity>,
    /// Who is asking (Web Bot Auth) and the policy on it.
    pub(crate) identities: identity::Identities,
    /// The site's usage preferences (aipref form), stated in every changes page.
    pub(crate) content_usage: Option<String>,
    /// Where pings go, in origin mode.
    pub(crate) notices: Option<notify::NoticeDesk>,
}

/// A plain-text answer.
pub(crate) fn plain(status: StatusCode, text: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text.to_string(),
    )
        .into_response()
}

fn endpoint_of(path: &str) -> &'static str {
    let rest = path.strip_prefix("/.well-known/webcoop/").unwrap_or("");
    match rest.split('/').next().unwrap_or("") {
        "changes" => "changes",
        "delta" => "delta",
        "hub" => "hub",
        "metrics" => "metrics",
        "healthz" => "healthz",
        "authorize" => "authorize",
        "ping" => "ping",
        _ => "other",
    }
}

fn status_class(status: StatusCode) -> &'static str {
    match status.as_u16() / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

/// Adds the discovery `Link` header to every answer and counts requests and bytes.
async fn track(State(s): State<Arc<ServiceState>>, request: Request, next: Next) -> Response {
    let endpoint = endpoint_of(request.uri().path());
    let mut response = next.run(request).await;
    response.headers_mut().append(header::LINK, s.link.clone());
    let labels = EndpointLabels {
        endpoint,
        status: status_class(response.status()),
    };
    s.metrics.requests.get_or_create(&labels).inc();
    if let Some(bytes) = response.body().size_hint().exact() {
        s.metrics.bytes_served.get_or_create(&labels).inc_by(bytes);
    }
    response
}

async fn metrics_endpoint(State(s): State<Arc<ServiceState>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        s.metrics.render(),
    )
        .into_response()
}

async fn healthz(State(s): State<Arc<ServiceState>>) -> Response {
    match s.reader.with(|st| st.head_seq()).await {
        Ok(head) => plain(StatusCode::OK, &format!("ok {head}\n")),
        Err(e) => plain(StatusCode::SERVICE_UNAVAILABLE, &format!("{e}\n")),
    }
}

/// The ResourceSync notification topic, as WebSub discovery reads it: its hub and itself.
async fn resourcesync_topic(State(s): State<Arc<ServiceState>>) -> Response {
    let link = format!(
        "<{}>; rel=\"hub\", <{}>; rel=\"self\"",
        s.hub_url, s.resourcesync_topic
    );
    let mut r = plain(
        StatusCode::OK,
        "ResourceSync change notifications: subscribe at the hub this answer links to\n",
    );
    if let Ok(v) = HeaderValue::from_str(&link) {
        r.headers_mut().insert(header::LINK, v);
    }
    r
}

/// The routes.
pub(crate) fn router(state: Arc<ServiceState>) -> Router {
    Router::new()
        .route("/.well-known/webcoop/changes", get(changes::changes))
        .route(
            &format!(
                "/.well-known/webcoop/{}",
                crate::publish::RESOURCESYNC_TOPIC
            ),
            get(resourcesync_topic),
        )
        .route("/.well-known/webcoop/delta/{*path}", get(delta::delta))
        .route(
            "/.well-known/webcoop/hub",
            post(hub::subscribe::hub)
                .layer(axum::extract::DefaultBodyLimit::max(hub::MAX_REQUEST_BYTES)),
        )
        .route(
            "/.well-known/webcoop/ping",
            post(notify::ping_endpoint).layer(axum::extract::DefaultBodyLimit::max(
                webcoop_protocol::ping::MAX_PING_BYTES,
            )),
        )
        .route("/.well-known/webcoop/metrics", get(metrics_endpoint))
        .route("/.well-known/webcoop/healthz", get(healthz))
        .route(
            "/.well-known/webcoop/authorize",
            get(identity::authorize).head(identity::authorize),
        )
        .fallback(|| async { plain(StatusCode::NOT_FOUND, "not a webcoop endpoint\n") })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            identity::identify,
        ))
        .layer(axum::middleware::from_fn_with_state(state.clone(), track))
        .with_state(state)
}

/// Why the service could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The agent's state cannot be read.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The subscriptions database failed.
    #[error(transparent)]
    Hub(#[from] hub::store::HubStoreError),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// Serving failed.
    #[error("serving on {addr}: {source}")]
    Serve {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
}

/// A running service: what the agent's watch loop talks to.
pub struct Running {
    /// The shared state.
    pub state: Arc<ServiceState>,
    /// Where it listens.
    pub local_addr: SocketAddr,
    head: watch::Sender<u64>,
    server: tokio::task::JoinHandle<Result<(), std::io::Error>>,
    dispatcher: tokio::task::JoinHandle<()>,
    shutdown: tokio::sync::oneshot::Sender<()>,
    notices: Option<std::sync::mpsc::Receiver<crate::origin::Notice>>,
}

impl Running {
    /// The observer to give the agent: tells the hub, the metrics and IndexNow of each batch.
    pub fn observer(&self) -> crate::store::ChangeObserver {
        let head = self.head.clone();
        let metrics = self.state.metrics.clone();
        Box::new(move |changes: &[LoggedChange], inventory: &Inventory| {
            metrics.files.set(inventory.len() as i64);
            if let Some(last) = changes.last() {
                metrics.head_seq.set(last.seq as i64);
                head.send_replace(last.seq);
            }
        })
    }

    /// The pings received, for the origin loop (once; origin mode only).
    pub fn take_notices(&mut self) -> Option<std::sync::mpsc::Receiver<crate::origin::Notice>> {
        self.notices.take()
    }

    /// Stops serving and delivering (subscriptions stay saved).
    pub async fn stop(self) {
        let _ = self.shutdown.send(());
        let _ = self.server.await;
        drop(self.head);
        let _ = self.dispatcher.await;
    }
}

/// What the dispatcher needs to build and send deliveries: the documents of the service's
/// state, its client and its callback policy.
fn delivery_context(state: &ServiceState) -> hub::dispatch::DeliveryContext {
    let mut documents = hub::document::Documents::new(
        state.reader.clone(),
        state.encodings.clone(),
        state.clock.clone(),
        state.base_url.clone(),
        state.topic.clone(),
        state.hub_url.clone(),
        state.listing_url.clone(),
    );
    documents.content_usage = state.content_usage.clone();
    hub::dispatch::DeliveryContext {
        client: state.hub.client.clone(),
        policy: state.hub.policy.clone(),
        documents,
        link: state.link.to_str().unwrap_or_default().to_string(),
        resourcesync_link: format!(
            "<{}>; rel=\"hub\", <{}>; rel=\"self\"",
            state.hub_url, state.resourcesync_topic
        ),
    }
}

/// Serves the service's routes on `listener` until told to stop: the server, and its stop.
fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<ServiceState>,
) -> (
    tokio::task::JoinHandle<std::io::Result<()>>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (shutdown_tx, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = shutdown_rx.await;
            })
            .await
    });
    (server, shutdown_tx)
}

/// Starts the service on `listener` for the agent configured by `config` (whose state must
/// already exist: open the agent first).
pub async fn start(
    config: &Config,
    clock: Arc<dyn Clock>,
    listener: tokio::net::TcpListener,
) -> Result<Running, ServiceError> {
    start_with(config, clock, listener, Arc::default()).await
}

/// [`start`], noting what the hub and IndexNow do in `activity` (the console's).
pub async fn start_with(
    config: &Config,
    clock: Arc<dyn Clock>,
    listener: tokio::net::TcpListener,
    activity: Arc<crate::activity::Activity>,
) -> Result<Running, ServiceError> {
    // reqwest is built without a TLS provider of its own: install ring's once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let service = config.service.clone().ok_or_else(|| ServiceError::Serve {
        addr: String::new(),
        source: std::io::Error::other("the configuration has no --listen"),
    })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| ServiceError::Serve {
            addr: service.listen.to_string(),
            source,
        })?;
    let links = crate::publish::ServiceLinks::at(&service.public_url);
    let metrics = Arc::new(Metrics::default());
    let reader = Reader::open(&config.state, &config.docroot)?;
    let head = reader.with(|st| st.head_seq()).await.unwrap_or(0);
    let files = reader.with(|st| st.file_count()).await.unwrap_or(0);
    metrics.head_seq.set(head as i64);
    metrics.files.set(files as i64);
    let encodings = Arc::new(EncodingCache::new(64 << 20, metrics.clone()));
    let policy = CallbackPolicy::new(service.allow_callback_nets.clone());
    let client = hub::http_client(&policy)?;
    let listing_url = config
        .base_url
        .join(crate::publish::ROBOTS_RDF)
        .unwrap_or_else(|_| config.base_url.clone());
    let link = HeaderValue::from_str(&format!(
        "<{}>; rel=\"hub\", <{}>; rel=\"self\"",
        links.hub, links.changes
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""));
    let (commands_tx, commands_rx) = mpsc::channel(1024);
    let (notices, notices_rx) = notify::NoticeDesk::of(config);
    let registry = hub::Registry::default();
    let state = Arc::new(ServiceState {
        reader: reader.clone(),
        encodings: encodings.clone(),
        hub: HubHandle::new(&service, commands_tx, registry.clone(), (&client, &policy)),
        metrics: metrics.clone(),
        clock: clock.clone(),
        base_url: config.base_url.clone(),
        snapshots_in: config.snapshots.as_ref().map(|_| config.out.clone()),
        topic: links.changes.clone(),
        resourcesync_topic: links.resourcesync_topic.clone(),
        hub_url: links.hub.clone(),
        listing_url: listing_url.clone(),
        link: link.clone(),
        activity: activity.clone(),
        content_usage: config.content_usage.map(|p| p.to_aipref()),
        notices,
        identities: identity::Identities::new(
            service.identity.clone(),
            &config.base_url,
            identity::directories::Directories::new(
                client.clone(),
                policy.clone(),
                service.allow_callback_nets.clone(),
                metrics.directory_fetches.clone(),
            ),
        ),
    });

    let dispatcher = Dispatcher::new(
        hub::store::SubscriptionStore::open(&config.state)?,
        delivery_context(&state),
        DispatchSettings {
            window: service.hub_window,
            drop_after: service.hub_drop_after,
            timeout: service.delivery_timeout,
            concurrency: 256,
        },
        clock,
        metrics,
        registry,
    )?;
    let (head_tx, head_rx) = watch::channel(head);
    let dispatcher = tokio::spawn(dispatcher.run(head_rx, commands_rx));

    if let Some(cfg) = config.indexnow.clone() {
        let pinger = indexnow::Pinger {
            config: cfg,
            base: config.base_url.clone(),
            client: client.clone(),
            policy: policy.clone(),
            gather: Duration::from_secs(2),
            activity,
        };
        let head = head_tx.subscribe();
        let state_dir = config.state.clone();
        tokio::spawn(indexnow::run(pinger, reader, state_dir, head));
    }

    let (server, shutdown_tx) = serve(listener, state.clone());
    Ok(Running {
        state,
        local_addr,
        head: head_tx,
        server,
        dispatcher,
        shutdown: shutdown_tx,
        notices: notices_rx,
    })
}

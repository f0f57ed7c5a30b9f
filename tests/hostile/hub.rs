//! The agent's WebSub hub against hostile subscribers: floods from one network, oversized and
//! special-purpose callbacks, a full hub, secrets taken over by a renewal, proxies in the
//! environment; and what a `kill -9` must not lose (confirmed subscriptions, IndexNow pings).

use super::nginx_site::AgentSite;
use super::subscriber::{Deliver, Subscriber, Verify};
use super::support::wait_for;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use webcoop_protocol::websub::{SignatureAlgorithm, sign};

fn hub_url(site: &AgentSite) -> String {
    format!(
        "http://127.0.0.1:{}/.well-known/webcoop/hub",
        site.agent_port
    )
}

fn topic(site: &AgentSite) -> String {
    format!("{}.well-known/webcoop/changes", site.nginx.url())
}

fn form(pairs: &[(&str, &str)]) -> String {
    let mut f = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        f.append_pair(k, v);
    }
    f.finish()
}

async fn post(site: &AgentSite, body: String, headers: &[(&str, String)]) -> (u16, String) {
    post_to(hub_url(site), body, headers).await
}

async fn post_to(url: String, body: String, headers: &[(&str, String)]) -> (u16, String) {
    let client = super::support::client();
    let mut r = client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded");
    for (k, v) in headers {
        r = r.header(*k, v);
    }
    let r = r.body(body).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// A subscription request, each from its own address (the hub limits each address to a
/// burst of ten).
async fn subscribe(site: &AgentSite, callback: &str, secret: &str) -> (u16, String) {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let body = form(&[
        ("hub.mode", "subscribe"),
        ("hub.callback", callback),
        ("hub.topic", &topic(site)),
        ("hub.secret", secret),
    ]);
    let from = format!("10.{}.{}.1", n / 256, n % 256);
    post(site, body, &[("x-forwarded-for", from)]).await
}

/// Starts an agent site on a blocking thread (nginx and the agent are processes).
async fn site(args: &'static [&'static str], envs: &'static [(&str, &str)]) -> Option<AgentSite> {
    tokio::task::spawn_blocking(move || {
        AgentSite::start_with_env(&[("index.html", b"home")], "", args, envs, |_| {})
    })
    .await
    .unwrap()
}

async fn write_and_wait(site: AgentSite, rel: &'static str, body: &'static [u8]) -> AgentSite {
    tokio::task::spawn_blocking(move || {
        site.write_and_wait(rel, body);
        site
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_are_limited_per_network_as_well_as_per_address() {
    let Some(site) = site(&[], &[]).await else {
        return;
    };
    let v4 = |i: u32| format!("203.0.113.{i}");
    let v6 = |i: u32| format!("2001:db8:1:2::{i:x}");
    let nets: [(&str, &dyn Fn(u32) -> String); 2] = [("203.0.113", &v4), ("2001:db8:1:2", &v6)];
    for (net, ip) in nets {
        let mut statuses = Vec::new();
        // One request from each of 40 addresses, all at once: no address is over its own
        // limit, and the network's bucket (30 at once, 2 a second back) has no time to refill
        // however loaded the machine is (one after the other, they took seconds under CI).
        let mut requests = tokio::task::JoinSet::new();
        for i in 1..=40 {
            let (url, from) = (hub_url(&site), ip(i));
            requests.spawn(async move {
                post_to(url, "junk".into(), &[("x-forwarded-for", from)]).await
            });
        }
        while let Some(done) = requests.join_next().await {
            let (status, text) = done.unwrap();
            if status == 429 {
                assert!(text.contains("this network"), "{text}");
            }
            statuses.push(status);
        }
        let limited = statuses.iter().filter(|s| **s == 429).count();
        assert!(
            (5..=15).contains(&limited),
            "{net}: {limited} of 40 limited: {statuses:?}"
        );
    }
    // Another network is not held back by them.
    let (status, _) = post(
        &site,
        "junk".into(),
        &[("x-forwarded-for", "198.51.100.7".into())],
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_and_special_purpose_callbacks_and_a_full_hub_are_refused() {
    let Some(site) = site(&["--hub-max-subscriptions", "1"], &[]).await else {
        return;
    };
    let sub = Subscriber::start().await;
    let long = format!("{}&pad={}", sub.callback("long"), "a".repeat(3000));
    let (status, text) = subscribe(&site, &long, "secret-of-sixteen+").await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("longer than"), "{text}");
    // 127.0.0.0/8 is allowed for the tests; none of these is in it, whatever they map to.
    for cb in [
        "http://198.18.0.1/cb",
        "http://198.19.255.1/cb",
        "http://192.0.0.170/cb",
        "http://192.88.99.1/cb",
        "http://240.0.0.1/cb",
        "http://[64:ff9b::7f00:1]/cb",
        "http://[64:ff9b:1::7f00:1]/cb",
        "http://[2002:7f00:1::1]/cb",
        "http://[::127.0.0.1]/cb",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/cb",
        "http://[100::1]/cb",
    ] {
        let (status, text) = subscribe(&site, cb, "secret-of-sixteen+").await;
        assert_eq!(status, 403, "{cb}: {text}");
    }
    let (status, _) = subscribe(&site, &sub.callback("a"), "secret-of-sixteen+").await;
    assert_eq!(status, 202);
    sub.wait("a", Duration::from_secs(10), "verification", |c| {
        !c.verifications.is_empty()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, text) = subscribe(&site, &sub.callback("b"), "secret-of-sixteen+").await;
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("as many subscriptions"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn verifications_under_way_are_capped() {
    let Some(site) = site(&[], &[]).await else {
        return;
    };
    // Callbacks that accept the connection and never answer: each verification waits for its
    // time limit.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = silent.accept().await {
            held.push(s);
        }
    });
    // All at once: a verification ends at its time limit (the default 10 s) and frees its
    // place, and one after another under CI's load (150 ms each) the last requests came
    // after the first limit and were rightly accepted.
    let site = Arc::new(site);
    let start = std::time::Instant::now();
    let mut asked = tokio::task::JoinSet::new();
    for i in 0..80 {
        let cb = format!("http://{addr}/cb/{i}");
        let site = site.clone();
        asked.spawn(async move { subscribe(&site, &cb, "secret-of-sixteen+").await });
    }
    let answers = asked.join_all().await;
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "80 requests took {took:?}");
    for (status, text) in &answers {
        if *status == 503 {
            assert!(text.contains("verifications of intent under way"), "{text}");
        }
    }
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    let accepted = statuses.iter().filter(|s| **s == 202).count();
    assert_eq!(accepted, 64, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 503).count(), 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_renewal_cannot_take_a_subscription_over_without_its_secret() {
    let Some(site) = site(&[], &[]).await else {
        return;
    };
    let sub = Subscriber::start().await;
    // A subscriber that confirms any verification: the hub alone must protect it.
    sub.set("v", Verify::Echo, Deliver::Ok);
    let cb = sub.callback("v");
    let owner = "the-owners-secret-1234";
    assert_eq!(subscribe(&site, &cb, owner).await.0, 202);
    sub.wait("v", Duration::from_secs(10), "verification", |c| {
        c.verifications.len() == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let attacker = "the-attackers-secret-99";
    let (status, text) = subscribe(&site, &cb, attacker).await;
    assert_eq!(status, 409, "{text}");
    // The owner may change its own secret by signing the request with the current one.
    let body = form(&[
        ("hub.mode", "subscribe"),
        ("hub.callback", &cb),
        ("hub.topic", &topic(&site)),
        ("hub.secret", "the-owners-new-secret-5"),
    ]);
    let forged = sign(
        SignatureAlgorithm::Sha256,
        attacker.as_bytes(),
        body.as_bytes(),
    );
    assert_eq!(
        post(&site, body.clone(), &[("x-hub-signature", forged)])
            .await
            .0,
        409
    );
    let signed = sign(
        SignatureAlgorithm::Sha256,
        owner.as_bytes(),
        body.as_bytes(),
    );
    assert_eq!(
        post(&site, body, &[("x-hub-signature", signed)]).await.0,
        202
    );
    sub.wait("v", Duration::from_secs(10), "second verification", |c| {
        c.verifications.len() == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let site = write_and_wait(site, "new.html", b"new").await;
    sub.wait("v", Duration::from_secs(10), "a delivery", |c| {
        !c.deliveries.is_empty()
    })
    .await;
    let d = sub.with("v", |c| c.deliveries[0].clone());
    let sig = d.headers["x-hub-signature"].to_str().unwrap().to_string();
    assert!(webcoop_protocol::websub::verify(b"the-owners-new-secret-5", &d.body, &sig).is_ok());
    drop(site);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_hub_ignores_proxy_variables() {
    // A proxy would connect on the hub's behalf, past its checks of callback addresses.
    let proxies: &'static [(&str, &str)] = &[
        ("HTTP_PROXY", "http://127.0.0.1:9"),
        ("http_proxy", "http://127.0.0.1:9"),
        ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ("ALL_PROXY", "http://127.0.0.1:9"),
    ];
    let Some(site) = site(&[], proxies).await else {
        return;
    };
    let sub = Subscriber::start().await;
    assert_eq!(
        subscribe(&site, &sub.callback("p"), "secret-of-sixteen+")
            .await
            .0,
        202
    );
    sub.wait("p", Duration::from_secs(10), "a direct verification", |c| {
        !c.verifications.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_confirmed_subscription_survives_kill_9() {
    let Some(site) = site(&[], &[]).await else {
        return;
    };
    let sub = Subscriber::start().await;
    assert_eq!(
        subscribe(&site, &sub.callback("k"), "secret-of-sixteen+")
            .await
            .0,
        202
    );
    sub.wait("k", Duration::from_secs(10), "verification", |c| {
        !c.verifications.is_empty()
    })
    .await;
    // The subscriber was told it is subscribed: the hub must keep it, killed at once or not.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let site = tokio::task::spawn_blocking(move || {
        let mut site = site;
        site.kill_agent();
        site.start_agent();
        site
    })
    .await
    .unwrap();
    let site = write_and_wait(site, "after.html", b"after the crash").await;
    sub.wait(
        "k",
        Duration::from_secs(15),
        "a delivery after the restart",
        |c| {
            c.deliveries
                .iter()
                .any(|d| String::from_utf8_lossy(&d.body).contains("after.html"))
        },
    )
    .await;
    drop(site);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn indexnow_pings_not_yet_sent_survive_kill_9() {
    use axum::routing::post;
    let received: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let refusing = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let (sink, refuse) = (received.clone(), refusing.clone());
    let app = axum::Router::new().route(
        "/indexnow",
        post(move |body: bytes::Bytes| {
            let (sink, refuse) = (sink.clone(), refuse.clone());
            async move {
                if refuse.load(std::sync::atomic::Ordering::SeqCst) {
                    return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                }
                sink.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                axum::http::StatusCode::ACCEPTED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint: &'static str =
        Box::leak(format!("http://{}/indexnow", listener.local_addr().unwrap()).into_boxed_str());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let args: &'static [&'static str] = Box::leak(Box::new([
        "--indexnow-endpoint",
        endpoint,
        "--indexnow-key",
        "0123456789abcdef0123",
    ]));
    let Some(site) = site(args, &[]).await else {
        return;
    };
    let site = write_and_wait(site, "pinged.html", b"to be pinged").await;
    // The engine is down: the ping waits in its retries when the agent is killed.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let site = tokio::task::spawn_blocking(move || {
        let mut site = site;
        site.kill_agent();
        site
    })
    .await
    .unwrap();
    assert!(received.lock().unwrap().is_empty());
    refusing.store(false, std::sync::atomic::Ordering::SeqCst);
    let site = tokio::task::spawn_blocking(move || {
        let mut site = site;
        site.start_agent();
        wait_for(20, "the ping after the restart", || {
            received.lock().unwrap().iter().any(|b| {
                b["urlList"].as_array().is_some_and(|l| {
                    l.iter()
                        .any(|u| u.as_str().is_some_and(|u| u.ends_with("/pinged.html")))
                })
            })
        });
        site
    })
    .await
    .unwrap();
    drop(site);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_rotating_its_own_forwarded_for_behind_a_plain_proxy_is_still_limited() {
    // nginx proxies the hub without naming the client: the client's own X-Forwarded-For
    // passes through as it wrote it. The agent trusts no proxy here (a documentation address
    // stands for some other proxy), so the header is never believed.
    let conf = webcoop::servers::example_nginx_conf().replace(
        "        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n",
        "",
    );
    assert!(!conf.contains("X-Forwarded-For"));
    let Some(site) = tokio::task::spawn_blocking(move || {
        let extra = "";
        let s = AgentSite::start(
            &[("index.html", b"home")],
            extra,
            &["--trusted-proxy", "192.0.2.1/32"],
            |_| {},
        )?;
        // The same site behind the plain proxy.
        s.nginx.reload(&conf);
        Some(s)
    })
    .await
    .unwrap() else {
        return;
    };
    let hub = format!("{}.well-known/webcoop/hub", site.nginx.url());
    let client = super::support::client();
    let mut limited = 0;
    for i in 0..40 {
        let r = client
            .post(&hub)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-forwarded-for", format!("198.51.100.{i}"))
            .body("junk")
            .send()
            .await
            .unwrap();
        if r.status().as_u16() == 429 {
            limited += 1;
        }
    }
    // A burst of ten, then the limit: forty forged addresses are one client.
    assert!(limited >= 25, "{limited} of 40 limited");
}

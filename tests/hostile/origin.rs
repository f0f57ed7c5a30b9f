//! Origin mode against a hostile site: sitemaps naming other sites, pages that set cookies,
//! redirect, ask for credentials, say they are private or are too large, robots.txt's
//! refusals, an access log full of junk and session identifiers, and strangers' pings. Only
//! pages served alike to anyone, of this site, are published, and nothing panics.

use super::support::{Canned, HostileWeb, agent_bin, free_port, wait_for};
use std::process::{Command, Stdio};
use webcoop::servers::{Killed, http_request};
use webcoop_protocol::validator::Sha256Digest;

const HOST: &str = "h.test";

fn with_headers(mut c: Canned, headers: &[(&str, &str)]) -> Canned {
    for (n, v) in headers {
        c.headers.push((n.to_string(), v.to_string()));
    }
    c
}

fn hostile_site() -> HostileWeb {
    let web = HostileWeb::start();
    let page = |text: &str| Canned::ok("text/html", format!("<html><body>{text}</body></html>"));
    web.set(
        HOST,
        "/robots.txt",
        Canned::ok(
            "text/plain",
            "User-agent: *\nDisallow: /private/\nSitemap: http://h.test/wp-sitemap.xml\nSitemap: http://evil.test/planted.xml\n",
        ),
    );
    web.set(
        HOST,
        "/wp-sitemap.xml",
        Canned::ok(
            "application/xml",
            r#"<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>http://h.test/pages.xml</loc></sitemap>
<sitemap><loc>http://evil.test/more.xml</loc></sitemap></sitemapindex>"#,
        ),
    );
    let urls = [
        "http://h.test/good/",
        "http://h.test/cookie/",
        "http://h.test/moved/",
        "http://h.test/login/",
        "http://h.test/mine/",
        "http://h.test/huge/",
        "http://h.test/private/secret/",
        "http://h.test/q/?session=1",
        "http://h.test/list/?page=2",
        "http://h.test/list/?page=2&utm_source=x",
        "http://evil.test/planted/",
        "http://h.test:9999/other-port/",
    ];
    let mut set = String::from(
        r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for u in urls {
        set.push_str(&format!(
            "<url><loc>{}</loc></url>",
            u.replace('&', "&amp;")
        ));
    }
    set.push_str("</urlset>");
    web.set(HOST, "/pages.xml", Canned::ok("application/xml", set));
    web.set(HOST, "/good/", page("good"));
    web.set(HOST, "/list/", page("page two of a list"));
    web.set(HOST, "/from-log/", page("named by the log"));
    web.set(HOST, "/editor-only/", page("an upload of a private post"));
    web.set(
        HOST,
        "/cookie/",
        with_headers(page("per visitor"), &[("set-cookie", "sid=1; HttpOnly")]),
    );
    web.set(
        HOST,
        "/moved/",
        Canned {
            status: 301,
            headers: vec![("location".into(), "http://evil.test/".into())],
            body: std::sync::Arc::new(Vec::new()),
        },
    );
    web.set(
        HOST,
        "/login/",
        Canned {
            status: 401,
            headers: vec![("www-authenticate".into(), "Basic realm=x".into())],
            body: std::sync::Arc::new(b"who are you".to_vec()),
        },
    );
    web.set(
        HOST,
        "/mine/",
        with_headers(
            page("yours only"),
            &[("cache-control", "no-cache, private")],
        ),
    );
    web.set(HOST, "/huge/", Canned::ok("text/html", vec![b'a'; 9 << 20]));
    web.set(HOST, "/private/secret/", page("robots.txt says no"));
    web
}

#[test]
fn only_what_the_site_serves_to_anyone_is_published_and_strangers_pings_are_refused() {
    let web = hostile_site();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // An access log of junk, session identifiers, logged-in users and one page.
    let log = tmp.path().join("access.log");
    let mut text = String::new();
    for i in 0..5_000 {
        text.push_str(&format!("\u{1}\u{2}junk {i} [[[ \"\"\" 200\n"));
        text.push_str(&format!(
            "10.0.0.{} - - [26/Nov/2026:12:00:00 +0000] \"GET /page/?PHPSESSID={i} HTTP/1.1\" 200 10 \"-\" \"x\"\n",
            i % 250
        ));
    }
    text.push_str("10.0.0.1 - alice [26/Nov/2026:12:00:00 +0000] \"GET /account/ HTTP/1.1\" 200 10 \"-\" \"x\"\n");
    text.push_str("10.0.0.1 - - [26/Nov/2026:12:00:00 +0000] \"GET /cart;jsessionid=9 HTTP/1.1\" 200 10 \"-\" \"x\"\n");
    text.push_str("10.0.0.1 - - [26/Nov/2026:12:00:00 +0000] \"GET //evil.test/x HTTP/1.1\" 200 10 \"-\" \"x\"\n");
    // Read by a visitor (not alice, whose session this address and browser are).
    text.push_str("10.0.0.2 - - [26/Nov/2026:12:00:00 +0000] \"GET /from-log/ HTTP/1.1\" 200 10 \"-\" \"x\"\n");
    // An editor logs in, then opens an upload of a private post: served to anonymous requests
    // (the server cannot tell), yet only an editor ever asked for it; not listed.
    text.push_str("10.0.0.7 - - [26/Nov/2026:12:00:00 +0000] \"POST /wp-login.php HTTP/1.1\" 302 0 \"-\" \"Mozilla/5.0 (editor)\"\n");
    text.push_str("10.0.0.7 - - [26/Nov/2026:12:01:00 +0000] \"GET /editor-only/ HTTP/1.1\" 200 10 \"-\" \"Mozilla/5.0 (editor)\"\n");
    text.push_str(&"x".repeat(100_000));
    std::fs::write(&log, text).unwrap();
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, "s3cret-s3cret-s3cret\n").unwrap();
    let port = free_port();
    let console_port = free_port();
    let args = |once: bool| {
        let mut c = Command::new(agent_bin());
        c.arg("--origin")
            .arg(format!("http://{}", web.addr))
            .args(["--base-url", "http://h.test/"])
            .arg("--state")
            .arg(tmp.path().join("state"))
            .arg("--out")
            .arg(&out)
            .arg("--access-log")
            .arg(&log)
            .args(["--origin-rate", "200", "--allow-query", "page"]);
        if once {
            c.arg("--once");
        } else {
            c.args(["--listen", &format!("127.0.0.1:{port}")])
                .args(["--console", &format!("127.0.0.1:{console_port}")])
                .args(["--notify-from", "127.0.0.1/32"])
                .arg("--notify-secret-file")
                .arg(&secret);
        }
        c
    };
    let once = args(true).output().unwrap();
    let said = String::from_utf8_lossy(&once.stderr);
    assert!(once.status.success(), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    let sitemap = std::fs::read_to_string(out.join("sitemap.xml")).unwrap();
    let listed: Vec<&str> = sitemap
        .split("<loc>")
        .skip(1)
        .filter_map(|s| s.split("</loc>").next())
        .collect();
    // The one query --allow-query names is a page; a session, a tracker or any other is not.
    assert_eq!(
        listed,
        [
            "http://h.test/from-log/",
            "http://h.test/good/",
            "http://h.test/list/?page=2"
        ]
    );
    for refused in [
        "cookie",
        "redirected",
        "answered 401",
        "private",
        "larger than",
    ] {
        assert!(said.contains(refused), "{refused}: {said}");
    }
    let asked = web.log();
    assert!(asked.iter().all(|l| l.starts_with("h.test ")), "{asked:?}");
    assert!(
        !asked
            .iter()
            .any(|l| l.contains("/private/") || l.contains("session") || l.contains("utm_")),
        "{asked:?}"
    );

    // The site's server down: `--once` says so and changes nothing of what is published.
    let closed = free_port();
    let down = Command::new(agent_bin())
        .arg("--origin")
        .arg(format!("http://127.0.0.1:{closed}"))
        .args(["--base-url", "http://h.test/", "--once"])
        .arg("--state")
        .arg(tmp.path().join("state"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&down.stderr);
    assert!(!down.status.success());
    assert!(said.contains("cannot be reached"), "{said}");
    assert_eq!(
        std::fs::read_to_string(out.join("sitemap.xml")).unwrap(),
        sitemap
    );

    // The service: pings from strangers and of other sites refused, a flood bounded.
    let _agent = Killed(
        args(false)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    wait_for(20, "the agent's service", || {
        webcoop::servers::http_get(addr, "/.well-known/webcoop/healthz", &[])
            .is_ok_and(|r| r.status == 200)
    });
    // The console shows what was refused, and why.
    let console = std::net::SocketAddr::from(([127, 0, 0, 1], console_port));
    wait_for(20, "the console's refusals", || {
        webcoop::servers::http_get(console, "/api/excluded", &[]).is_ok_and(|r| {
            let text = String::from_utf8_lossy(&r.body);
            r.status == 200 && text.contains("cookie/") && text.contains("private")
        })
    });
    let post = |headers: &[(&str, &str)], body: &[u8]| {
        http_request(addr, "POST", "/.well-known/webcoop/ping", headers, body).unwrap()
    };
    let good = b"hub.mode=publish&hub.url=http://h.test/good/";
    // Through a proxy nobody said to trust: its address is not the sender's.
    assert_eq!(post(&[("X-Forwarded-For", "127.0.0.1")], good).status, 403);
    assert_eq!(post(&[("X-Real-IP", "127.0.0.1")], good).status, 403);
    assert_eq!(post(&[], good).status, 200);
    let bad = [
        (&b"hub.mode=publish&hub.url=http://evil.test/x"[..], 400),
        (b"hub.mode=publish&hub.url=http://h.test:9999/x", 400),
        (b"hub.mode=publish&hub.url=http://h.test/q/?session=1", 400),
        (b"hub.mode=publish&hub.url=not%20a%20url", 400),
        (b"hub.mode=publish", 400),
        (b"hub.mode=subscribe&hub.url=http://h.test/good/", 400),
        (b"<methodCall><methodName>weblogUpdates.ping</methodName></methodCall>", 400),
        (
            b"<!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;\">]><methodCall><methodName>&b;</methodName></methodCall>",
            400,
        ),
    ];
    for (body, status) in bad {
        let r = post(&[], body);
        assert_eq!(r.status, status, "{}", String::from_utf8_lossy(body));
    }
    let huge = vec![b'a'; 1 << 20];
    assert_eq!(post(&[], &huge).status, 413);
    // A thousand pings in a row: each is answered, the agent still serves, and the site is
    // not read again for each (its sitemaps at most every 5 s).
    let readings = || {
        web.log()
            .iter()
            .filter(|l| l.ends_with("/robots.txt"))
            .count()
    };
    let before = readings();
    let started = std::time::Instant::now();
    for _ in 0..1000 {
        assert_eq!(post(&[], good).status, 200);
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let most = 2 + started.elapsed().as_secs() as usize / 5;
    assert!(
        readings() - before <= most,
        "{} readings of the site for 1,000 pings in {:?}",
        readings() - before,
        started.elapsed()
    );
    assert_eq!(
        webcoop::servers::http_get(addr, "/.well-known/webcoop/healthz", &[])
            .unwrap()
            .status,
        200
    );
}

/// A post's comment feed, whose only change at an edit is its build date, as WordPress's.
fn comment_feed(built: &str) -> Canned {
    Canned::ok(
        "application/rss+xml; charset=UTF-8",
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><rss version=\"2.0\"><channel>\
             <title>Comments on: Second post</title><link>http://h.test/second-post/</link>\
             <lastBuildDate>{built}</lastBuildDate><description>Just another site</description>\
             <language>en-US</language></channel></rss>"
        ),
    )
}

/// A page that prints the time at one-second resolution, as many themes do.
fn clock_page(time: &str) -> Canned {
    opening_hours(time, "Opening hours")
}

/// The clock's page with its heading, `title`, far enough from the clock that the text the
/// clock is known by stays the same.
fn opening_hours(time: &str, title: &str) -> Canned {
    Canned::ok(
        "text/html",
        format!(
            "<html><body><h1>{title}</h1><p>Mon to Fri.</p><footer>Served at {time} by the shop.</footer></body></html>"
        ),
    )
}

/// The agent in origin mode for `h.test` on `web`, its files in `dir`, pings taken from
/// loopback: the process, its service's address, where it writes what it says, its output.
fn origin_agent(
    web: &HostileWeb,
    dir: &std::path::Path,
    extra: &[&str],
) -> (
    Killed,
    std::net::SocketAddr,
    std::path::PathBuf,
    std::path::PathBuf,
) {
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    let said_at = dir.join("agent.err");
    let port = free_port();
    let agent = Killed(
        Command::new(agent_bin())
            .arg("--origin")
            .arg(format!("http://{}", web.addr))
            .args(["--base-url", "http://h.test/", "--state"])
            .arg(dir.join("state"))
            .arg("--out")
            .arg(&out)
            .args(["--origin-rate", "200", "--notify-from", "127.0.0.1/32"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&said_at).unwrap())
            .spawn()
            .unwrap(),
    );
    (agent, ([127, 0, 0, 1], port).into(), said_at, out)
}

#[test]
fn an_edit_between_two_asks_is_not_learned_as_volatile_and_later_edits_still_count() {
    let web = HostileWeb::start();
    web.set(
        HOST,
        "/robots.txt",
        Canned::ok(
            "text/plain",
            "User-agent: *\nSitemap: http://h.test/pages.xml\n",
        ),
    );
    let mut set = String::from(
        r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for p in ["second-post/feed/", "counter/", "hours/"] {
        set.push_str(&format!("<url><loc>http://h.test/{p}</loc></url>"));
    }
    set.push_str("</urlset>");
    web.set(HOST, "/pages.xml", Canned::ok("application/xml", set));
    let built = |minute: u32| format!("Sat, 28 Nov 2026 20:{minute:02}:00 +0000");
    web.set(HOST, "/second-post/feed/", comment_feed(&built(0)));
    web.set(HOST, "/hours/", clock_page("09:00:00"));
    // The honest twin: a counter, new at every request, is learned and stays quiet.
    let counter = |n: usize| {
        Canned::ok(
            "text/html",
            format!(
                "<html><body><h1>Guest book</h1><p>You are visitor number {n} of this page.</p><p>Sign below.</p></body></html>"
            ),
        )
    };
    web.set(HOST, "/counter/", counter(0));
    web.then(HOST, "/counter/", (1..2000).map(counter).collect());

    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, "s3cret-s3cret-s3cret\n").unwrap();
    let secret_arg = secret.display().to_string();
    let (_agent, addr, said_at, _out) =
        origin_agent(&web, tmp.path(), &["--notify-secret-file", &secret_arg]);
    let said = || std::fs::read_to_string(&said_at).unwrap_or_default();
    wait_for(30, "the baseline", || said().contains("baseline recorded"));
    let changes = || {
        webcoop::servers::http_get(addr, "/.well-known/webcoop/changes?since=0", &[])
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .unwrap_or_default()
    };
    let sha = |c: &Canned| Sha256Digest::of(&c.body).etag().to_string();
    let ping = |path: &str| {
        let body = format!("hub.mode=publish&hub.url=http://h.test/{path}");
        let r = http_request(
            addr,
            "POST",
            "/.well-known/webcoop/ping",
            &[],
            body.as_bytes(),
        );
        assert_eq!(r.unwrap().status, 200);
    };
    let asked = |path: &str| {
        web.log()
            .iter()
            .filter(|l| l.as_str() == format!("h.test /{path}"))
            .count()
    };

    // The post is edited while the agent asks twice: its first answer has one build date,
    // the next ones another. That is an edit, not a part new at every request.
    web.then(
        HOST,
        "/second-post/feed/",
        vec![comment_feed(&built(1)), comment_feed(&built(2))],
    );
    ping("second-post/feed/");
    let raced = sha(&comment_feed(&built(2)));
    wait_for(30, "the raced edit", || changes().contains(&raced));
    // A later edit changes the build date again, and only it: still a change.
    web.set(HOST, "/second-post/feed/", comment_feed(&built(3)));
    ping("second-post/feed/");
    let edited = sha(&comment_feed(&built(3)));
    wait_for(30, "the edit after the race", || {
        changes().contains(&edited)
    });
    assert!(!said().contains(" second-post/feed/: "), "{}", said());

    // The counter is learned at its first check after the baseline. The baseline's version
    // differs from every later answer only in the counter: no check publishes a change.
    let published = changes().matches("/counter/").count();
    ping("counter/");
    wait_for(30, "the counter learned", || {
        said().contains("counter/: 1 parts differ from one request to the next")
    });
    let before = asked("counter/");
    ping("counter/");
    wait_for(30, "the counter checked again", || {
        asked("counter/") > before
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        changes().matches("/counter/").count(),
        published,
        "{}",
        changes()
    );

    // A clock of one-second resolution: two asks straddle a second now and then. Once is an
    // edit; the same region straddled again is learned, and that straddle is no change: the
    // version listed differs from it only in the clock.
    web.then(
        HOST,
        "/hours/",
        vec![clock_page("09:00:01"), clock_page("09:00:02")],
    );
    ping("hours/");
    let edited = sha(&clock_page("09:00:02"));
    wait_for(30, "the clock straddled", || changes().contains(&edited));
    let quiet = changes().matches("/hours/").count();
    web.then(
        HOST,
        "/hours/",
        vec![clock_page("09:05:07"), clock_page("09:05:08")],
    );
    ping("hours/");
    wait_for(30, "the clock learned", || {
        said().contains(" hours/: 1 parts differ")
    });
    web.set(HOST, "/hours/", clock_page("11:42:13"));
    let before = asked("hours/");
    ping("hours/");
    wait_for(30, "the clock checked again", || asked("hours/") > before);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(changes().matches("/hours/").count(), quiet, "{}", changes());
    // The twin: an edit beside the learned clock is still a change.
    let reopened = opening_hours("11:50:00", "Opening hours and holidays");
    let edit = sha(&reopened);
    web.set(HOST, "/hours/", reopened);
    ping("hours/");
    wait_for(30, "the edit beside the clock", || {
        changes().contains(&edit)
    });
    assert!(
        !said().contains("hours/: its template changed"),
        "{}",
        said()
    );
    assert!(!said().contains("panicked"), "{}", said());
}

/// A page of a generated, minified site: its generation time right against the closing tags,
/// with no whitespace (the learned regions must end at markup), and links to every page.
fn minified(i: usize, pages: usize, text: &str, n: usize) -> Canned {
    let links: String = (0..pages)
        .map(|j| format!("<a href=\"/p{j}/\">Page {j}</a>"))
        .collect();
    Canned::ok(
        "text/html",
        format!(
            "<!DOCTYPE html><html><head><title>Page {i}</title></head><body><h1>Page {i}</h1><nav>{links}</nav><p>{text}</p><footer>Generated 2026-12-06T12:{:02}:{:02}Z</footer></body></html>",
            n / 60 % 60,
            n % 60
        ),
    )
}

#[test]
fn a_minified_generated_site_is_learned_and_one_edit_takes_nothing_out() {
    const PAGES: usize = 12;
    let web = HostileWeb::start();
    web.set(
        HOST,
        "/robots.txt",
        Canned::ok(
            "text/plain",
            "User-agent: *\nSitemap: http://h.test/pages.xml\n",
        ),
    );
    let mut set = String::from(
        r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
    );
    for j in 0..PAGES {
        set.push_str(&format!("<url><loc>http://h.test/p{j}/</loc></url>"));
    }
    set.push_str("</urlset>");
    web.set(HOST, "/pages.xml", Canned::ok("application/xml", set));
    // Every answer a new generation time.
    let text = "The same words on every answer of this page.";
    for j in 0..PAGES {
        let path = format!("/p{j}/");
        web.set(HOST, &path, minified(j, PAGES, text, 0));
        web.then(
            HOST,
            &path,
            (1..3000).map(|n| minified(j, PAGES, text, n)).collect(),
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let (_agent, addr, said_at, out) = origin_agent(&web, tmp.path(), &[]);
    let said = || std::fs::read_to_string(&said_at).unwrap_or_default();
    wait_for(30, "the baseline", || said().contains("baseline recorded"));
    let changes = || {
        webcoop::servers::http_get(addr, "/.well-known/webcoop/changes?since=0", &[])
            .map(|r| String::from_utf8_lossy(&r.body).into_owned())
            .unwrap_or_default()
    };
    let listed = || std::fs::read_to_string(out.join("robots.rdf")).unwrap_or_default();
    for j in 0..PAGES {
        assert!(listed().contains(&format!("http://h.test/p{j}/")), "p{j}");
    }
    // One page edited, and announced.
    let edited = "Words an editor changed on this page.";
    web.then(
        HOST,
        "/p3/",
        (3000..6000)
            .map(|n| minified(3, PAGES, edited, n))
            .collect(),
    );
    let r = http_request(
        addr,
        "POST",
        "/.well-known/webcoop/ping",
        &[],
        b"hub.mode=publish&hub.url=http://h.test/p3/",
    );
    assert_eq!(r.unwrap().status, 200);
    wait_for(30, "the edit announced", || changes().contains("/p3/"));
    // Its generation time was learned at the closing tags, and nothing left the site.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let feed = changes();
    assert!(!feed.contains("deleted"), "{feed}\n{}", said());
    assert!(!said().contains("changes at every request"), "{}", said());
    for j in 0..PAGES {
        assert!(
            listed().contains(&format!("http://h.test/p{j}/")),
            "p{j}: {}",
            said()
        );
    }
}

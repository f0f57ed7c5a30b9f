//! The agent in origin mode beside a real WordPress, as Debian packages it: nginx, PHP-FPM and
//! MariaDB on loopback, the site installed through its own install screen and driven through
//! XML-RPC (new posts, edits, a comment, a deletion).
//!
//! With WordPress's own pings (its "Update Services", sent by WP-Cron), a pushed crawler's
//! copy matches what nginx serves after each step, its requests counted from nginx's log
//! beside a polling crawler's. Without any announcement, the agent's checks find each edit,
//! counted the same way; nonces do not count as changes, and a page that changes at every
//! request is not published. Strangers' pings are refused.

use super::crawl_coop::{crawl_seeds, held_urls, wait_for};
use super::wordpress_site::{SECRET, WordPress};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;
use webcoop::servers::{http_get, http_request};
use webcoop_protocol::validator::Sha256Digest;
use webcoop_testkit::workspace_bin;

#[test]
fn a_pinging_wordpress_is_kept_exact_in_a_pushed_crawler_and_strangers_pings_are_refused() {
    let Some(wp) = WordPress::start(&[]) else {
        return;
    };
    wp.ping_the_agent();
    let _agent = wp.start_agent(&[]);
    let hello = format!("{}hello-world/", wp.base);
    let sample = format!("{}sample-page/", wp.base);
    wait_for("the baseline", Duration::from_secs(30), || {
        let l = wp.listed();
        l.contains(&hello) && l.contains(&sample)
    });
    let first = wp.listed();
    assert!(
        first
            .iter()
            .all(|u| !u.contains('?') && !u.contains("wp-admin")),
        "{first:?}"
    );
    // A snapshot of the pages as WordPress served them, for a crawler's first visit.
    wait_for(
        "robots.rdf naming a snapshot",
        Duration::from_secs(30),
        || {
            std::fs::read_to_string(wp.out.join("robots.rdf"))
                .is_ok_and(|t| t.contains("wc:snapshot"))
        },
    );

    // A crawler kept fresh by pushes, and one polling every page every 5 s, side by side (a
    // poll of WordPress costs PHP its whole page: faster polling would load the test machine).
    // Each runs for ten minutes at most, and stops with the test: under CI's load the four
    // steps below outlasted the two minutes they once had.
    let resolve = format!("{}={}", wp.host, wp.nginx.addr);
    let pushed = wp.tmp.path().join("crawl-push");
    let polled = wp.tmp.path().join("crawl-poll");
    let _push = crawl_seeds(
        std::slice::from_ref(&wp.base),
        &pushed,
        "push",
        600,
        600,
        &[
            "--resolve".into(),
            resolve.clone(),
            "--callback-listen".into(),
            "127.0.0.1:0".into(),
            "--user-agent".into(),
            "pushed-crawler".into(),
        ],
    );
    let _poll = crawl_seeds(
        std::slice::from_ref(&wp.base),
        &polled,
        "off",
        600,
        5,
        &[
            "--resolve".into(),
            resolve,
            "--user-agent".into(),
            "polling-crawler".into(),
        ],
    );
    wp.wait_exact("the first crawl", &pushed, &[]);
    let counted = |what: &str| {
        let (push_n, push_b) = wp.requests_by("pushed-crawler");
        let (poll_n, poll_b) = wp.requests_by("polling-crawler");
        let (agent_n, agent_b) = wp.requests_by("compatible; webcoop-crawl/");
        eprintln!(
            "wordpress, {what}: pushed crawler {push_n} requests {push_b} B; polling crawler {poll_n} requests {poll_b} B; agent {agent_n} local requests {agent_b} B"
        );
        (push_n, push_b, poll_n, poll_b)
    };
    let before = counted("after the first crawl");
    let taken = std::fs::read_to_string(pushed.join("crawl.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(webcoop_crawler::crawl_log::FROM_SNAPSHOT))
        .count();
    eprintln!("wordpress: the pushed crawler took {taken} pages from the agent's snapshot");
    // The pages WordPress's sitemaps name but the home page, which is the seed (queued before
    // the listing came): post, page, author, category. (The install's own visits, made by the
    // editor who installed the site, are not pages the agent lists.)
    assert!(
        taken >= 4,
        "{taken} pages from the snapshot:\n{}\n{}",
        std::fs::read_to_string(pushed.join("crawl.log")).unwrap_or_default(),
        wp.agent_said()
    );
    let changes_before = wp.changes().matches("<entry>").count();

    // A new post: WordPress pings when WP-Cron runs, naming only the home and the feed; the
    // agent reads the sitemaps again and finds the post.
    let id = wp.new_post("Second post", "Fresh words.");
    wp.cron();
    let second = format!("{}second-post/", wp.base);
    wait_for("the pinged post", Duration::from_secs(15), || {
        wp.listed().contains(&second)
    });
    assert!(
        wp.agent_said().contains("told of changes"),
        "{}",
        wp.agent_said()
    );
    assert!(wp.changes().contains("created /second-post/"));
    wp.wait_exact("the pushed crawler, new post", &pushed, &[]);
    counted("after a new post");

    // An edit and a comment, announced to nobody: found by the agent's checks, pushed.
    wp.edit_post(&id, "Edited words.");
    wait_for("the unannounced edit", Duration::from_secs(20), || {
        wp.changes().contains("modified /second-post/")
    });
    wp.wait_exact("the pushed crawler, edit", &pushed, &[]);
    let modified = wp.changes().matches("modified /second-post/").count();
    wp.comment(&id, "A first comment.");
    wait_for("the comment", Duration::from_secs(20), || {
        wp.changes().matches("modified /second-post/").count() > modified
    });
    wp.wait_exact("the pushed crawler, comment", &pushed, &[]);
    let held = held_urls(&pushed);
    let served = wp.served(&second).unwrap();
    assert!(String::from_utf8_lossy(&served).contains("A first comment."));
    assert_eq!(
        held.get(&second),
        Some(&Sha256Digest::of(&served).etag().to_string())
    );

    // A deletion: the page leaves the listing and the crawler's copies.
    wp.delete_post(&id);
    wait_for("the deletion", Duration::from_secs(20), || {
        !wp.listed().contains(&second)
    });
    assert!(wp.changes().contains("deleted /second-post/"));
    wp.wait_exact(
        "the pushed crawler, deletion",
        &pushed,
        std::slice::from_ref(&second),
    );
    let after = counted("after the four steps");
    let changed = wp.changes().matches("<entry>").count() - changes_before;
    let (push_n, push_b) = (after.0 - before.0, after.1 - before.1);
    let (poll_n, poll_b) = (after.2 - before.2, after.3 - before.3);
    eprintln!(
        "wordpress: {changed} page changes; per change, pushed {:.2} requests {:.0} B, polling {:.2} requests {:.0} B",
        push_n as f64 / changed as f64,
        push_b as f64 / changed as f64,
        poll_n as f64 / changed as f64,
        poll_b as f64 / changed as f64
    );
    assert!(changed > 0);
    assert!(
        push_n < poll_n && push_b < poll_b,
        "push {push_n} requests {push_b} B against polling {poll_n} requests {poll_b} B"
    );

    // Strangers' pings: from a stranger behind the proxy the agent trusts, with a wrong
    // secret, or naming another site; the secret and the agent's own CLI are let in.
    let ping = |headers: &[(&str, &str)], path: &str, body: &str| {
        http_request(
            ([127, 0, 0, 1], wp.agent_port).into(),
            "POST",
            path,
            headers,
            body.as_bytes(),
        )
        .unwrap()
    };
    let publish = format!("hub.mode=publish&hub.url={hello}");
    let stranger = [("X-Forwarded-For", "203.0.113.7")];
    let via_proxy = ping(&stranger, "/.well-known/webcoop/ping", &publish);
    assert_eq!(via_proxy.status, 403);
    // The same stranger through nginx, at the hub, where WebSub publishers post.
    let at_hub = http_request(
        wp.nginx.addr,
        "POST",
        "/.well-known/webcoop/hub",
        &[("Host", &wp.host), ("X-Forwarded-For", "203.0.113.7")],
        publish.as_bytes(),
    )
    .unwrap();
    assert_eq!(
        at_hub.status,
        403,
        "{}",
        String::from_utf8_lossy(&at_hub.body)
    );
    let wrong = ping(
        &[
            ("X-Forwarded-For", "203.0.113.7"),
            ("Authorization", "Bearer wrong-secret-000000"),
        ],
        "/.well-known/webcoop/ping",
        &publish,
    );
    assert_eq!(wrong.status, 403);
    let elsewhere = ping(
        &[],
        "/.well-known/webcoop/ping",
        "hub.mode=publish&hub.url=http://other.test/page/",
    );
    assert_eq!(elsewhere.status, 400);
    assert!(String::from_utf8_lossy(&elsewhere.body).contains("another site"));
    let xml_elsewhere = ping(
        &[],
        "/.well-known/webcoop/ping",
        "<?xml version=\"1.0\"?><methodCall><methodName>weblogUpdates.ping</methodName><params>\
         <param><value>x</value></param><param><value>http://other.test/</value></param></params></methodCall>",
    );
    assert_eq!(xml_elsewhere.status, 400);
    assert!(String::from_utf8_lossy(&xml_elsewhere.body).contains("<boolean>1</boolean>"));
    let with_key = ping(
        &stranger,
        &format!("/.well-known/webcoop/ping?key={SECRET}"),
        &publish,
    );
    assert_eq!(with_key.status, 200);
    let notify = |extra: &[&str]| {
        Command::new(workspace_bin("webcoop-agent"))
            .args(["--listen", &format!("127.0.0.1:{}", wp.agent_port)])
            .args(extra)
            .output()
            .unwrap()
    };
    let secret = wp.secret_file.to_str().unwrap();
    let told = notify(&["--notify-secret-file", secret, "notify", &hello]);
    assert!(
        told.status.success(),
        "{}",
        String::from_utf8_lossy(&told.stderr)
    );
    let refused = notify(&["notify", "http://other.test/x"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("another site"));
    assert!(wp.listed().iter().all(|u| u.starts_with(&wp.base)));
    assert!(!wp.agent_said().contains("panicked"), "{}", wp.agent_said());
}

/// A nonce in a hidden input, as forms and plugins write them: new at every request.
const NONCE_PLUGIN: &str = r#"<?php
add_filter('the_content', function ($c) {
    if (is_single('hello-world')) {
        $c .= '<form><input type="hidden" name="_wpnonce" value="' . bin2hex(random_bytes(5)) . '" /></form>';
    }
    return $c;
});
"#;

/// Noise filling most of one page: different at every request, beyond what can be learned
/// as a volatile part (a short random quote would be learned, and the page published).
const RANDOM_PLUGIN: &str = r#"<?php
add_filter('the_content', function ($c) {
    if (is_page('sample-page')) {
        $c .= '<p>Noise: ' . bin2hex(random_bytes(40000)) . '</p>';
    }
    return $c;
});
"#;

#[test]
fn a_silent_wordpress_is_followed_by_checking_its_pages_and_nonces_are_no_changes() {
    let Some(wp) = WordPress::start(&[("nonce.php", NONCE_PLUGIN), ("random.php", RANDOM_PLUGIN)])
    else {
        return;
    };
    // No Update Services, no pings: only the agent's checks (and its readings of the sitemaps
    // every 2 s) can find anything.
    let agent = wp.start_agent(&["--discover-every", "2"]);
    let hello = format!("{}hello-world/", wp.base);
    let sample = format!("{}sample-page/", wp.base);
    wait_for("the baseline", Duration::from_secs(30), || {
        wp.listed().contains(&hello)
    });
    // The page that changes at every request, published at the baseline, keeps its last
    // published version from its first check on: its noise is not learned, but it did not
    // leave the site (nothing that links to it is checked again), and no change of it is
    // announced.
    wait_for("the random page kept", Duration::from_secs(20), || {
        wp.agent_said()
            .contains("keeps its last published version: changes at every request")
    });
    assert!(wp.listed().contains(&sample), "{:?}", wp.listed());
    assert!(!wp.changes().contains("/sample-page/<"), "{}", wp.changes());
    // The nonce page stays listed; that its checks log no change is shown below, where the
    // change log must be quiet for longer than the longest interval between checks.
    assert!(wp.listed().contains(&hello));

    let mut found: BTreeMap<&str, usize> = BTreeMap::new();
    // Each step is found when the change log holds more entries of `entry` than before it.
    let mut step = |what: &'static str, act: &dyn Fn(), entry: &str| {
        let (n0, _) = wp.requests_by("compatible; webcoop-crawl/");
        let before = wp.changes().matches(entry).count();
        act();
        wait_for(what, Duration::from_secs(20), || {
            std::thread::sleep(Duration::from_millis(100));
            wp.changes().matches(entry).count() > before
        });
        let (n1, _) = wp.requests_by("compatible; webcoop-crawl/");
        eprintln!(
            "wordpress without pings, {what}: found after {} local requests",
            n1 - n0
        );
        found.insert(what, n1 - n0);
    };
    let id = std::cell::RefCell::new(String::new());
    step(
        "a new post",
        &|| *id.borrow_mut() = wp.new_post("Quiet post", "Quiet words."),
        "created /quiet-post/<",
    );
    step(
        "an edit",
        &|| wp.edit_post(&id.borrow(), "Quieter words."),
        "modified /quiet-post/<",
    );
    step(
        "a comment",
        &|| wp.comment(&id.borrow(), "A quiet comment."),
        "modified /quiet-post/<",
    );
    step(
        "a deletion",
        &|| wp.delete_post(&id.borrow()),
        "deleted /quiet-post/<",
    );
    assert_eq!(found.len(), 4);
    assert!(wp.listed().contains(&sample), "kept, not withdrawn");
    assert!(!wp.agent_said().contains("panicked"), "{}", wp.agent_said());

    // Killed with SIGKILL and started again: every page is checked again, and nothing that
    // did not change is announced. First the deletion's consequences (the home page, the
    // archives) are let in: the log is quiet for longer than the longest interval.
    let mut entries = wp.changes().matches("<entry>").count();
    wait_for("a quiet change log", Duration::from_secs(60), || {
        std::thread::sleep(Duration::from_secs(5));
        let now = wp.changes().matches("<entry>").count();
        std::mem::replace(&mut entries, now) == now
    });
    let listed = wp.listed();
    drop(agent);
    let _again = wp.start_agent(&["--discover-every", "2"]);
    wait_for("the agent again", Duration::from_secs(20), || {
        http_get(
            ([127, 0, 0, 1], wp.agent_port).into(),
            "/.well-known/webcoop/healthz",
            &[],
        )
        .is_ok_and(|r| r.status == 200)
    });
    std::thread::sleep(Duration::from_secs(6));
    let log = wp.changes();
    assert_eq!(log.matches("<entry>").count(), entries, "{log}");
    assert_eq!(wp.listed(), listed);
}

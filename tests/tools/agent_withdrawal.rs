//! Withdrawn means gone (issue 46), on Debian's WordPress with no pings configured: a post
//! trashed and another made private through the REST API leave everything the agent serves
//! (robots.rdf, the sitemap, the changes feed, batches, `delta/` from any version a crawler
//! holds, snapshots) within a minute, found through the write in nginx's access log; with a
//! notification, sooner. A page under an nginx rule that lets loopback in is not published, and
//! `check` names the rule; a page that prints its generation time and a counter is published,
//! and only real edits reach the changes feed.

use super::crawl_coop::wait_for;
use super::wordpress_site::{REST_AUTH_PLUGIN, WordPress};
use std::process::Command;
use std::time::{Duration, Instant};
use webcoop_testkit::workspace_bin;

/// What nginx logged of the agent's own requests (it asks as a crawler, from its own address).
const AGENT_UA: &str = "compatible; webcoop-crawl/";

/// Every URL robots.rdf lists, with the entity tag a crawler holding it would send back.
fn held(wp: &WordPress) -> Vec<(String, String)> {
    let bytes = std::fs::read(wp.out.join("robots.rdf")).unwrap_or_default();
    let Ok(doc) = webcoop_protocol::robots_rdf::parse(&bytes, &Default::default()) else {
        return Vec::new();
    };
    doc.items
        .into_iter()
        .filter_map(|i| Some((i.url.to_string(), i.etag?.to_string())))
        .collect()
}

/// Waits until nothing the agent serves carries `text`; the seconds it took and the agent's
/// requests to the site meanwhile.
fn gone_within(
    wp: &WordPress,
    text: &str,
    held: &[(String, String)],
    act: impl FnOnce(),
) -> (f64, usize) {
    let (n0, _) = wp.requests_by(AGENT_UA);
    let start = Instant::now();
    act();
    let mut last = Vec::new();
    while start.elapsed() < Duration::from_secs(60) {
        last = wp.carrying(text, held);
        if last.is_empty() {
            let (n1, _) = wp.requests_by(AGENT_UA);
            return (start.elapsed().as_secs_f64(), n1 - n0);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!(
        "{text} still served after 60 s by: {last:#?}\n{}",
        wp.agent_said()
    );
}

#[test]
fn a_post_trashed_or_made_private_leaves_everything_the_agent_serves_within_a_minute() {
    let Some(wp) = WordPress::start(&[("rest-auth.php", REST_AUTH_PLUGIN)]) else {
        return;
    };
    let orchid = wp.new_post("Orchid memo forty-one", "Zanzibar-orchid-41 is the plan.");
    let lantern = wp.new_post(
        "Lantern memo seventy-seven",
        "Quokka-lantern-77 is the key.",
    );
    let heron = wp.new_post("Heron memo nineteen", "Sapphire-heron-19 meets at noon.");
    // Pages are checked again at their own pace, an hour at the soonest: only the write seen
    // in the access log (or a notification) can hurry them.
    let _agent = wp.start_agent_revalidating((3600, 86_400), &["--discover-every", "3600"]);
    let snapshot_dir = wp.out.join(".well-known/webcoop/snapshot");
    wait_for(
        "the baseline and its snapshot",
        Duration::from_secs(60),
        || {
            let listed = wp.listed();
            ["orchid-memo-forty-one/", "lantern-memo-seventy-seven/"]
                .iter()
                .all(|p| listed.contains(&format!("{}{p}", wp.base)))
                && std::fs::read_dir(&snapshot_dir).is_ok_and(|d| {
                    d.flatten()
                        .any(|e| e.file_name().to_string_lossy().ends_with(".warc.zst"))
                })
        },
    );
    let before = held(&wp);
    // The honest twin: before anything leaves, the search finds the texts where they are
    // (the snapshot, the post's own `delta/`, and the archives that show it).
    for text in ["Zanzibar-orchid-41", "Quokka-lantern-77"] {
        let at = wp.carrying(text, &before);
        assert!(
            at.iter().any(|w| w.starts_with("snapshot"))
                && at.iter().filter(|w| w.starts_with("delta/")).count() >= 2,
            "{text} found only in {at:?}"
        );
    }
    let old_snapshots: Vec<_> = std::fs::read_dir(&snapshot_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();

    let (trashed_secs, trashed_requests) =
        gone_within(&wp, "Zanzibar-orchid-41", &before, || wp.trash(&orchid));
    eprintln!(
        "withdrawal without a ping, post trashed: {trashed_secs:.1} s, {trashed_requests} local requests"
    );
    assert!(
        old_snapshots.iter().all(|p| !p.exists()),
        "the snapshot that held it is removed"
    );
    let (private_secs, private_requests) = gone_within(&wp, "Quokka-lantern-77", &before, || {
        wp.make_private(&lantern)
    });
    eprintln!(
        "withdrawal without a ping, post made private: {private_secs:.1} s, {private_requests} local requests"
    );
    // With a notification naming the post, as a deploy hook would send.
    let heron_url = format!("{}heron-memo-nineteen/", wp.base);
    let (pinged_secs, pinged_requests) = gone_within(&wp, "Sapphire-heron-19", &before, || {
        let (status, body) = wp.rest(
            "POST",
            &format!("/wp-json/wp/v2/posts/{heron}"),
            r#"{"status":"draft"}"#,
        );
        assert_eq!(status, 200, "{body}");
        wp.notify(&[&heron_url]);
    });
    eprintln!(
        "withdrawal with a notification, post back to draft: {pinged_secs:.1} s, {pinged_requests} local requests"
    );
    // The site still lists its other pages, and the agent says why each left.
    let listed = wp.listed();
    assert!(
        listed.contains(&format!("{}hello-world/", wp.base)),
        "{listed:?}"
    );
    for gone in [
        "orchid-memo-forty-one/",
        "lantern-memo-seventy-seven/",
        "heron-memo-nineteen/",
    ] {
        assert!(
            !listed.contains(&format!("{}{gone}", wp.base)),
            "{gone} still listed"
        );
    }
    let said = wp.agent_said();
    assert!(
        said.contains("a write to the site in the access log"),
        "{said}"
    );
    assert!(said.contains("withdrawn:"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    // A new snapshot comes once the pages that showed them were checked, without them.
    wait_for("a new snapshot", Duration::from_secs(60), || {
        std::fs::read_dir(&snapshot_dir).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".warc.zst"))
        })
    });
    for text in [
        "Zanzibar-orchid-41",
        "Quokka-lantern-77",
        "Sapphire-heron-19",
    ] {
        assert!(wp.carrying(text, &before).is_empty(), "{text}");
    }
}

/// A counter and the time of generation, written into one post at every request.
const STAMP_PLUGIN: &str = r#"<?php
add_filter('the_content', function ($c) {
    if (is_single('hello-world')) {
        $n = (int) get_option('wc_visits', 0) + 1;
        update_option('wc_visits', $n, false);
        $c .= '<p class="stamp">Page generated at ' . gmdate('H:i:s') . sprintf('.%06d', (int) (fmod(microtime(true), 1) * 1e6)) . ' UTC for visitor number ' . $n . ' of this page.</p>';
    }
    return $c;
});
"#;

#[test]
fn rules_that_let_loopback_in_hide_their_pages_and_stamps_are_no_changes() {
    let locations = "location ^~ /staff-only/ {\n        allow 127.0.0.0/8;\n        deny all;\n        try_files $uri $uri/ /index.php?$args;\n    }\n    \
                     location ^~ /machine-only/ {\n        allow 127.0.0.1;\n        deny all;\n        try_files $uri $uri/ /index.php?$args;\n    }";
    let Some(wp) = WordPress::start_with(&[("stamp.php", STAMP_PLUGIN)], locations) else {
        return;
    };
    wp.new_page("Staff only", "Staff-only-walrus-5 rota.");
    wp.new_page("Machine only", "Machine-only-ibis-8 notes.");
    let _agent = wp.start_agent(&["--discover-every", "2"]);
    let hello = format!("{}hello-world/", wp.base);
    wait_for("the baseline", Duration::from_secs(60), || {
        wp.listed().contains(&hello) && wp.agent_said().contains("baseline recorded")
    });
    let listed = wp.listed();
    for hidden in ["staff-only/", "machine-only/"] {
        assert!(
            !listed.contains(&format!("{}{hidden}", wp.base)),
            "{hidden}: {listed:?}"
        );
    }
    let said = wp.agent_said();
    assert!(
        said.contains("allow 127.0.0.0/8"),
        "the rule is named: {said}"
    );
    // `check` runs in origin mode and names the place and the rule.
    let o = Command::new(workspace_bin("webcoop-agent"))
        .arg("--origin")
        .arg(format!("http://{}", wp.nginx.addr))
        .args(["--base-url", &wp.base, "--state"])
        .arg(wp.tmp.path().join("check-state"))
        .arg("--out")
        .arg(&wp.out)
        .args(["check", "--files"])
        .output()
        .unwrap();
    let checked = String::from_utf8_lossy(&o.stdout);
    assert!(
        checked.contains("staff-only"),
        "{checked}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(checked.contains("allow 127.0.0.0/8"), "{checked}");
    assert!(
        checked
            .lines()
            .any(|l| l.starts_with("hidden") && l.contains("/staff-only/")),
        "{checked}"
    );
    assert!(
        checked
            .lines()
            .any(|l| l.starts_with("published") && l.contains("/hello-world/")),
        "{checked}"
    );

    // The stamped post: published, and quiet while nothing but its stamp changes, the check
    // that learns the stamp included.
    assert!(listed.contains(&hello), "{listed:?}");
    wait_for("the stamp learned", Duration::from_secs(60), || {
        wp.agent_said()
            .contains("parts differ from one request to the next")
    });
    std::thread::sleep(Duration::from_secs(10));
    let quiet = wp.changes().matches("/hello-world/<").count();
    assert_eq!(quiet, 0, "{}", wp.changes());
    std::thread::sleep(Duration::from_secs(10));
    assert_eq!(
        wp.changes().matches("/hello-world/<").count(),
        quiet,
        "{}",
        wp.changes()
    );
    // A real edit still reaches the feed.
    wp.edit_post("1", "Welcome to WordPress, edited for real.");
    wait_for("the edit", Duration::from_secs(30), || {
        wp.changes().contains("modified /hello-world/<")
    });
}

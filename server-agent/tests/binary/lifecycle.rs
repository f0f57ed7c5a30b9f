//! After every kind of edit, the published robots.rdf, sitemap and changes feed say exactly
//! what happened, and a restart in between loses nothing and invents nothing.

use crate::common::{Site, url};
use std::collections::BTreeSet;
use webcoop_protocol::changes_feed::ChangeKind;
use webcoop_protocol::validator::Sha256Digest;

fn paths(set: &[&str]) -> BTreeSet<String> {
    set.iter().map(|s| s.to_string()).collect()
}

fn etag(content: &str) -> String {
    Sha256Digest::of(content.as_bytes()).etag().to_string()
}

#[test]
fn the_first_run_is_a_baseline_not_a_flood_of_creations() {
    let site = Site::new();
    site.write("index.html", "<h1>home</h1>");
    site.write("docs/a.html", "<p>a</p>");
    let _agent = site.start();
    let listed = site.listed();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[&url("docs/a.html")], (8, etag("<p>a</p>")));
    assert!(site.feed().entries.is_empty());
    assert_eq!(site.listing().channel.seq, Some(0));
    let sitemap: Vec<String> = site
        .sitemap_urls()
        .iter()
        .map(|u| u.loc.to_string())
        .collect();
    assert_eq!(sitemap, [url("docs/a.html"), url("index.html")]);
}

#[test]
fn create_edit_rename_delete_touch_each_say_exactly_what_happened() {
    let site = Site::new();
    site.write("index.html", "<h1>home</h1>");
    let mut agent = site.start();

    site.tick(10);
    site.write(
        "new.html",
        "<p>new</p> and a long paragraph that stays the same",
    );
    let r = agent.reconcile_paths(&paths(&["new.html"])).unwrap();
    agent.publish().unwrap();
    assert_eq!(r.changes.len(), 1);
    let feed = site.feed();
    assert_eq!(feed.entries.len(), 1);
    let e = &feed.entries[0];
    assert_eq!(
        (e.seq, e.kind, e.url.as_str()),
        (1, ChangeKind::Created, url("new.html").as_str())
    );
    assert_eq!(
        e.etag.as_ref().unwrap().to_string(),
        etag("<p>new</p> and a long paragraph that stays the same")
    );
    assert_eq!(e.time, site.clock_now());
    assert!(site.listed().contains_key(&url("new.html")));
    let item = site
        .listing()
        .items
        .into_iter()
        .find(|i| i.url.as_str() == url("new.html"))
        .unwrap();
    assert_eq!(
        item.modified,
        site.clock_now(),
        "a watched change is dated when seen"
    );

    site.tick(10);
    site.write(
        "new.html",
        "<p>new</p> and a longer paragraph that stays the same",
    );
    agent.reconcile_paths(&paths(&["new.html"])).unwrap();
    agent.publish().unwrap();
    let e = site.feed().entries.pop().unwrap();
    assert_eq!((e.seq, e.kind), (2, ChangeKind::Modified));
    assert_eq!(
        e.previous_etag.unwrap().to_string(),
        etag("<p>new</p> and a long paragraph that stays the same")
    );
    assert_eq!(
        e.etag.unwrap().to_string(),
        etag("<p>new</p> and a longer paragraph that stays the same")
    );
    let fraction = e.changed_fraction.unwrap();
    assert!(
        fraction > 0.0 && fraction < 0.2,
        "one word of ten: {fraction}"
    );

    site.tick(10);
    std::fs::rename(site.path("new.html"), site.path("renamed.html")).unwrap();
    agent
        .reconcile_paths(&paths(&["new.html", "renamed.html"]))
        .unwrap();
    agent.publish().unwrap();
    let feed = site.feed();
    let last_two: Vec<(ChangeKind, String)> = feed.entries[2..]
        .iter()
        .map(|e| (e.kind, e.url.to_string()))
        .collect();
    assert_eq!(
        last_two,
        [
            (ChangeKind::Deleted, url("new.html")),
            (ChangeKind::Created, url("renamed.html"))
        ]
    );
    let listed = site.listed();
    assert!(!listed.contains_key(&url("new.html")));
    assert_eq!(
        listed[&url("renamed.html")].1,
        etag("<p>new</p> and a longer paragraph that stays the same")
    );

    site.tick(10);
    // Touch without change: a new timestamp, the same content, nothing to announce.
    let f = std::fs::File::options()
        .write(true)
        .open(site.path("index.html"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    drop(f);
    let r = agent.reconcile_paths(&paths(&["index.html"])).unwrap();
    assert_eq!((r.changes.len(), r.touched), (0, 1));

    site.tick(10);
    std::fs::remove_file(site.path("renamed.html")).unwrap();
    agent.reconcile_paths(&paths(&["renamed.html"])).unwrap();
    agent.publish().unwrap();
    let e = site.feed().entries.pop().unwrap();
    assert_eq!(
        (e.seq, e.kind, e.url.to_string()),
        (5, ChangeKind::Deleted, url("renamed.html"))
    );
    assert!(e.etag.is_none());
    assert_eq!(
        site.listed().keys().cloned().collect::<Vec<_>>(),
        [url("index.html")]
    );
    assert_eq!(site.listing().channel.seq, Some(5));
    assert_eq!(site.sitemap_urls().len(), 1);
}

#[test]
fn a_file_dated_in_the_future_is_published_not_waited_for() {
    let site = Site::new();
    site.write("index.html", "<h1>home</h1>");
    let mut agent = site.agent_with(webcoop_agent::AgentOptions {
        debounce_ms: Some(200),
        ..site.cli()
    });
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    // As from a tarball made on a machine whose clock runs an hour ahead.
    site.write("ahead.html", "<p>from the future</p>");
    let f = std::fs::File::options()
        .write(true)
        .open(site.path("ahead.html"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(3600))
        .unwrap();
    drop(f);
    // Just written, dated now: still settling, looked at again later.
    site.write("fresh.html", "<p>being written</p>");
    let r = agent
        .reconcile_paths(&paths(&["ahead.html", "fresh.html"]))
        .unwrap();
    assert_eq!(r.unstable, ["fresh.html"]);
    assert_eq!(r.changes.len(), 1);
    agent.publish().unwrap();
    assert!(site.listed().contains_key(&url("ahead.html")));
}

#[test]
fn removing_a_directory_deletes_everything_under_it() {
    let site = Site::new();
    for i in 0..5 {
        site.write(&format!("old/{i}.html"), &format!("{i}"));
    }
    site.write("keep.html", "k");
    let mut agent = site.start();
    std::fs::remove_dir_all(site.path("old")).unwrap();
    let r = agent.reconcile_paths(&paths(&["old"])).unwrap();
    assert_eq!(r.changes.len(), 5);
    assert!(r.changes.iter().all(|c| c.kind == ChangeKind::Deleted));
    agent.publish().unwrap();
    assert_eq!(site.listed().len(), 1);
}

#[test]
fn a_new_directory_is_walked() {
    let site = Site::new();
    let mut agent = site.start();
    for i in 0..3 {
        site.write(&format!("new/deep/{i}.html"), "x");
    }
    let r = agent.reconcile_paths(&paths(&["new"])).unwrap();
    assert_eq!(r.changes.len(), 3);
}

#[test]
fn a_mass_change_is_announced_change_by_change() {
    let site = Site::new();
    for i in 0..300 {
        site.write(
            &format!("p/{i}.html"),
            &format!("<p>version 1 of page {i}</p>"),
        );
    }
    let mut agent = site.start();
    site.tick(60);
    for i in 0..300 {
        site.write(
            &format!("p/{i}.html"),
            &format!("<p>version 2 of page {i}</p>"),
        );
    }
    let r = agent.full_scan(true).unwrap();
    agent.publish().unwrap();
    assert_eq!(r.changes.len(), 300);
    let seqs: Vec<u64> = site.feed().entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=300).collect::<Vec<_>>());
    let listed = site.listed();
    for i in 0..300 {
        assert_eq!(
            listed[&url(&format!("p/{i}.html"))].1,
            etag(&format!("<p>version 2 of page {i}</p>"))
        );
    }
}

#[test]
fn a_restart_announces_only_what_changed_while_down() {
    let site = Site::new();
    site.write("same.html", "unchanged");
    site.write("edit.html", "before");
    site.write("gone.html", "bye");
    site.write("touched.html", "touch me");
    let agent = site.start();
    drop(agent);

    // While the agent is down.
    site.tick(3600);
    site.write("edit.html", "after");
    std::fs::remove_file(site.path("gone.html")).unwrap();
    site.write("born.html", "hello");
    let f = std::fs::File::options()
        .write(true)
        .open(site.path("touched.html"))
        .unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(100))
        .unwrap();
    drop(f);

    let mut agent = site.agent_with(site.cli());
    let r = agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    let mut seen: Vec<(ChangeKind, String)> =
        r.changes.iter().map(|c| (c.kind, c.path.clone())).collect();
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        seen,
        [
            (ChangeKind::Created, "born.html".to_string()),
            (ChangeKind::Modified, "edit.html".to_string()),
            (ChangeKind::Deleted, "gone.html".to_string()),
        ]
    );
    assert_eq!(r.touched, 1);

    // A second restart with nothing changed announces nothing.
    drop(agent);
    let mut agent = site.agent_with(site.cli());
    let r = agent.full_scan(false).unwrap();
    assert!(r.changes.is_empty(), "{:?}", r.changes);
    assert_eq!(agent.store().head_seq().unwrap(), 3);
}

#[test]
fn versions_are_kept_for_text_and_not_for_binaries() {
    let site = Site::new();
    site.write("page.html", "v0");
    std::fs::write(site.path("image.png"), [0x89, b'P', b'N', b'G', 0, 1, 2, 3]).unwrap();
    let mut cli = site.cli();
    cli.versions = Some(3);
    let mut agent = site.agent_with(cli);
    agent.full_scan(false).unwrap();
    for v in 1..=5 {
        site.tick(1);
        site.write("page.html", &format!("v{v}"));
        std::fs::write(site.path("image.png"), [0x89, b'P', b'N', b'G', v]).unwrap();
        agent
            .reconcile_paths(&paths(&["page.html", "image.png"]))
            .unwrap();
    }
    let kept = agent.store().versions_of("page.html").unwrap();
    let expected: Vec<Sha256Digest> = ["v5", "v4", "v3"]
        .iter()
        .map(|v| Sha256Digest::of(v.as_bytes()))
        .collect();
    assert_eq!(kept, expected);
    assert_eq!(
        agent
            .store()
            .version("page.html", &expected[0])
            .unwrap()
            .unwrap(),
        b"v5"
    );
    assert!(agent.store().versions_of("image.png").unwrap().is_empty());
    assert_eq!(
        agent
            .store()
            .file_facts("image.png")
            .unwrap()
            .map(|(_, count)| count),
        Some(5)
    );
    assert_eq!(agent.store().history("page.html").unwrap().len(), 5);
}

#[test]
fn robots_txt_disallow_lines_shape_the_listing_and_follow_its_edits() {
    let site = Site::new();
    site.write("robots.txt", "User-agent: *\nDisallow: /private/\n");
    site.write("private/secret.html", "s");
    site.write("public.html", "p");
    let mut agent = site.start();
    assert!(!site.listed().contains_key(&url("private/secret.html")));
    site.write("robots.txt", "User-agent: *\nDisallow:\n");
    let r = agent.reconcile_paths(&paths(&["robots.txt"])).unwrap();
    agent.publish().unwrap();
    assert!(
        r.changes
            .iter()
            .any(|c| c.path == "private/secret.html" && c.kind == ChangeKind::Created)
    );
    assert!(site.listed().contains_key(&url("private/secret.html")));

    let mut cli = site.cli();
    cli.ignore_robots_txt = Some(true);
    drop(agent);
    site.write("robots.txt", "User-agent: *\nDisallow: /\n");
    let mut agent = site.agent_with(cli);
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    assert!(site.listed().contains_key(&url("public.html")));
}

/// The files an index names, by name: sitemap.xml's `<sitemap>` entries or robots.rdf's parts.
fn part_files(site: &Site) -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
    let name = |u: &url::Url| site.out().join(u.path().trim_start_matches('/'));
    let root = std::fs::read(site.out().join("sitemap.xml")).unwrap();
    let sitemaps = match webcoop_protocol::sitemap::parse(
        &root,
        &Default::default(),
        webcoop_protocol::sitemap::Leniency::Strict,
    )
    .unwrap()
    .document
    {
        webcoop_protocol::sitemap::SitemapDocument::Index(refs) => {
            refs.iter().map(|r| name(&r.loc)).collect()
        }
        _ => Vec::new(),
    };
    let index = webcoop_protocol::robots_rdf::parse(
        &std::fs::read(site.out().join("robots.rdf")).unwrap(),
        &Default::default(),
    )
    .unwrap();
    let rdf = index.channel.parts.iter().map(|p| name(&p.url)).collect();
    (sitemaps, rdf)
}

#[test]
fn a_large_site_gets_parts_and_an_edit_rewrites_one_of_each() {
    let site = Site::new();
    for i in 0..1000 {
        site.write(&format!("p/{i}.html"), &format!("page {i}"));
    }
    let mut cli = site.cli();
    cli.sitemap_part_urls = Some(100);
    let mut agent = site.agent_with(cli.clone());
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    let (sitemaps, rdf) = part_files(&site);
    assert!(
        (4..=25).contains(&sitemaps.len()),
        "{} sitemap parts",
        sitemaps.len()
    );
    assert_eq!(sitemaps.len(), rdf.len(), "one cut for every document");
    assert!(sitemaps.iter().chain(&rdf).all(|p| p.exists()));
    let urls = site.sitemap_urls();
    let unique: BTreeSet<String> = urls.iter().map(|u| u.loc.to_string()).collect();
    assert_eq!(
        (urls.len(), unique.len()),
        (1000, 1000),
        "every URL in exactly one part"
    );
    assert_eq!(
        site.listed().len(),
        1000,
        "robots.rdf's parts list every file"
    );
    let inode =
        |p: &std::path::Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let inodes = || -> Vec<u64> { sitemaps.iter().chain(&rdf).map(|p| inode(p)).collect() };
    let before = inodes();

    site.tick(60);
    site.write("p/7.html", "page 7, edited");
    agent.reconcile_paths(&paths(&["p/7.html"])).unwrap();
    agent.publish().unwrap();
    let after = inodes();
    let rewritten = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert_eq!(
        rewritten, 2,
        "an edit rewrites only the sitemap part and the robots.rdf part holding its URL"
    );
    let edited = site
        .sitemap_urls()
        .into_iter()
        .find(|u| u.loc.as_str() == url("p/7.html"))
        .unwrap();
    assert_eq!(edited.lastmod, Some(site.clock_now()));
    assert_eq!(
        site.listed()[&url("p/7.html")].0,
        "page 7, edited".len() as u64
    );

    // A restart over the unchanged site writes no part again, and keeps their dates.
    let dates = |site: &Site| -> Vec<_> {
        webcoop_protocol::robots_rdf::parse(
            &std::fs::read(site.out().join("robots.rdf")).unwrap(),
            &Default::default(),
        )
        .unwrap()
        .channel
        .parts
        .into_iter()
        .map(|p| (p.url, p.date, p.version))
        .collect()
    };
    let published = dates(&site);
    drop(agent);
    site.tick(60);
    let mut agent = site.agent_with(cli);
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    assert_eq!(inodes(), after, "no part written again by a restart");
    assert_eq!(dates(&site), published);

    // Shrinking back under the threshold returns to single documents and removes the parts.
    for i in 50..1000 {
        std::fs::remove_file(site.path(&format!("p/{i}.html"))).unwrap();
    }
    agent.full_scan(true).unwrap();
    agent.publish().unwrap();
    assert_eq!(site.sitemap_urls().len(), 50);
    assert_eq!(site.listed().len(), 50);
    assert!(sitemaps.iter().chain(&rdf).all(|p| !p.exists()));
}

/// A site of a.html to d.html whose judge serves a mirror of it, and an agent after its
/// first scan.
fn mirrored_site() -> (
    Site,
    std::path::PathBuf,
    webcoop_testkit::static_site::StaticServer,
) {
    let site = Site::new();
    let mirror = site.tmp.path().join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    for name in ["a", "b", "c", "d"] {
        let (rel, content) = (format!("{name}.html"), format!("<p>{name}</p>"));
        site.write(&rel, &content);
        std::fs::write(mirror.join(rel), content).unwrap();
    }
    let judge = webcoop_testkit::static_site::StaticServer::serve(&mirror);
    (site, mirror, judge)
}

#[test]
fn files_judged_again_are_recorded_together_and_never_asked_twice_meanwhile() {
    let (site, mirror, judge) = mirrored_site();
    let mut cli = site.cli();
    cli.server_url = Some(judge.url());
    let mut agent = site.agent_with(cli);
    agent.full_scan(false).unwrap();
    site.tick(1);
    // Found as they were, a and b wait to be recorded; the next round reads past them.
    assert_eq!(agent.judge_again(2).unwrap().asked, 2);
    std::fs::remove_file(mirror.join("a.html")).unwrap();
    assert_eq!(agent.judge_again(2).unwrap().asked, 2);
    assert_eq!(agent.refused_count(), 0, "c and d were asked, not a again");
    // Read to the end: the record is saved and the schedule starts over, at a.
    assert_eq!(agent.judge_again(2).unwrap().asked, 0);
    assert_eq!(agent.judge_again(2).unwrap().asked, 2);
    assert_eq!(agent.refused_count(), 1);
}

/// a and b judged again and a then refused by the server; the agent stopped, its record of
/// them saved first or not (a kill), and started again: what its first round refuses.
fn refused_after_a_restart(saved: bool) -> usize {
    let (site, mirror, judge) = mirrored_site();
    let mut cli = site.cli();
    cli.server_url = Some(judge.url());
    let mut agent = site.agent_with(cli.clone());
    agent.full_scan(false).unwrap();
    site.tick(1);
    assert_eq!(agent.judge_again(2).unwrap().asked, 2);
    std::fs::remove_file(mirror.join("a.html")).unwrap();
    if saved {
        site.tick(1);
        agent.save_held_marks().unwrap();
    }
    drop(agent);
    let mut agent = site.agent_with(cli);
    site.tick(1);
    assert_eq!(agent.judge_again(2).unwrap().asked, 2);
    agent.refused_count()
}

#[test]
fn a_kill_loses_only_the_record_of_files_judged_again_which_are_asked_again() {
    assert_eq!(refused_after_a_restart(false), 1, "a and b asked again");
    // The twin: saved, a and b come after c and d.
    assert_eq!(refused_after_a_restart(true), 0);
}

#[test]
fn judging_again_asks_without_reading_and_turns_verdicts_both_ways() {
    // The judge serves a mirror of the docroot, so what it answers can change while the
    // docroot does not.
    let site = Site::new();
    let mirror = site.tmp.path().join("mirror");
    std::fs::create_dir_all(mirror.join("docs")).unwrap();
    for (rel, content) in [("index.html", "<h1>home</h1>"), ("docs/a.html", "<p>a</p>")] {
        site.write(rel, content);
        std::fs::write(mirror.join(rel), content).unwrap();
    }
    let judge = webcoop_testkit::static_site::StaticServer::serve(&mirror);
    let mut cli = site.cli();
    cli.server_url = Some(judge.url());
    let mut agent = site.agent_with(cli);
    agent.full_scan(false).unwrap();
    agent.publish().unwrap();
    assert_eq!(site.listed().len(), 2);
    // The server stops serving docs/a.html: judged again, it leaves, announced as deleted.
    std::fs::remove_file(mirror.join("docs/a.html")).unwrap();
    site.tick(1);
    let round = agent.judge_again(10).unwrap();
    assert_eq!((round.asked, round.changes), (2, 1));
    assert_eq!(agent.refused_count(), 1);
    agent.publish().unwrap();
    assert_eq!(
        site.listed().keys().collect::<Vec<_>>(),
        [&url("index.html")]
    );
    let feed = site.feed();
    assert_eq!(feed.entries[0].kind, ChangeKind::Deleted);
    // Serving it again: it comes back as a new file, read and listed.
    std::fs::write(mirror.join("docs/a.html"), "<p>a</p>").unwrap();
    site.tick(1);
    let round = agent.judge_again(10).unwrap();
    assert_eq!(round.changes, 1);
    assert_eq!(agent.refused_count(), 0);
    agent.publish().unwrap();
    assert_eq!(site.listed()[&url("docs/a.html")], (8, etag("<p>a</p>")));
    // A server that cannot be reached decides nothing.
    drop(judge);
    let round = agent.judge_again(10).unwrap();
    assert!(round.unreachable.is_some());
    assert_eq!(round.changes, 0);
    agent.publish().unwrap();
    assert_eq!(site.listed().len(), 2);
}

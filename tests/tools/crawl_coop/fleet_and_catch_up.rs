//! A fleet keeping a pushing site exact with one subscription; a first visit from the
//! snapshot; a crawler back after many changes, within the site's history and beyond it.

use super::*;

/// One process of a fleet keeping the site fresh in push mode, its frontier in `redis`.
fn fleet_process(site: &Site, fleet: &Path, redis: &str, name: &str) -> Killed {
    std::fs::create_dir_all(fleet).unwrap();
    let config = fleet.join(format!("{name}.toml"));
    std::fs::write(
        &config,
        "coop_poll_min = 0.2\ncoop_poll_max = 1.0\ncoop_backup_poll = 3.0\ncommit_interval = 0.2\nfleet_lease = 5\n",
    )
    .unwrap();
    let child = Command::new(workspace_bin("webcoop-crawl"))
        .args([
            "crawl",
            "--allow-net",
            "127.0.0.0/8",
            "--frontier",
            redis,
            "--crawl",
            "fresh",
            "--process",
            name,
        ])
        .args(["--seeds", &site.nginx.url(), "--out"])
        .arg(fleet)
        .arg("--config")
        .arg(&config)
        .args([
            "--keep-fresh",
            "--refresh-cycle",
            "2",
            "--delay-min",
            "0.02",
        ])
        .args(["--delay-factor", "0", "--coop", "push", "--run-for", "60"])
        .args(["--callback-listen", "127.0.0.1:0", "--progress", "quiet"])
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::create(fleet.join(format!("{name}.err")))
                .map_or(Stdio::null(), Stdio::from),
        )
        .spawn()
        .unwrap();
    Killed(child)
}

#[test]
fn a_fleet_keeps_a_pushing_site_exact_with_one_subscription() {
    let Some(site) = Site::start(20) else {
        return;
    };
    let Some(redis) = webcoop_testkit::redis::RedisServer::start(false) else {
        return;
    };
    let fleet = site.tmp.path().join("fleet");
    let mut a = fleet_process(&site, &fleet, &redis.url(), "a");
    let mut b = fleet_process(&site, &fleet, &redis.url(), "b");
    // The site is one host: one process holds it, its pages, its subscription.
    let holder = || {
        ["a", "b"]
            .into_iter()
            .map(|n| fleet.join(n))
            .max_by_key(|d| held(d).len())
            .unwrap()
    };
    wait_for("the first crawl", Duration::from_secs(20), || {
        held(&holder()) == site.truth()
    });
    wait_for("the subscription", Duration::from_secs(10), || {
        log_of(&holder()).contains("202 ")
    });
    std::thread::sleep(Duration::from_millis(300));
    let url = format!("{}p5.html", site.nginx.url());
    site.write("p5.html", &page(5, "pushed to the fleet"));
    let want = site.truth()[&url].clone();
    wait_for("the pushed change", Duration::from_secs(3), || {
        held(&holder()).get(&url) == Some(&want)
    });
    for round in 0..3 {
        site.write("p6.html", &page(6, &format!("edit {round}")));
        site.write(&format!("new{round}.html"), &page(100 + round, "added"));
        let truth = site.truth();
        wait_for("the fleet's convergence", Duration::from_secs(10), || {
            held(&holder()) == truth
        });
    }
    std::fs::remove_file(site.www.join("p7.html")).unwrap();
    let truth = site.truth();
    wait_for("a deletion", Duration::from_secs(10), || {
        held(&holder()) == truth
    });
    let dirs = [fleet.join("a"), fleet.join("b")];
    let other = dirs.iter().find(|d| **d != holder()).unwrap();
    assert!(
        held(other).is_empty(),
        "the other process fetched no page of the site"
    );
    // Every subscription request of the fleet, from either process's log.
    let subscribes: Vec<String> = dirs
        .iter()
        .flat_map(|d| {
            log_of(d)
                .lines()
                .filter(|l| l.contains("/.well-known/webcoop/hub") && l.ends_with(" subscribe"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        subscribes.len(),
        1,
        "one subscription for the fleet: {subscribes:#?}"
    );
    assert!(subscribes[0].contains(" 202 "), "{subscribes:?}");
    // The fleet's status says the same: one process, one subscription.
    let o = Command::new(workspace_bin("webcoop-crawl"))
        .args([
            "status",
            "--frontier",
            &redis.url(),
            "--crawl",
            "fresh",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let processes = v["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 2, "{v}");
    let subscribed: u64 = processes
        .iter()
        .map(|p| p["cooperation"][1].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(subscribed, 1, "{v}");
    // The holder dies: the other takes the site over when its lease ends (its robots.txt, the
    // pages kept fresh, a subscription of its own) and keeps the site exact.
    let held_by_a = holder() == fleet.join("a");
    let (dead, survivor) = if held_by_a {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let survivor_dir = fleet.join(if held_by_a { "b" } else { "a" });
    dead.0.kill().unwrap();
    let _ = dead.0.wait();
    site.write("p8.html", &page(8, "after the holder died"));
    site.write("p2.html", &page(2, "after the holder died"));
    let truth = site.truth();
    let started = Instant::now();
    while held(&survivor_dir) != truth {
        if started.elapsed() > Duration::from_secs(30) {
            let mine = held(&survivor_dir);
            let wrong: Vec<_> = truth
                .iter()
                .filter(|(u, v)| mine.get(*u) != Some(*v))
                .collect();
            let extra: Vec<_> = mine.keys().filter(|u| !truth.contains_key(*u)).collect();
            panic!(
                "the take-over: not within 30 s; wrong or missing {wrong:?}, extra {extra:?}\n{}\n{}",
                log_of(&survivor_dir),
                std::fs::read_to_string(survivor_dir.with_extension("err")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        log_of(&survivor_dir)
            .lines()
            .any(|l| l.contains("/.well-known/webcoop/hub") && l.ends_with(" subscribe")),
        "the new holder subscribed"
    );
    let _ = nix_term(&survivor.0);
    let _ = survivor.0.wait();
}

/// The crawl.log lines of requests the crawler made (pages read from a snapshot or a batch
/// are logged too, saying so).
fn requests_in(log: &str) -> usize {
    log.lines()
        .filter(|l| webcoop_crawler::crawl_log::is_request(l))
        .count()
}

#[test]
fn a_first_visit_takes_the_whole_site_from_its_snapshot_in_a_few_requests() {
    let Some(site) = Site::start(80) else {
        return;
    };
    wait_for(
        "robots.rdf naming a snapshot",
        Duration::from_secs(30),
        || {
            webcoop::servers::http_get(site.nginx.addr, "/robots.rdf", &[])
                .is_ok_and(|r| String::from_utf8_lossy(&r.body).contains("wc:snapshot"))
        },
    );
    let out = site.tmp.path().join("crawl-snapshot");
    let o = run_ok(
        Command::new(workspace_bin("webcoop-crawl"))
            .arg("crawl")
            .args(["--allow-net", "127.0.0.0/8", "--progress", "quiet"])
            .args(["--delay-min", "0", "--delay-factor", "0"])
            .arg("--seeds")
            .arg(site.nginx.url())
            .arg("--out")
            .arg(&out),
    );
    let log = log_of(&out);
    assert_eq!(
        held(&out),
        site.truth(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let taken = log
        .lines()
        .filter(|l| l.contains(webcoop_crawler::crawl_log::FROM_SNAPSHOT))
        .count();
    let requests = requests_in(&log);
    eprintln!("first visit: {requests} requests, {taken} pages from the snapshot");
    // robots.txt, robots.rdf, the snapshot, the seed page (queued before the listing came),
    // six pages fetched again to check the snapshot (a site met now is checked most), and
    // the one link to a page that does not exist: no request per page.
    assert!(taken >= 78, "{taken} pages from the snapshot:\n{log}");
    assert!(requests <= 11, "{requests} requests:\n{log}");
    let coop = coop_of(&out, &site.nginx.url());
    assert!(coop.to_string().contains("from_snapshot"), "{coop}");
    // The archive says where each page came from, and warcio checks every record.
    let records = warcio_records(&out);
    let from_snapshot = records
        .iter()
        .filter(|(kind, uri)| kind == "resource" && uri.ends_with(".html"))
        .count();
    if reference_python().is_some() {
        assert!(from_snapshot >= 78, "{records:?}");
    }
    // pywb replays the pages taken from the snapshot, byte for byte.
    replays_resources(&out);
    // The snapshot file was removed once read: its pages are in the crawl's own archive.
    let left: Vec<_> = std::fs::read_dir(out.join("snapshots"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// Stops a crawler as an operator would, and waits for it.
fn stop(c: &mut Killed, what: &str) {
    let _ = nix_term(&c.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "{what}: the crawler did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A crawler back after its time away, run until it holds the site again: the pages it took
/// from the site's bulk source (log lines marked `from`), its requests, and them listed.
fn run_back(
    site: &Site,
    out: &Path,
    mode: &str,
    quiet: &[&str],
    before: usize,
    from: &str,
) -> (usize, Vec<String>, String) {
    let truth = site.truth();
    let mut c = crawler(site, out, mode, 60, quiet);
    wait_for("catching up", Duration::from_secs(30), || {
        held(out) == truth
    });
    let log = log_of(out);
    stop(&mut c, "the second run");
    let run: Vec<&str> = log.lines().skip(before).collect();
    let taken = run.iter().filter(|l| l.contains(from)).count();
    let requests: Vec<String> = run
        .iter()
        .filter(|l| webcoop_crawler::crawl_log::is_request(l))
        .map(|l| l.to_string())
        .collect();
    let listing = requests.iter().map(|l| format!("{l}\n")).collect();
    (taken, requests, listing)
}

#[test]
fn a_crawler_that_was_away_catches_up_on_100_changes_in_one_batch() {
    let Some(site) = Site::start(150) else {
        return;
    };
    let out = site.tmp.path().join("crawl-away");
    // Checks of the site's claims are a share of what it says: none here, so the requests
    // counted are the catching up alone. Delta mode: once caught up, a changed page would come
    // as a delta; catching up, the pages come in the batch.
    let quiet = ["--coop-check-share", "0"];
    let mut c = crawler(&site, &out, "delta", 60, &quiet);
    wait_for("the first crawl", Duration::from_secs(30), || {
        held(&out) == site.truth()
    });
    stop(&mut c, "the first run");
    let before = log_of(&out).lines().count();
    // Away: 100 pages change.
    for i in 1..=100 {
        site.write(
            &format!("p{i}.html"),
            &page(i, "changed while the crawler was away"),
        );
    }
    let truth = site.truth();
    wait_for("the agent's 100 changes", Duration::from_secs(20), || {
        webcoop::servers::http_get(site.nginx.addr, "/robots.rdf", &[]).is_ok_and(|r| {
            let listing = String::from_utf8_lossy(&r.body).into_owned();
            truth
                .values()
                .all(|tag| listing.contains(tag.trim_matches('"')))
        })
    });
    let from = webcoop_crawler::crawl_log::FROM_BATCH;
    let (taken, requests, listing) = run_back(&site, &out, "delta", &quiet, before, from);
    eprintln!(
        "catching up on 100 changes: {} requests, {taken} pages from batches",
        requests.len()
    );
    assert_eq!(taken, 100, "{listing}\n{}", messages_of(&out));
    assert!(
        requests.len() <= 3,
        "{} requests to catch up:\n{listing}",
        requests.len(),
    );
    assert!(
        coop_of(&out, &site.nginx.url())
            .to_string()
            .contains("\"from_batch\":100")
    );
    // The archive says where each page came from, and pywb replays them byte for byte.
    replays_resources(&out);
}

#[test]
fn a_crawler_away_longer_than_the_site_s_history_takes_its_snapshot_again() {
    let Some(mut site) = Site::start(150) else {
        return;
    };
    let out = site.tmp.path().join("crawl-long-away");
    let quiet = ["--coop-check-share", "0"];
    let mut c = crawler(&site, &out, "meta", 60, &quiet);
    wait_for("the first crawl", Duration::from_secs(30), || {
        held(&out) == site.truth()
    });
    stop(&mut c, "the first run");
    let before = log_of(&out).lines().count();
    // The site keeps 20 changes of history; 100 pages change while the crawler is away, and
    // the agent makes a new snapshot (they are two thirds of the site's bytes).
    site.start_agent_with(&["--retain-changes", "20", "--feed-entries", "20"]);
    for i in 1..=100 {
        site.write(
            &format!("p{i}.html"),
            &page(i, "changed while the crawler was far away"),
        );
    }
    let truth = site.truth();
    wait_for(
        "the agent's changes and new snapshot",
        Duration::from_secs(30),
        || {
            webcoop::servers::http_get(site.nginx.addr, "/robots.rdf", &[]).is_ok_and(|r| {
                let listing = String::from_utf8_lossy(&r.body).into_owned();
                truth
                    .values()
                    .all(|tag| listing.contains(tag.trim_matches('"')))
                    && listing.contains("wc:snapshot")
                    && !listing.contains("snapshot-000000000000")
            })
        },
    );
    let from = webcoop_crawler::crawl_log::FROM_SNAPSHOT;
    let (taken, requests, listing) = run_back(&site, &out, "meta", &quiet, before, from);
    eprintln!(
        "away past the history: {} requests, {taken} pages from the snapshot",
        requests.len()
    );
    // The changes feed answers 410, robots.rdf is read again and the snapshot fetched: the
    // changed pages come from it, the others are held already.
    assert!(
        requests
            .iter()
            .any(|l| l.contains("/.well-known/webcoop/changes") && l.contains(" 410 ")),
        "{listing}"
    );
    assert_eq!(taken, 100, "{listing}\n{}", messages_of(&out));
    assert!(requests.len() <= 4, "{listing}");
}

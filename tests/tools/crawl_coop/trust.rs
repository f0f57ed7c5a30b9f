//! How far a site is believed: a lying site loses trust, a mixed crawl keeps every host fresh
//! at the cost its cooperation allows, a new site polled at the pace its listing shows.

use super::*;

/// A page of the test web with the validator of what it serves now.
fn testweb_truth(web: &TestWeb, host: &str, pages: usize) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for i in 0..pages {
        let path = format!("/p/{i}.html");
        let r = webcoop::servers::http_get(web.addr, &path, &[("Host", host)]).unwrap();
        assert_eq!(r.status, 200, "{host}{path}");
        out.insert(
            format!("{}{path}", web.origin(host)),
            Sha256Digest::of(&r.body).etag().to_string(),
        );
    }
    out
}

#[test]
fn a_lying_site_loses_trust_and_its_claims_are_ignored() {
    // One sitemap claims three unchanged pages changed on every poll; the other stamps every
    // URL with the time of the request.
    let web = TestWeb::start(vec![
        HostSpec::new("liar.test", 20).sitemap(Sitemap::Lying),
        HostSpec::new("stamp.test", 20).sitemap(Sitemap::Stamped),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("crawl-liars");
    let seeds = vec![web.origin("liar.test"), web.origin("stamp.test")];
    // The crawler's own schedule visits each page once per 10 minutes: over seconds, every
    // page fetch comes from a claim.
    let mut c = crawl_seeds(&seeds, &out, "meta", 60, 600, &web.resolve_args());
    let liar = web.origin("liar.test");
    let stamp = web.origin("stamp.test");
    wait_for("the liars found out", Duration::from_secs(40), || {
        let (l, s) = (coop_of(&out, &liar), coop_of(&out, &stamp));
        l["trust_score"].as_f64().is_some_and(|t| t < 0.5)
            && s["trust_score"].as_f64().is_some_and(|t| t < 0.5)
    });
    let said = messages_of(&out);
    assert!(
        said.contains(&format!("{liar}: claims proved wrong")),
        "{said}"
    );
    assert!(
        said.contains(&format!("{stamp}: sitemap lastmod stamped on every URL")),
        "{said}"
    );
    // From now on the liar's claims send the crawler nowhere: over the next seconds its
    // sitemap keeps claiming three changes per poll, and its pages are not fetched for them.
    let answered = |web: &TestWeb| {
        web.log()
            .iter()
            .filter(|r| r.host == "liar.test" && r.target.starts_with("/p/"))
            .count()
    };
    let polls = |web: &TestWeb| {
        web.log()
            .iter()
            .filter(|r| r.host == "liar.test" && r.target == "/sitemap.xml")
            .count()
    };
    // Claims made while the site was still believed may be queued as the trust drops (under
    // load, past the moment the saved state shows it): let them be fetched first.
    for _ in 0..10 {
        let before = answered(&web);
        std::thread::sleep(Duration::from_secs(1));
        if answered(&web) == before {
            break;
        }
    }
    let (pages0, polls0) = (answered(&web), polls(&web));
    std::thread::sleep(Duration::from_secs(4));
    let (pages, polls) = (answered(&web) - pages0, polls(&web) - polls0);
    assert!(polls >= 3, "the sitemap is still polled: {polls}");
    // The own schedule: 42 pages per 600 s, so 0.3 visits expected in these 4 s.
    assert!(
        pages <= 2,
        "{pages} page fetches in 4 s for {polls} polls of 3 claims"
    );
    let _ = c.0.kill();
    let _ = c.0.wait();
    let text = Command::new(workspace_bin("webcoop-crawl"))
        .args(["status", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains(&liar) && l.contains("claims ignored")),
        "{text}"
    );
}

/// Requests the crawler made to `origin`, from its log.
fn requests_to(out: &Path, origin: &str) -> usize {
    log_of(out)
        .lines()
        .filter(|l| l.split(' ').nth(3).is_some_and(|u| u.starts_with(origin)))
        .count()
}

#[test]
fn a_mixed_crawl_keeps_every_host_fresh_and_the_cooperating_one_costs_least() {
    let Some(site) = Site::start(20) else {
        return;
    };
    let web = TestWeb::start(vec![
        HostSpec::new("maps.test", 20).sitemap(Sitemap::Honest),
        HostSpec::new("plain.test", 20),
    ]);
    let coop = site.nginx.url();
    let maps = web.origin("maps.test");
    let plain = web.origin("plain.test");
    let out = site.tmp.path().join("crawl-mixed");
    let mut extra = web.resolve_args();
    // The plain host is kept fresh by the crawler's own schedule. Over seconds the change
    // estimates are extreme, and the optimal policy abandons the deep pages (as designed:
    // they cost more than their weight buys); every page once per cycle is what this test
    // needs from the fall back.
    extra.extend(
        [
            "--callback-listen",
            "127.0.0.1:0",
            "--refresh-policy",
            "uniform",
        ]
        .map(String::from),
    );
    let mut c = crawl_seeds(
        &[coop.clone(), maps.clone(), plain.clone()],
        &out,
        "push",
        60,
        2,
        &extra,
    );
    // Pages whose copy is not the page served now.
    let stale = |site: &Site, web: &TestWeb| -> Vec<String> {
        let held = held_urls(&out);
        let mut truth = site.truth();
        truth.extend(testweb_truth(web, "maps.test", 20));
        truth.extend(testweb_truth(web, "plain.test", 20));
        truth
            .into_iter()
            .filter(|(u, v)| held.get(u) != Some(v))
            .map(|(u, _)| u)
            .collect()
    };
    let fresh_within = |what: &str, limit: Duration| {
        let start = Instant::now();
        loop {
            let left = stale(&site, &web);
            if left.is_empty() {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < limit,
                "{what}: stale after {limit:?}: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    fresh_within("the first crawl", Duration::from_secs(30));
    wait_for("the subscription", Duration::from_secs(10), || {
        log_of(&out).contains("202 ")
    });
    let before: Vec<usize> = [&coop, &maps, &plain]
        .iter()
        .map(|o| requests_to(&out, o))
        .collect();
    // Six seconds of edits, one page of each host per second.
    for round in 1..=6 {
        site.write(
            &format!("p{round}.html"),
            &page(round, &format!("round {round}")),
        );
        web.change("maps.test", &format!("/p/{}.html", round * 3));
        web.change("plain.test", &format!("/p/{}.html", round * 3));
        std::thread::sleep(Duration::from_secs(1));
    }
    let took = fresh_within("after the edits", Duration::from_secs(15));
    let spent: Vec<usize> = [&coop, &maps, &plain]
        .iter()
        .zip(&before)
        .map(|(o, b)| requests_to(&out, o) - b)
        .collect();
    eprintln!(
        "mixed: fresh {took:?} after the last edit; requests during the edits: cooperating {}, sitemap {}, plain {}",
        spent[0], spent[1], spent[2]
    );
    let _ = c.0.kill();
    let _ = c.0.wait();
    // The plain host is revisited by the crawler's own schedule; the cooperating one only
    // for what it announced, and the sitemap host for its sitemap and what it dated.
    assert!(
        spent[0] * 4 <= spent[2],
        "cooperating {} vs plain {}",
        spent[0],
        spent[2]
    );
    assert!(
        spent[1] < spent[2],
        "sitemap {} vs plain {}",
        spent[1],
        spent[2]
    );
}

#[test]
fn a_site_met_for_the_first_time_is_polled_at_the_pace_its_listing_s_dates_show() {
    // Pages untouched for days, four of them modified in the last few hours, and the same
    // site deployed just now: only the first has a pace to tell.
    let hours_ago = |h: u64| std::time::SystemTime::now() - Duration::from_secs(h * 3600);
    let Some(site) = Site::start_with(30, |www| {
        for e in std::fs::read_dir(www).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let age = match name.as_str() {
                "p1.html" => 1,
                "p2.html" => 2,
                "p3.html" => 3,
                "p4.html" => 5,
                _ => 72,
            };
            let f = std::fs::File::options().write(true).open(e.path()).unwrap();
            f.set_modified(hours_ago(age)).unwrap();
        }
    }) else {
        return;
    };
    let Some(fresh) = Site::start(30) else {
        return;
    };
    for (site, expect) in [(&site, Some(4.0)), (&fresh, None)] {
        let out = site.tmp.path().join("crawl-pace");
        let mut c = crawler(site, &out, "meta", 30, &[]);
        wait_for("the first crawl", Duration::from_secs(20), || {
            held(&out) == site.truth()
        });
        let coop = coop_of(&out, &site.nginx.url());
        let said = messages_of(&out);
        match expect {
            Some(n) => {
                assert_eq!(coop["count"]["changes"].as_f64(), Some(n), "{coop}");
                assert!(
                    said.contains("4 pages modified in the 6 h before first contact"),
                    "{said}"
                );
            }
            None => {
                assert_eq!(coop["count"]["changes"].as_f64(), Some(0.0), "{coop}");
                assert!(!said.contains("before first contact"), "{said}");
            }
        }
        let _ = c.0.kill();
        let _ = c.0.wait();
    }
}

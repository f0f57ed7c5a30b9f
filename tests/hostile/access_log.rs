//! A hostile access log (issue 47): junk, invalid UTF-8, 10 MB lines, numbers that overflow,
//! a line dated in 2099, a million distinct URLs, forged crawler agents, and one client
//! reading a page 100,000 times. The agent counts only the true visitors, exactly, with
//! bounded memory and without a panic; no page gets more than its true share.

use super::popularity::counted;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use webcoop::servers::Killed;
use webcoop_testkit::browser::console_address;

const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// Most memory the agent may hold at its peak, in KiB, while reading the whole log (130 MB):
/// measured at 54 MiB for a debug build, which holds a small site and one bounded reading
/// (4 MiB at a time), never the log, the 10 MB lines or the million URLs.
const MAX_PEAK_KIB: u64 = 96 * 1024;

fn line(out: &mut impl Write, when: &str, client: &str, target: &str, status: u16, agent: &str) {
    writeln!(
        out,
        "{client} - - [{when}] \"GET {target} HTTP/1.1\" {status} 512 \"-\" \"{agent}\""
    )
    .unwrap();
}

/// The peak resident memory of process `pid`, KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_hostile_access_log_counts_only_true_visitors_with_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::write(www.join("index.html"), "<p>home</p>").unwrap();
    for i in 1..=6 {
        std::fs::write(www.join(format!("p{i}.html")), format!("<p>page {i}</p>")).unwrap();
    }
    let when = (chrono::Utc::now() - chrono::Duration::seconds(60))
        .format("%d/%b/%Y:%H:%M:%S +0000")
        .to_string();
    let log = tmp.path().join("access.log");
    let mut out = BufWriter::new(std::fs::File::create(&log).unwrap());
    // A line from the future first: taken as now, it must not push the true reads aside.
    line(
        &mut out,
        "01/Jan/2099:00:00:00 +0000",
        "10.9.9.9",
        "/p6.html",
        200,
        FIREFOX,
    );
    // The true visitors: 20 of p1, 12 of p2.
    for i in 0..20 {
        line(
            &mut out,
            &when,
            &format!("10.1.0.{i}"),
            "/p1.html",
            200,
            FIREFOX,
        );
    }
    for i in 0..12 {
        line(
            &mut out,
            &when,
            &format!("10.2.0.{i}"),
            "/p2.html",
            200,
            FIREFOX,
        );
    }
    // One client reading p3 100,000 times.
    for _ in 0..100_000 {
        line(&mut out, &when, "10.3.0.1", "/p3.html", 200, FIREFOX);
    }
    // Crawlers by their names, from 5,000 addresses.
    for i in 0..5_000u32 {
        let agent = [
            "Googlebot/2.1",
            "bingbot/2.0",
            "GPTBot/1.2",
            "curl/8.5.0",
            "",
        ][i as usize % 5];
        let client = format!("10.4.{}.{}", i / 256, i % 256);
        line(&mut out, &when, &client, "/p4.html", 200, agent);
    }
    // A million distinct URLs: half unpublished paths from as many addresses, half one
    // published page under as many queries from one client.
    for i in 0..500_000u32 {
        let client = format!("10.5.{}.{}", (i / 256) % 256, i % 256);
        line(
            &mut out,
            &when,
            &client,
            &format!("/x{i}.html"),
            200,
            FIREFOX,
        );
        line(
            &mut out,
            &when,
            "10.6.0.1",
            &format!("/p5.html?v={i}"),
            200,
            FIREFOX,
        );
    }
    // Junk: lines of 10 MB (one ending in what looks like a read), invalid UTF-8, broken
    // quotes, numbers past any integer, a status that is no status.
    let ten_mb = "A".repeat(10 << 20);
    writeln!(out, "{ten_mb}").unwrap();
    write!(out, "{ten_mb}").unwrap();
    line(&mut out, &when, "10.7.0.1", "/p2.html", 200, FIREFOX);
    out.write_all(b"10.7.0.2 - - [\xff\xfe] \"GET /p2.html HTTP/1.1\" 200 1 \"-\" \"\xc3\x28\"\n")
        .unwrap();
    writeln!(
        out,
        "10.7.0.3 - - [{when}] \"GET /p2.html HTTP/1.1 200 1 \"-\" \"{FIREFOX}"
    )
    .unwrap();
    writeln!(
        out,
        "10.7.0.4 - - [{when}] \"GET /p2.html HTTP/1.1\" 99999999999999999999999 1 \"-\" \"{FIREFOX}\""
    )
    .unwrap();
    writeln!(
        out,
        "10.7.0.5 - - [{when}] \"GET /p2.html HTTP/1.1\" 200 99999999999999999999999999 \"-\" \"{FIREFOX}\""
    )
    .unwrap();
    writeln!(out, "\"\"\"\" [[[[ ]]]] - - -").unwrap();
    // The last line, true: read only if nothing before it stopped the reading.
    line(&mut out, &when, "10.8.0.1", "/p1.html", 200, FIREFOX);
    out.flush().unwrap();
    drop(out);

    let server = webcoop_testkit::static_site::StaticServer::serve(&www);
    let mut child = Command::new(super::support::agent_bin())
        .arg("--docroot")
        .arg(&www)
        .arg("--state")
        .arg(tmp.path().join("state"))
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("--access-log")
        .arg(&log)
        .args(["--server-url", &server.url()])
        .args(["--base-url", "http://site.test/", "--debounce-ms", "0"])
        .args(["--publish-popularity", "--popularity-min-visitors", "3"])
        .args(["--console", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let console = console_address(&mut child, said.clone());
    let mut child = Killed(child);
    let expected = BTreeMap::from([
        ("p1.html".to_string(), 21.0),
        ("p2.html".to_string(), 12.0),
        ("p3.html".to_string(), 1.0),
        ("p5.html".to_string(), 1.0),
        ("p6.html".to_string(), 1.0),
    ]);
    let deadline = Instant::now() + Duration::from_secs(240);
    let counted = loop {
        let counted = counted(console);
        if counted.get("p1.html").is_some_and(|(v, _)| *v > 20.5) {
            break counted;
        }
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the agent stopped: {}",
            said.lock().unwrap()
        );
        assert!(
            Instant::now() < deadline,
            "the log not read in time: {counted:?}\n{}",
            said.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let visitors: BTreeMap<String, f64> = counted
        .iter()
        .map(|(p, (v, _))| (p.clone(), (v * 100.0).round() / 100.0))
        .collect();
    assert_eq!(visitors, expected);
    // 36 true visitors: p1's 21 round to 1/2, p2's 12 to 1/4; the rest are too few.
    let figures: BTreeMap<&str, Option<f64>> =
        counted.iter().map(|(p, (_, f))| (p.as_str(), *f)).collect();
    assert_eq!(
        figures,
        BTreeMap::from([
            ("p1.html", Some(0.5)),
            ("p2.html", Some(0.25)),
            ("p3.html", None),
            ("p5.html", None),
            ("p6.html", None),
        ])
    );
    let peak = peak_kib(pid);
    assert!(
        peak > 0 && peak < MAX_PEAK_KIB,
        "peak memory {peak} KiB while reading the log"
    );
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the agent is still up"
    );
}

//! The `web` preset: a mixed web of sites without webcoop's agent, one for each way the web
//! already says when it changes (sitemap lastmod, RSS, Atom, JSON Feed, a third-party WebSub
//! hub, IndexNow) and one saying nothing, each given the same edits, against the same sites
//! all polled. Each class is its own run of the bench (its own site, crawler and clock), so
//! the web's figures are the classes' sums.

use super::mode::Mode;
use super::run::ModeResult;

/// The modes the preset runs: the polling baseline first, then the web's signals.
pub fn modes() -> Vec<Mode> {
    std::iter::once(Mode::Conditional)
        .chain(Mode::WEB)
        .collect()
}

/// The latency a class is held to, simulated seconds: a minute for what is polled (sitemaps
/// and feeds), ten seconds for what is pushed (a hub, IndexNow).
pub fn latency_goal(mode: Mode) -> f64 {
    match mode {
        Mode::Websub | Mode::Indexnow => 10.0,
        _ => 60.0,
    }
}

/// The share of changes each signalling class must find.
pub const FOUND_GOAL: f64 = 0.95;

/// The whole web's requests against the polling crawl's, at most.
pub const REQUESTS_GOAL: f64 = 0.25;

fn share(r: &ModeResult) -> f64 {
    if r.changes == 0 {
        1.0
    } else {
        r.detected as f64 / r.changes as f64
    }
}

/// Each class beside polling, and the web's sums, with the goals met or missed.
pub fn table(results: &[ModeResult]) -> Result<String, String> {
    let poll = results
        .iter()
        .find(|r| r.mode == Mode::Conditional)
        .ok_or("the web preset needs its polling baseline (conditional)")?;
    let secs = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{s:.1} s"));
    let mut t = String::from(
        "| class | requests | x polling | bytes | changes found | freshness | latency p50 | p99 | goal |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let mut missed = Vec::new();
    let line = |name: &str, r: &ModeResult, goal: String| {
        format!(
            "| {name} | {} | {:.2} | {} | {}/{} ({:.0}%) | {:.4} | {} | {} | {goal} |\n",
            r.site.requests,
            r.site.requests as f64 / poll.site.requests.max(1) as f64,
            r.site.bytes() + r.pushed.bytes(),
            r.detected,
            r.changes,
            share(r) * 100.0,
            r.score.freshness,
            secs(r.latency_p50),
            secs(r.latency_p99),
        )
    };
    t.push_str(&line("none (polled)", poll, "baseline".into()));
    let mut web_requests = poll.site.requests;
    let (mut web_found, mut polled_found) = (poll.detected, poll.detected);
    for r in results.iter().filter(|r| r.mode.signal().is_some()) {
        let goal = latency_goal(r.mode);
        let found_ok = share(r) >= FOUND_GOAL;
        let latency_ok = r.latency_p50.is_some_and(|l| l <= goal) || r.changes == 0;
        let verdict = match (found_ok, latency_ok) {
            (true, true) => format!("met (>= 95%, p50 <= {goal:.0} s)"),
            _ => {
                missed.push(r.mode.name());
                format!(
                    "missed:{}{}",
                    if found_ok { "" } else { " < 95% found" },
                    if latency_ok {
                        String::new()
                    } else {
                        format!(" p50 > {goal:.0} s")
                    }
                )
            }
        };
        t.push_str(&line(r.mode.name(), r, verdict));
        web_requests += r.site.requests;
        web_found += r.detected;
        polled_found += poll.detected;
    }
    let classes = results.iter().filter(|r| r.mode.signal().is_some()).count() + 1;
    let polled = poll.site.requests * classes as u64;
    let ratio = web_requests as f64 / polled.max(1) as f64;
    t.push_str(&format!(
        "\nThe mixed web ({classes} sites): {web_requests} requests against {polled} polled ({ratio:.2}x; goal at most {REQUESTS_GOAL}x: {}), {web_found} changes found against {polled_found} polled.\n",
        if ratio <= REQUESTS_GOAL && web_found >= polled_found {
            "met"
        } else {
            "missed"
        }
    ));
    if !missed.is_empty() {
        t.push_str(&format!(
            "Classes that missed their goal: {}.\n",
            missed.join(", ")
        ));
    }
    Ok(t)
}

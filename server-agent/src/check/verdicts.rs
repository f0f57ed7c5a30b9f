//! `check`'s verdicts on files: each found by the agent's own walk, through the agent's own
//! publishing rules (names, what the configuration hides), and asked of the web server by the
//! agent's own judge, from its address, where it asks. The verdict printed is the one the
//! agent publishes with, never a second opinion.

use super::Finding;
use crate::agent::filter_of;
use crate::config::Config;
use crate::judge::{Ask, Judge, Verdict};
use crate::privacy::PublicFilter;
use crate::scan;
use crate::server_config::ServerRules;
use crate::web_server::ServerView;
use std::collections::BTreeMap;

/// Files asked about when `--files` is not given, at most.
const SAMPLE: usize = 50;

/// What the agent would do with one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileVerdict {
    /// Published.
    Published,
    /// Not published: hidden from the judge by a rule (which).
    Hidden(String),
    /// Not published: refused by the web server (why).
    Refused(String),
    /// Not decided: the web server could not be asked (why).
    Unknown(String),
}

/// Judges the docroot's files (all when `every`, else a sample spread over them) as the agent
/// does; the verdicts of those the names and rules let through come back with the findings.
pub(super) fn check(
    config: &Config,
    view: &ServerView,
    rules: ServerRules,
    every: bool,
    out: &mut Vec<Finding>,
) -> BTreeMap<String, FileVerdict> {
    let mut verdicts = BTreeMap::new();
    let origin = view.server_url.origin().ascii_serialization();
    let filter = match filter_of(config, rules) {
        Ok(f) => f,
        Err(e) => {
            out.push(Finding::fix(
                format!("the publishing rules: {e}"),
                "fix them",
            ));
            return verdicts;
        }
    };
    // Files the configuration hides are not walked into: name them from the walk's own rules.
    let unfiltered = match filter_of(config, ServerRules::none()) {
        Ok(f) => f,
        Err(_) => filter.clone(),
    };
    let all = scan::walk(&config.docroot, "", unfiltered).files;
    let found = scan::walk(&config.docroot, "", filter.clone()).files;
    let public_by_name: std::collections::BTreeSet<&str> =
        found.iter().map(|(p, _)| p.as_str()).collect();
    for (path, _) in &all {
        if !public_by_name.contains(path.as_str())
            && let Some(h) = filter.access().hides(path).or_else(|| {
                let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
                filter.access().hides_dir(dir)
            })
        {
            verdicts.insert(path.clone(), FileVerdict::Hidden(h.to_string()));
        }
    }
    let step = if every {
        1
    } else {
        (found.len() / SAMPLE).max(1)
    };
    let asks: Vec<Ask> = found
        .iter()
        .step_by(step)
        .take(if every { usize::MAX } else { SAMPLE })
        .filter_map(|(path, _)| {
            let c = scan::read(&config.docroot, path).ok()?;
            Some(Ask {
                path: path.clone(),
                sha256: c.sha256,
                size: c.stat.size,
            })
        })
        .collect();
    if asks.is_empty() {
        out.push(Finding::ok(format!(
            "no file to ask the web server at {origin} about yet"
        )));
        return verdicts;
    }
    let judge = match Judge::new(
        &config.base_url,
        &config.judge,
        &view.server_url,
        view.judge.source,
    ) {
        Ok(j) => j,
        Err(e) => {
            out.push(Finding::fix(e.to_string(), "check --server-url"));
            return verdicts;
        }
    };
    let n = asks.len();
    let paths: Vec<String> = asks.iter().map(|a| a.path.clone()).collect();
    let mut public = 0;
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut unknown = None;
    for (path, v) in paths.into_iter().zip(judge.judge(asks)) {
        let verdict = match v {
            Verdict::Public => {
                public += 1;
                FileVerdict::Published
            }
            Verdict::Refused(r) => {
                *refused.entry(r.reason()).or_default() += 1;
                FileVerdict::Refused(r.reason())
            }
            Verdict::Unknown(why) => {
                unknown.get_or_insert(why.clone());
                FileVerdict::Unknown(why)
            }
        };
        verdicts.insert(path, verdict);
    }
    summarize(config, &origin, (public, n, &refused, unknown), out);
    noted_but_published(&verdicts, &filter, out);
    verdicts
}

/// What the judge's verdicts say of the server, in one finding: it cannot be asked, it
/// refuses everything for one reason, or it serves so many of the files asked about.
fn summarize(
    config: &Config,
    origin: &str,
    (public, n, refused, unknown): (usize, usize, &BTreeMap<String, usize>, Option<String>),
    out: &mut Vec<Finding>,
) {
    let base = &config.base_url;
    if let Some(why) = unknown {
        out.push(Finding::fix(
            format!("{why}: the agent publishes nothing new until the web server answers"),
            format!("start it, or give --server-url with the address that serves {base}"),
        ));
    } else if public == 0 && refused.len() == 1 {
        let reason = refused.keys().next().cloned().unwrap_or_default();
        out.push(Finding::fix(
            format!(
                "the web server at {origin} refuses all {n} files asked about ({reason}): nothing would be published"
            ),
            format!(
                "check that the server at {origin} serves {base} from the docroot {} to anyone, or give --server-url with the address that does",
                config.docroot.display()
            ),
        ));
    } else {
        let refusals: Vec<String> = refused.iter().map(|(r, c)| format!("{c} {r}")).collect();
        out.push(Finding::ok(format!(
            "the web server at {origin} serves {public} of {n} files asked about as they are{}",
            if refusals.is_empty() {
                String::new()
            } else {
                format!("; not published: {}", refusals.join("; "))
            }
        )));
    }
}

/// What is published although a rule there depends on who asks: the judge was served as a
/// stranger is, which the operator may want to know.
fn noted_but_published(
    verdicts: &BTreeMap<String, FileVerdict>,
    filter: &PublicFilter,
    out: &mut Vec<Finding>,
) {
    for (path, v) in verdicts {
        if *v == FileVerdict::Published
            && let Some(rule) = filter.access().noted(path)
        {
            out.push(Finding::ok(format!(
                "published although a rule there depends on who asks, as the judge was served as a stranger is: {path} ({})",
                rule.source
            )));
        }
    }
}

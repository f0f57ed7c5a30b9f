//! `check`'s look at the judge: the web server asked about a sample of the docroot's files,
//! as the agent asks before publishing anything.

use super::Finding;
use crate::config::Config;
use crate::judge::{Ask, Judge, Verdict};
use crate::scan;
use std::collections::BTreeMap;

/// Files asked about, at most.
const SAMPLE: usize = 20;

/// Asks the server about a sample of the files the agent would publish by their names.
pub(super) fn check(config: &Config, out: &mut Vec<Finding>) {
    let origin = config.judge.server_url.origin().ascii_serialization();
    let filter = match crate::agent::filter_of(config, false) {
        Ok(f) => f,
        Err(e) => {
            out.push(Finding::fix(
                format!("the publishing rules: {e}"),
                "fix them",
            ));
            return;
        }
    };
    let found = scan::walk(&config.docroot, "", filter).files;
    let step = (found.len() / SAMPLE).max(1);
    let asks: Vec<Ask> = found
        .iter()
        .step_by(step)
        .take(SAMPLE)
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
        return;
    }
    let judge = match Judge::new(&config.base_url, &config.judge) {
        Ok(j) => j,
        Err(e) => {
            out.push(Finding::fix(e.to_string(), "check --server-url"));
            return;
        }
    };
    let n = asks.len();
    let verdicts = judge.judge(asks);
    let mut public = 0;
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut unknown = None;
    for v in verdicts {
        match v {
            Verdict::Public => public += 1,
            Verdict::Refused(r) => *refused.entry(r.reason()).or_default() += 1,
            Verdict::Unknown(why) => {
                unknown.get_or_insert(why);
            }
        }
    }
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
                "give --server-url with the address that serves {base} to anyone (http://127.0.0.1:80 is asked with the site's Host)"
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

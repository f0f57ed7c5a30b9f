//! `check` in origin mode: the state directory, the web server as the agent sees it (how its
//! configuration was read, where and from which address the origin is asked, what the
//! configuration hides), and the verdict on each page the sitemaps name (a sample, or all with
//! `--files`), found and asked as the running agent finds and asks them.

use super::verdicts::FileVerdict;
use super::{Finding, configuration_findings, hidden_findings, state_findings, view_findings};
use crate::config::Config;
use crate::origin::survey::{PageVerdict, survey};
use std::collections::BTreeMap;

/// Everything `check` looks at in origin mode, with the verdict on each page asked about.
pub(crate) fn check(config: &Config, every: bool) -> (Vec<Finding>, BTreeMap<String, FileVerdict>) {
    let mut out = Vec::new();
    state_findings(config, &mut out);
    let (view, rules, pages) = match survey(config, every) {
        Ok(s) => s,
        Err(e) => {
            out.push(Finding::fix(
                format!("the agent does not start: {e}"),
                "fix what it names",
            ));
            return (out, BTreeMap::new());
        }
    };
    if let Some(view) = &view {
        view_findings(view, &mut out);
    }
    hidden_findings(&rules, &mut out);
    if let Some(view) = &view {
        configuration_findings(config, view, &rules, &mut out);
    }
    let mut verdicts = BTreeMap::new();
    let (mut published, mut hidden, mut refused, mut unknown) = (0, 0, 0, 0);
    for (path, v) in pages {
        let v = match v {
            PageVerdict::Published => {
                published += 1;
                FileVerdict::Published
            }
            PageVerdict::Hidden(why) => {
                hidden += 1;
                FileVerdict::Hidden(why)
            }
            PageVerdict::Refused(why) => {
                refused += 1;
                FileVerdict::Refused(why)
            }
            PageVerdict::Unknown(why) => {
                unknown += 1;
                FileVerdict::Unknown(why)
            }
        };
        verdicts.insert(format!("/{path}"), v);
    }
    let asked = published + hidden + refused + unknown;
    if asked == 0 {
        out.push(Finding::fix(
            "the site's sitemaps name no page",
            "let the site publish its sitemaps (WordPress does at /wp-sitemap.xml), or give --origin-seed",
        ));
    } else if unknown > 0 {
        out.push(Finding::fix(
            format!("{unknown} of {asked} pages asked about could not be decided"),
            "see `check --files` for each",
        ));
    } else {
        out.push(Finding::ok(format!(
            "of {asked} pages asked about, {published} are published, {hidden} hidden by the server's rules, {refused} refused"
        )));
    }
    (out, verdicts)
}

//! Whether robots.txt says what the webmaster told the agent about the site's usage
//! preferences (`--content-usage`): crawlers that read only robots.txt must hear the same as
//! those the agent pushes to, and where they differ every crawler takes the stricter.

use super::Finding;
use webcoop_protocol::usage::{Prefs, Purpose, RobotsUsage};

/// The findings for robots.txt's `text` against the agent's `stated` preferences.
pub(super) fn check(stated: Option<Prefs>, text: &str, out: &mut Vec<Finding>) {
    let robots = RobotsUsage::parse(text);
    for problem in &robots.problems {
        out.push(Finding::fix(
            format!("robots.txt {problem}"),
            "write Content-Usage as aipref terms (search, ai-use, train-ai with y or n), Content-Signal with yes or no",
        ));
    }
    // What a crawler named in no group of its own reads for the whole site.
    let said = robots.at("*", "/");
    let Some(stated) = stated else {
        if !said.is_empty() {
            out.push(Finding::ok(format!(
                "robots.txt states usage preferences ({}); --content-usage would carry them to crawlers the agent pushes to",
                said.to_aipref()
            )));
        }
        return;
    };
    let mut same = true;
    for p in Purpose::ALL {
        let Some(want) = stated.get(p) else { continue };
        let term = format!("{}={}", p.aipref(), if want { "y" } else { "n" });
        match said.get(p) {
            Some(v) if v == want => {}
            Some(v) => {
                same = false;
                out.push(Finding::fix(
                    format!(
                        "robots.txt says {}={} where the agent says {term}: every crawler takes the stricter",
                        p.aipref(),
                        if v { "y" } else { "n" }
                    ),
                    "make robots.txt and --content-usage say the same",
                ));
            }
            None => {
                same = false;
                out.push(Finding::fix(
                    format!(
                        "robots.txt states nothing of {} for every crawler; the agent says {term}",
                        p.aipref()
                    ),
                    format!(
                        "add \"Content-Usage: {term}\" to the \"User-agent: *\" group of robots.txt"
                    ),
                ));
            }
        }
    }
    if same {
        out.push(Finding::ok(format!(
            "robots.txt states the usage preferences the agent carries ({})",
            stated.to_aipref()
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(stated: Option<&str>, text: &str) -> Vec<Finding> {
        let stated = stated.map(|s| Prefs::parse_aipref(s, &mut Vec::new()).unwrap());
        let mut out = Vec::new();
        check(stated, text, &mut out);
        out
    }

    #[test]
    fn robots_txt_and_the_agent_must_agree() {
        let agree = findings(
            Some("search=y, train-ai=n"),
            "User-agent: *\nContent-Usage: train-ai=n\nContent-Signal: search=yes\n",
        );
        assert!(agree.iter().all(|f| f.ok), "{agree:?}");
        let missing = findings(Some("train-ai=n"), "User-agent: *\nDisallow: /x\n");
        assert!(!missing[0].ok);
        assert!(
            missing[0]
                .fix
                .as_deref()
                .unwrap()
                .contains("Content-Usage: train-ai=n")
        );
        let differ = findings(Some("search=y"), "User-agent: *\nContent-Usage: search=n\n");
        assert!(
            differ[0]
                .what
                .contains("search=n where the agent says search=y")
        );
        let junk = findings(None, "User-agent: *\nContent-Usage: train-ai=perhaps\n");
        assert!(!junk[0].ok && junk[0].what.contains("line 2"), "{junk:?}");
        assert!(findings(None, "").is_empty());
    }
}

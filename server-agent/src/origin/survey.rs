//! What `check` sees of a site read from its web server: the server as the agent sees it,
//! and the verdict the agent would publish with for each page its sitemaps name (all, or a
//! sample), found and asked exactly as the running agent does.

use super::discover::{self, Robots};
use super::fetch::{Answer, OriginClient, Validators};
use super::{OriginAgent, Pacer};
use crate::agent::AgentError;
use crate::config::Config;
use crate::privacy::RobotsTxt;
use crate::server_config::ServerRules;
use crate::web_server::ServerView;
use std::time::Duration;

/// Pages asked about when not every one is.
const SAMPLE: usize = 30;

/// What the agent would do with one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PageVerdict {
    /// Published.
    Published,
    /// Not published: hidden by a rule (which).
    Hidden(String),
    /// Not published: the server refused it, or serves it per visitor (why).
    Refused(String),
    /// Not decided (why).
    Unknown(String),
}

/// The server view, its rules, and the verdicts on the pages the sitemaps name.
pub(crate) type Survey = (Option<ServerView>, ServerRules, Vec<(String, PageVerdict)>);

/// Surveys the site of `config` (origin mode) as the agent would read it.
pub(crate) fn survey(config: &Config, every: bool) -> Result<Survey, AgentError> {
    let settings = config
        .origin
        .clone()
        .ok_or_else(|| AgentError::Origin("the configuration has no --origin".into()))?;
    let (view, access) = super::server_view(config, &settings)?;
    let client = OriginClient::new(
        &config.base_url,
        &settings.server,
        Duration::from_secs(20),
        view.as_ref().map(|v| v.judge.source),
    )
    .map_err(AgentError::Origin)?;
    let mut pacer = Pacer::new(settings.rate);
    let robots = discover::robots_txt(&client, &mut pacer);
    let rule = match &robots {
        Robots::Body(b) => RobotsTxt::Bytes(b),
        Robots::Absent => RobotsTxt::Absent,
        Robots::Refused(why) | Robots::Unreachable(why) => RobotsTxt::Unreadable(why.clone()),
    };
    let filter = OriginAgent::filter_with(config, rule, access.clone())?;
    let body = match &robots {
        Robots::Body(b) => Some(b.as_slice()),
        _ => None,
    };
    let roots = discover::sitemap_roots(&config.base_url, body);
    let found = discover::walk(
        &client,
        (&config.base_url, &settings.queries),
        roots,
        settings.max_urls,
        &mut pacer,
    );
    let mut paths = found.paths;
    paths.extend(settings.seeds.iter().cloned());
    paths.sort();
    paths.dedup();
    if !every && paths.len() > SAMPLE {
        let step = paths.len().div_ceil(SAMPLE);
        paths = paths.into_iter().step_by(step).collect();
    }
    let mut verdicts = Vec::new();
    for p in paths {
        let v = match filter.check_file(&crate::urls::request_form(&p)) {
            Err(why) => PageVerdict::Hidden(why.to_string()),
            Ok(()) => {
                pacer.wait();
                match client.get(&p, &Validators::default()) {
                    Answer::Page(_) => PageVerdict::Published,
                    Answer::Gone => PageVerdict::Refused("not there (404 or 410)".into()),
                    Answer::Refused(why) => PageVerdict::Refused(why),
                    Answer::NotModified => {
                        PageVerdict::Unknown("answered 304 to an unconditional request".into())
                    }
                    Answer::Unknown(why) => PageVerdict::Unknown(why),
                }
            }
        };
        verdicts.push((p, v));
    }
    Ok((view, access, verdicts))
}

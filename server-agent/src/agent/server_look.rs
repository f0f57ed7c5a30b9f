//! The web server as the agent looks at it: where the judge asks and what the server's
//! configuration hides, the rules of what may be published built from it (with robots.txt and
//! the webmaster's globs), and a new look when the server changes.

use super::{Agent, AgentError};
use crate::config::Config;
use crate::judge::Judge;
use crate::privacy::{FilterRules, PublicFilter, RobotsTxt};
use crate::scan::{self, ReadError};
use crate::server_config::ServerRules;
use crate::web_server::{Obtained, ServerView, ViewError};
use std::path::Path;
use std::sync::Arc;

fn own_dir_within(docroot: &Path, out: &Path) -> Option<String> {
    out.strip_prefix(docroot)
        .ok()
        .map(|rel| rel.to_string_lossy().trim_matches('/').to_string())
}

/// The site's robots.txt as the listing must obey it: a file that exists but cannot be read
/// is not the same as no file (the listing then fails closed). Read as any public file is
/// (a FIFO or a link out of the docroot is not read), and no further than crawlers read.
fn robots_txt_of(config: &Config) -> Result<Option<Vec<u8>>, String> {
    if config.ignore_robots_txt {
        return Ok(None);
    }
    let (file, _) = match scan::open_confined(&config.docroot, "robots.txt") {
        Ok(f) => f,
        Err(ReadError::Gone) => return Ok(None),
        Err(ReadError::NotPublic(why)) => return Err(why),
        Err(ReadError::Io(e)) => return Err(e.to_string()),
        Err(ReadError::Unstable) => return Err("changing".into()),
    };
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(file, 500 << 10), &mut bytes)
        .map_err(|e| e.to_string())?;
    Ok(Some(bytes))
}

/// The IndexNow key file the agent publishes, if configured.
pub(super) fn indexnow_key_file(config: &Config) -> Option<String> {
    config.indexnow.as_ref().map(|i| format!("{}.txt", i.key))
}

/// Looks at the web server: where the judge asks, from which address, and what its
/// configuration hides. A configuration the agent cannot read or understand stops the agent
/// at start-up (`strict`); once running, it hides everything instead, loudly, until it can be
/// read again (`None` then: the caller keeps its judge).
pub(crate) fn look_at_server(
    config: &Config,
    strict: bool,
) -> Result<(Option<ServerView>, ServerRules), AgentError> {
    let source = crate::judge::source::of_installation(&config.state, config.judge.source)
        .map_err(ViewError::Source)?;
    match crate::web_server::look(config, source) {
        Ok(view) => {
            let rules = view.rules(config);
            Ok((Some(view), rules))
        }
        Err(e) if strict => Err(e.into()),
        Err(e) => {
            tracing::error!("{e}: nothing is published until it can be read and understood");
            let mut rules = ServerRules::none();
            rules.hide_all(e.to_string());
            Ok((None, rules))
        }
    }
}

/// The rules of what may be published, with what the server's configuration hides.
pub(crate) fn filter_of(
    config: &Config,
    access: ServerRules,
) -> Result<Arc<PublicFilter>, AgentError> {
    let robots = robots_txt_of(config);
    let own_dir = own_dir_within(&config.docroot, &config.out);
    let own_files: Vec<String> = indexnow_key_file(config).into_iter().collect();
    let filter = PublicFilter::from_rules(FilterRules {
        include: &config.include,
        exclude: &config.exclude,
        publish_ext: &config.publish_ext,
        robots_txt: Some(match &robots {
            Ok(Some(bytes)) => RobotsTxt::Bytes(bytes),
            Ok(None) => RobotsTxt::Absent,
            Err(why) => RobotsTxt::Unreadable(why.clone()),
        }),
        own_dir: own_dir.as_deref(),
        own_files: &own_files,
        access,
    })?;
    for p in filter.access().hidden() {
        tracing::warn!("not published, the judge cannot see what others get there: {p}");
    }
    if let Some(why) = filter.robots_unreadable() {
        tracing::error!(
            "{}/robots.txt cannot be read or parsed ({why}): nothing is published until it can be",
            config.docroot.display()
        );
    }
    Ok(Arc::new(filter))
}

impl Agent {
    /// Looks at the web server again (its configuration or its process changed): new rules,
    /// and a new judge if it must now ask elsewhere. Whether anything the judge depends on
    /// changed.
    pub(crate) fn look_at_server_again(&mut self) -> Result<(), AgentError> {
        let (view, rules) = look_at_server(&self.core.config, false)?;
        if let Some(view) = view {
            log_view(&view);
            if view.server_url != self.view.server_url
                || view.judge.source != self.view.judge.source
            {
                self.judge = Judge::new(
                    &self.core.config.base_url,
                    &self.core.config.judge,
                    &view.server_url,
                    view.judge.source,
                )?;
            }
            self.view = view;
            if let Some(a) = &self.core.activity {
                a.server_config(self.view.unread_note());
            }
        }
        self.core.filter = filter_of(&self.core.config, rules)?;
        Ok(())
    }

    /// What to watch for a change of the web server.
    pub(crate) fn server_watch(&self) -> crate::web_server::reload::Watch {
        self.view.watch.clone()
    }
}

/// Says how the agent sees its web server, as every start and reload must.
pub(crate) fn log_view(view: &ServerView) {
    for line in view.summary() {
        match view.obtained {
            Obtained::Declined | Obtained::NotApplicable(_) => tracing::warn!("{line}"),
            _ => tracing::info!("{line}"),
        }
    }
    for w in &view.warnings {
        match &w.fix {
            Some(fix) => tracing::warn!("{} ({fix})", w.text),
            None => tracing::info!("{}", w.text),
        }
    }
}

//! Where the agent reads and writes, each checked: the docroot (or the empty stand-in of
//! origin mode), the state directory and the output directory.

use super::checks::{check_docroot, default_state_dir, prepare_dir};
use super::error::ConfigError;
use super::options::AgentOptions;
use std::path::PathBuf;

/// The directories the agent works in.
pub(super) struct Places {
    /// The docroot, canonical.
    pub(super) docroot: PathBuf,
    /// The docroot as given (a symlink not resolved), absolute.
    pub(super) docroot_given: PathBuf,
    pub(super) state: PathBuf,
    pub(super) out: PathBuf,
}

fn missing_docroot() -> ConfigError {
    ConfigError::Missing("the docroot", "docroot", "DOCROOT", "docroot")
}

/// The directories of `o`: a docroot's, or origin mode's (`origin`), which has none and needs
/// the state and output directories given.
pub(super) fn places(o: &AgentOptions, origin: bool) -> Result<Places, ConfigError> {
    let (docroot, state) = match (origin, &o.docroot) {
        (false, None) => return Err(missing_docroot()),
        (true, Some(_)) => {
            return Err(ConfigError::Value(
                "--origin reads the site from its web server, --docroot from its files: choose one"
                    .into(),
            ));
        }
        (true, None) => {
            let state = o.state.as_ref().ok_or(ConfigError::Missing(
                "the state directory (origin mode has no docroot to put it beside)",
                "state",
                "STATE",
                "state",
            ))?;
            let state = prepare_dir("state", state, true)?;
            // The service reads kept versions; a private empty directory stands in for
            // the docroot it would otherwise read files from.
            let empty = prepare_dir("origin", &state.join("origin-docroot"), true)?;
            (check_docroot(&empty)?, state)
        }
        (false, Some(docroot)) => {
            let docroot = check_docroot(docroot)?;
            let state = match &o.state {
                Some(s) => s.clone(),
                None => default_state_dir(&docroot)?,
            };
            (docroot, prepare_dir("state", &state, true)?)
        }
    };
    if origin && o.out.is_none() {
        return Err(ConfigError::Missing(
            "the output directory (origin mode: a directory the web server serves at the base URL)",
            "out",
            "OUT",
            "out",
        ));
    }
    if state.starts_with(&docroot) && !origin {
        return Err(ConfigError::Directory {
            what: "state",
            path: state,
            reason: "is inside the docroot, where the web server would publish it".into(),
        });
    }
    let out = o.out.clone().unwrap_or_else(|| docroot.clone());
    let out = prepare_dir("output", &out, false)?;
    let docroot_given = match &o.docroot {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => std::env::current_dir()
            .map(|c| c.join(d))
            .unwrap_or_else(|_| docroot.clone()),
        None => docroot.clone(),
    };
    Ok(Places {
        docroot,
        docroot_given,
        state,
        out,
    })
}

//! What the agent reports: why it stopped, and what one reconciliation did.

use crate::judge::JudgeError;
use crate::privacy::PatternError;
use crate::publish::PublishError;
use crate::server_config::ServerConfigError;
use crate::store::{LoggedChange, StoreError};
use crate::web_server::ViewError;

/// Why the agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The state database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Publishing failed.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// A bad include/exclude pattern.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// A web server configuration the agent cannot safely understand.
    #[error(transparent)]
    ServerConfig(#[from] ServerConfigError),
    /// The web server cannot be asked about files.
    #[error(transparent)]
    Judge(#[from] JudgeError),
    /// The web server cannot be known well enough to judge files.
    #[error(transparent)]
    Server(#[from] ViewError),
    /// Origin mode cannot start.
    #[error("origin mode: {0}")]
    Origin(String),
    /// The state directory belongs to another site.
    #[error(
        "state directory {state} belongs to {other}, not {this}; give this site its own --state"
    )]
    StateOfAnotherSite {
        /// The state directory.
        state: String,
        /// The docroot and base URL recorded there.
        other: String,
        /// This run's.
        this: String,
    },
}

/// What one reconciliation did.
#[derive(Debug, Default)]
pub struct Reconciled {
    /// Public files seen (full scans) or looked at (partial ones).
    pub(crate) files_seen: usize,
    /// Files and directories left out by the privacy rules.
    pub excluded: usize,
    /// Changes logged, with sequence numbers.
    pub changes: Vec<LoggedChange>,
    /// Files whose timestamp moved but whose content did not.
    pub touched: usize,
    /// Files still being written, to look at again later.
    pub unstable: Vec<String>,
    /// Problems worth a log line.
    pub problems: Vec<String>,
    /// Whether this run only recorded the baseline (first run ever: nothing is announced).
    pub baseline: bool,
    /// Files the web server was asked about in this pass.
    pub(crate) judged: usize,
    /// Files the web server refused when asked in this pass.
    pub(crate) refused: usize,
    /// Files the web server could not be asked about: nothing of them changed, they wait.
    pub deferred: Vec<String>,
    /// Why the web server could not be asked, when it could not.
    pub unreachable: Option<String>,
}

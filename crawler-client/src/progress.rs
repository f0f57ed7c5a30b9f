//! How a crawl shows its progress: a bar on a terminal, a log line every ten seconds
//! otherwise, and the summary that ends a run and that `status` prints.

use crate::state::Figures;
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How progress is shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// A bar if standard error is a terminal, log lines otherwise.
    #[default]
    Auto,
    /// A bar.
    Bar,
    /// A log line every ten seconds.
    Log,
    /// Only the final summary.
    Quiet,
}
/// The figures shown while a crawl runs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Snapshot {
    /// Pages fetched this run.
    pub(crate) fetched: u64,
    /// URLs waiting.
    pub(crate) queued: u64,
    /// Hosts with work.
    pub(crate) hosts_active: usize,
    /// Requests under way.
    pub(crate) in_flight: usize,
    /// Errors this run (4xx, 5xx, failures).
    pub(crate) errors: u64,
    /// Body bytes this run.
    pub(crate) bytes: u64,
}

/// The progress display.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    log: bool,
    every: Duration,
    last: Instant,
    last_fetched: u64,
    rate: f64,
}

impl Progress {
    /// A display in `mode`.
    pub(crate) fn new(mode: ProgressMode) -> Progress {
        let bar = match mode {
            ProgressMode::Bar => true,
            ProgressMode::Auto => std::io::stderr().is_terminal(),
            _ => false,
        };
        let bar = bar.then(|| {
            let b = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        Progress {
            log: bar.is_none() && mode != ProgressMode::Quiet,
            every: if bar.is_some() {
                Duration::from_millis(500)
            } else {
                Duration::from_secs(10)
            },
            bar,
            last: Instant::now(),
            last_fetched: 0,
            rate: 0.0,
        }
    }

    /// Whether a new snapshot is due.
    pub(crate) fn due(&self) -> bool {
        self.last.elapsed() >= self.every
    }

    /// When the next snapshot is due.
    pub(crate) fn next_due(&self) -> Instant {
        self.last + self.every
    }

    /// Shows a snapshot.
    pub(crate) fn show(&mut self, s: &Snapshot) {
        let dt = self.last.elapsed().as_secs_f64();
        if dt > 0.0 {
            self.rate = (s.fetched.saturating_sub(self.last_fetched)) as f64 / dt;
        }
        self.last = Instant::now();
        self.last_fetched = s.fetched;
        let line = format!(
            "pages {} ({:.0}/s)  queue {}  hosts active {}  in flight {}  errors {}  {:.1} MB",
            s.fetched,
            self.rate,
            s.queued,
            s.hosts_active,
            s.in_flight,
            s.errors,
            s.bytes as f64 / 1e6
        );
        if let Some(bar) = &self.bar {
            bar.set_message(line);
        } else if self.log {
            tracing::info!("{line}");
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// What one run did, for the summary.
#[derive(Debug, Clone, Copy)]
pub struct RunFigures {
    /// Pages fetched.
    pub(crate) fetched: u64,
    /// Body bytes.
    pub(crate) bytes: u64,
    /// Wall time.
    pub(crate) elapsed: Duration,
    /// Records replayed from the archive after a crash.
    pub(crate) replayed: u64,
    /// Whether the queue is empty (or the budget spent).
    pub(crate) complete: bool,
}

/// The summary of a crawl directory's state (and of the run that just ended, if any).
pub fn summary(f: &Figures, skipped: &[(String, String)], run: Option<&RunFigures>) -> String {
    let mut s = String::new();
    if let Some(r) = run {
        let secs = r.elapsed.as_secs_f64().max(1e-9);
        let _ = writeln!(
            s,
            "this run: {} pages in {:.1} s ({:.0} pages/s, {:.1} MB/s){}{}",
            r.fetched,
            secs,
            r.fetched as f64 / secs,
            r.bytes as f64 / 1e6 / secs,
            if r.replayed > 0 {
                format!(", {} replayed from the archive", r.replayed)
            } else {
                String::new()
            },
            if r.complete {
                ""
            } else {
                ", stopped before the end (run again to resume)"
            }
        );
    }
    let _ = writeln!(
        s,
        "pages: {} fetched ({} ok, {} not modified, {} redirects, {} client errors, {} server errors, {} failed), {} disallowed by robots.txt",
        f.fetched(),
        f.ok,
        f.not_modified,
        f.redirects,
        f.client_errors,
        f.server_errors,
        f.failures,
        f.disallowed
    );
    if f.held > 0 {
        let _ = writeln!(
            s,
            "held: {} links not fetched (the site's complete listing says nothing is there; a few were checked)",
            f.held
        );
    }
    if f.usage_skipped + f.usage_not_kept > 0 {
        let _ = writeln!(
            s,
            "usage preferences: {} pages skipped, {} fetched and not kept (the site refuses the crawl's purpose)",
            f.usage_skipped, f.usage_not_kept
        );
    }
    let _ = writeln!(
        s,
        "duplicates: {}  changes seen on revisits: {}",
        f.duplicates, f.changes
    );
    let _ = writeln!(
        s,
        "queue: {}  hosts: {} ({} skipped)",
        f.queued, f.hosts, f.hosts_skipped
    );
    let _ = writeln!(
        s,
        "received: {:.1} MB  archived: {:.1} MB of WARC",
        f.bytes as f64 / 1e6,
        f.warc_bytes as f64 / 1e6
    );
    if f.net_refused > 0 {
        let _ = writeln!(
            s,
            "refused: {} connections to addresses inside a network (loopback, private, link-local...; --allow-net allows one)",
            f.net_refused
        );
    }
    for (origin, why) in skipped {
        let _ = writeln!(s, "skipped {origin}: {why}");
    }
    s
}

//! `webcoop-agent`: the agent's command line.

use clap::Parser;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;
use webcoop_agent::agent::Agent;
use webcoop_agent::config::{Cli, Config};
use webcoop_protocol::clock::SystemClock;

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WEBCOOP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let config = match Config::from_cli(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("webcoop-agent: {e}");
            return ExitCode::from(2);
        }
    };
    match run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("webcoop-agent: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(config: Config) -> Result<(), webcoop_agent::agent::AgentError> {
    let once = config.once;
    let start = Instant::now();
    let mut agent = Agent::open(config, Arc::new(SystemClock))?;
    let scan = agent.full_scan(false)?;
    for p in &scan.problems {
        tracing::warn!("{p}");
    }
    let report = agent.publish()?;
    let what = if scan.baseline {
        "first run: recorded the baseline".to_string()
    } else {
        format!("{} changes since the last run", scan.changes.len())
    };
    tracing::info!(
        "{} public files ({}), {} excluded, {what}; published robots.rdf ({}) and sitemaps in {} ms",
        agent.inventory().len(),
        human_bytes(agent.inventory().total_bytes()),
        scan.excluded,
        human_bytes(report.listing_bytes),
        start.elapsed().as_millis()
    );
    if once {
        return Ok(());
    }
    tracing::info!("watching {}", agent.config().docroot.display());
    agent.watch(&AtomicBool::new(false))
}

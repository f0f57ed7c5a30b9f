//! `webcoop-crawl`: the crawler's command line.

use clap::{Parser, Subcommand};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use webcoop_crawler::inspect::{InspectOptions, inspect};

/// An incremental crawler that uses a site's cooperation signals (robots.rdf, sitemaps, the
/// changes feed, deltas, WebSub push) and polls everywhere else.
#[derive(Parser)]
#[command(name = "webcoop-crawl", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read a robots.rdf, sitemap (plain or gzip), changes feed or dcz delta and report what is
    /// in it, or exactly what is wrong with it (exit status 1).
    Inspect {
        /// The document; `-` reads standard input.
        file: PathBuf,
        /// Refuse a sitemap with any bad entry instead of reporting and skipping it.
        #[arg(long)]
        strict: bool,
        /// How many entries to list.
        #[arg(long, default_value_t = 10)]
        list: usize,
        /// For a dcz delta: the version it was made against, to decode and check it.
        #[arg(long)]
        base: Option<PathBuf>,
    },
}

fn read_input(path: &PathBuf) -> std::io::Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(path)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Inspect {
            file,
            strict,
            list,
            base,
        } => {
            let bytes = match read_input(&file) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("webcoop-crawl: cannot read {}: {e}", file.display());
                    return ExitCode::FAILURE;
                }
            };
            let base = match base.as_ref().map(std::fs::read).transpose() {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("webcoop-crawl: cannot read the base version: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match inspect(&bytes, &InspectOptions { strict, list, base }) {
                Ok(report) => {
                    print!("{report}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("webcoop-crawl: {}: {e}", file.display());
                    ExitCode::FAILURE
                }
            }
        }
    }
}

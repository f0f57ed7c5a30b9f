//! `webcoop-agent`: the agent's command line.

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use webcoop_agent::Activity;
use webcoop_agent::Agent;
use webcoop_agent::{AgentCommand, Cli, Config};
use webcoop_protocol::clock::Clock;

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

/// The command line, every option also readable from `WEBCOOP_<OPTION>` (the rule of both
/// binaries, `webcoop_daemon::command_line`).
/// Not the actions that print or change something once.
fn command() -> clap::Command {
    let cli = webcoop_agent::help_with_defaults(<Cli as clap::CommandFactory>::command());
    webcoop_daemon::command_line::with_environment(
        cli,
        "WEBCOOP_",
        &["--print-robots-lines", "--forget-versions"],
    )
}

fn main() -> ExitCode {
    if let Some(code) = webcoop_daemon::generated_docs::generate_if_asked(command()) {
        return code;
    }
    // State is private whatever umask the agent was started with; published documents are
    // opened up one by one.
    webcoop_daemon::private::private_umask();
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WEBCOOP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if cli.print_robots_lines {
        return print_robots_lines(&cli);
    }
    let clock = match webcoop_protocol::clock::from_options(cli.clock_speed, cli.clock_anchor) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("webcoop-agent: {e}");
            return ExitCode::from(2);
        }
    };
    let command = cli.command.clone();
    let mut forget = cli.forget_versions.clone();
    if let Some(AgentCommand::Forget { paths }) = &cli.command {
        forget.extend(paths.iter().cloned());
    }
    if let Some(AgentCommand::Notify { urls }) = &cli.command {
        return notify(&cli, urls);
    }
    let config = match Config::from_cli(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("webcoop-agent: {e}");
            return ExitCode::from(2);
        }
    };
    if !forget.is_empty() {
        return forget_versions(&config, &forget);
    }
    if let Some(AgentCommand::Check { files }) = command {
        let (findings, verdicts) = webcoop_agent::check(&config, files);
        for f in &findings {
            println!("{f}");
        }
        if files {
            println!();
            for line in &verdicts {
                println!("{line}");
            }
        }
        let fixes = findings.iter().filter(|f| !f.ok).count();
        return if fixes == 0 {
            println!("\nall good: a crawler can use everything the agent publishes");
            ExitCode::SUCCESS
        } else {
            println!("\n{fixes} to change");
            ExitCode::FAILURE
        };
    }
    let snapshot_now = matches!(command, Some(AgentCommand::Snapshot));
    let result = if config.origin.is_some() {
        run_origin(config, clock, snapshot_now)
    } else {
        run(config, clock, snapshot_now)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("webcoop-agent: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `notify URL...`: a WebSub publish of `urls` to the running agent's ping endpoint.
fn notify(cli: &Cli, urls: &[String]) -> ExitCode {
    let fail = |why: String| {
        eprintln!("webcoop-agent notify: {why}");
        ExitCode::FAILURE
    };
    let options = match cli.merged() {
        Ok(o) => o,
        Err(e) => return fail(e.to_string()),
    };
    let Some(listen) = options.listen.as_deref() else {
        return fail("needs --listen, the address the agent serves on".into());
    };
    let addr: std::net::SocketAddr = match listen.parse() {
        Ok(a) => a,
        Err(e) => return fail(format!("--listen {listen:?}: {e}")),
    };
    let secret = match &options.notify_secret_file {
        Some(path) => match webcoop_agent::read_notify_secret(path) {
            Ok(s) => Some(s),
            Err(e) => return fail(e.to_string()),
        },
        None => None,
    };
    let body = webcoop_protocol::ping::publish_form(urls);
    match webcoop_agent::send_notice(addr, secret.as_deref(), &body) {
        Ok((200, _)) => {
            println!("told the agent at {addr} of {} changed pages", urls.len());
            ExitCode::SUCCESS
        }
        Ok((status, text)) => fail(format!("the agent answered {status}: {}", text.trim())),
        Err(e) => fail(format!("cannot reach the agent at {addr}: {e}")),
    }
}

/// Origin mode: reads the site from its web server, serves, and checks pages at their pace.
fn run_origin(
    config: Config,
    clock: Arc<dyn Clock>,
    snapshot_now: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut agent = webcoop_agent::OriginAgent::open(config.clone(), clock.clone())?;
    let origin = config
        .origin
        .as_ref()
        .map(|o| o.server.to_string())
        .unwrap_or_default();
    if config.once || snapshot_now {
        let stats = agent.run_once()?;
        println!(
            "{} pages published from {origin}: {} requests, {} changes",
            agent.inventory().len(),
            stats.requests,
            stats.changes
        );
        if snapshot_now || agent.snapshot_due()? {
            let built = agent.build_snapshot()?;
            println!(
                "snapshot {}: {} pages ({}) in {}, {} left out, {:.1} s",
                built.path.display(),
                built.records,
                human_bytes(built.content_bytes),
                human_bytes(built.file_bytes),
                built.left_out,
                built.elapsed.as_secs_f64()
            );
        }
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let activity = Arc::new(Activity::default());
    agent.record_activity(activity.clone());
    runtime.block_on(async move {
        let mut running = None;
        let mut notices = None;
        if let Some(service) = config.service.clone() {
            let listener = tokio::net::TcpListener::bind(service.listen)
                .await
                .map_err(|e| format!("cannot listen on {}: {e}", service.listen))?;
            let mut r = webcoop_agent::start_service_with(
                &config,
                clock.clone(),
                listener,
                activity.clone(),
            )
            .await?;
            tracing::info!(
                "serving {} on {}; reading {} from {origin}",
                service.public_url,
                r.local_addr,
                config.base_url
            );
            agent.observe(r.observer());
            notices = r.take_notices();
            running = Some(r);
        }
        start_console(&config, activity, running.as_ref()).await?;
        until_stopped(running, "the origin loop", move |stop| {
            agent.run(stop, notices)
        })
        .await
    })
}

/// Runs `work` on a thread of its own until SIGINT or SIGTERM, then stops it and the service.
async fn until_stopped(
    running: Option<webcoop_agent::Running>,
    what: &str,
    work: impl FnOnce(&AtomicBool) -> Result<(), webcoop_agent::AgentError> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error>> {
    let stop = Arc::new(AtomicBool::new(false));
    let work_stop = stop.clone();
    let worker = std::thread::spawn(move || work(&work_stop));
    shutdown_signal().await;
    tracing::info!("stopping");
    stop.store(true, Ordering::Relaxed);
    if let Some(r) = running {
        r.stop().await;
    }
    match worker.join() {
        Ok(result) => result.map_err(|e| Box::new(e) as Box<dyn std::error::Error>),
        Err(_) => Err(format!("{what} panicked").into()),
    }
}

/// Drops the kept versions of `paths` from the state (beside a running agent too: SQLite's WAL
/// lets both write, and the service checks a version is still kept before serving a delta).
fn forget_versions(config: &Config, paths: &[String]) -> ExitCode {
    let mut store = match webcoop_agent::Store::open(&config.state) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("webcoop-agent: {e}");
            return ExitCode::FAILURE;
        }
    };
    for p in paths {
        let rel = p.trim_start_matches('/');
        match store.forget_versions(rel) {
            Ok(n) => println!("{rel}: {n} kept versions dropped"),
            Err(e) => {
                eprintln!("webcoop-agent: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The lines a webmaster adds to robots.txt so crawlers find what the agent publishes.
fn print_robots_lines(cli: &Cli) -> ExitCode {
    let options = match cli.merged() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("webcoop-agent: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(base) = options
        .base_url
        .as_deref()
        .and_then(|b| url::Url::parse(b).ok())
    else {
        eprintln!("webcoop-agent: --print-robots-lines needs --base-url (an absolute URL)");
        return ExitCode::from(2);
    };
    let base = if base.path().ends_with('/') {
        base
    } else {
        base.join(&format!("{}/", base.path())).unwrap_or(base)
    };
    let join = |p: &str| base.join(p).map(String::from).unwrap_or_default();
    // Sitemap is read by every major crawler; Robots-RDF is an extension record, which
    // RFC 9309 parsers ignore, pointing cooperating crawlers at the full listing.
    println!("Sitemap: {}", join(webcoop_agent::SITEMAP));
    println!("Robots-RDF: {}", join(webcoop_agent::ROBOTS_RDF));
    ExitCode::SUCCESS
}

fn run(
    config: Config,
    clock: Arc<dyn Clock>,
    snapshot_now: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut agent = Agent::open(config.clone(), clock.clone())?;
    let activity = Arc::new(Activity::default());
    agent.record_activity(activity.clone());
    if !config.once && !snapshot_now {
        // Events during the start-up scan queue up instead of being lost.
        agent.start_watching();
    }
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
        "{} public files ({}), {} excluded ({} refused by the web server at {}), {what}; published robots.rdf ({}) and sitemaps in {} ms",
        agent.inventory().len(),
        human_bytes(agent.inventory().total_bytes()),
        scan.excluded,
        agent.refused_count(),
        config.judge.server_url.origin().ascii_serialization(),
        human_bytes(report.listing_bytes),
        start.elapsed().as_millis()
    );
    if snapshot_now || (config.once && agent.snapshot_due()?) {
        match agent.build_snapshot() {
            Ok(built) => println!(
                "snapshot {}: {} files ({}) in {} ({:.2}x), {} left out, {:.1} s",
                built.path.display(),
                built.records,
                human_bytes(built.content_bytes),
                human_bytes(built.file_bytes),
                built.file_bytes as f64 / built.content_bytes.max(1) as f64,
                built.left_out,
                built.elapsed.as_secs_f64()
            ),
            Err(e) if snapshot_now => return Err(e.into()),
            // The documents are published: without a new snapshot crawlers fetch pages (or
            // the previous snapshot, then the changes since), and the next run tries again.
            Err(e) => tracing::error!("{e}; the snapshot is built again at the next run"),
        }
    }
    if config.once || snapshot_now {
        if let Some(why) = scan.unreachable {
            return Err(format!(
                "{} files not published: the web server could not judge them ({why}); run again once it answers",
                scan.deferred.len()
            )
            .into());
        }
        return Ok(());
    }
    if config.service.is_none() && config.console.is_none() && config.indexnow.is_none() {
        tracing::info!("watching {}", config.docroot.display());
        agent.watch(&AtomicBool::new(false))?;
        return Ok(());
    }
    // Two workers: the service is I/O bound, and the watch loop has its own thread.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut running = None;
        if let Some(service) = config.service.clone() {
            let listener = tokio::net::TcpListener::bind(service.listen)
                .await
                .map_err(|e| format!("cannot listen on {}: {e}", service.listen))?;
            let r = webcoop_agent::start_service_with(
                &config,
                clock.clone(),
                listener,
                activity.clone(),
            )
            .await?;
            tracing::info!(
                "serving {} on {}; watching {}",
                service.public_url,
                r.local_addr,
                config.docroot.display()
            );
            agent.observe(r.observer());
            running = Some(r);
        } else if let Some(pinging) =
            webcoop_agent::start_indexnow(&config, activity.clone()).await?
        {
            // IndexNow needs no service of ours: the pings go out as the log moves.
            agent.observe(pinging.observer());
        }
        start_console(&config, activity, running.as_ref()).await?;
        until_stopped(running, "the watch loop", move |stop| agent.watch(stop)).await
    })
}

/// Serves the console, when `--console` asks for it.
async fn start_console(
    config: &Config,
    activity: Arc<Activity>,
    running: Option<&webcoop_agent::Running>,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(console) = &config.console else {
        return Ok(());
    };
    let setup = webcoop_agent::ConsoleSetup {
        docroot: config.docroot.clone(),
        base_url: config.base_url.to_string(),
        state: config.state.clone(),
        service: config.service.as_ref().map(|s| s.public_url.to_string()),
        indexnow: config.indexnow.as_ref().map(|i| i.endpoint.to_string()),
        identity: config.service.as_ref().map(|s| s.identity.clone()),
    };
    let metrics = running.map(|r| r.state.metrics.clone());
    let addr = webcoop_agent::start_console(console, setup, activity, metrics).await?;
    tracing::info!("console at http://{addr}/");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}

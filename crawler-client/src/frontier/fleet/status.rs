//! What `webcoop-crawl status --frontier ... --crawl NAME` shows of a fleet: its processes
//! (alive or not, their rates, what they hold, their directories and WARC files) and the
//! shared frontier (hosts, queue, leases, hosts given up).

use super::members::{Heartbeat, Members};
use super::redis_link::RedisLink;
use super::{FleetError, connect, tag};
use serde::Serialize;

/// One process as the fleet knows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Process {
    /// Its name.
    pub(crate) name: String,
    /// Whether its heartbeat is recent and it has not stopped.
    pub(crate) alive: bool,
    /// Seconds since its last heartbeat.
    pub(crate) seen_ago: f64,
    /// Its last heartbeat.
    pub(crate) beat: Heartbeat,
    /// Its WARC files (name, bytes), when its directory is on this machine.
    pub(crate) warc_files: Vec<(String, u64)>,
    /// Sites whose cooperation it tracks, and of those the ones it is subscribed to (from
    /// its state, when its directory is on this machine).
    pub(crate) cooperation: Option<(usize, usize)>,
}

/// The fleet of one crawl.
#[derive(Debug, Clone, Serialize)]
pub struct FleetStatus {
    /// The frontier.
    pub(crate) frontier: String,
    /// The crawl.
    pub(crate) crawl: String,
    /// Every process that joined.
    pub(crate) processes: Vec<Process>,
    /// Hosts known.
    pub(crate) hosts: u64,
    /// Hosts with work.
    pub(crate) hosts_with_work: u64,
    /// Hosts whose lease a process holds.
    pub(crate) hosts_leased: u64,
    /// URLs waiting.
    pub(crate) queued: u64,
    /// URLs taken by processes (in their buffers or under way).
    pub(crate) taken: u64,
    /// URLs ever queued (the shared seen-set).
    pub(crate) seen: u64,
    /// Hosts given up on, and why.
    pub(crate) skipped: Vec<(String, String)>,
    /// The shards, when the crawl is split by owner (`--shard`).
    pub(crate) shards: Vec<super::shards::ShardStatus>,
}

fn count(link: &mut RedisLink, cmd: &str, key: &str) -> Result<u64, FleetError> {
    link.run(|con| redis::cmd(cmd).arg(key).query(con))
}

/// Reads the status of crawl `crawl` on the frontier at `url`.
pub fn read(url: &str, crawl: &str) -> Result<FleetStatus, FleetError> {
    let mut members = Members::connect(url, crawl)?;
    let (all, now) = members.all()?;
    let mut link = connect(url, crawl)?;
    let c = tag(crawl, "crawl");
    let max_id: Option<u64> =
        link.run(|con| redis::cmd("GET").arg(format!("{c}:host_ids")).query(con))?;
    let origins: Vec<(String, String)> =
        link.run(|con| redis::cmd("HGETALL").arg(format!("{c}:origins")).query(con))?;
    let origin_of = |id: &str| {
        origins
            .iter()
            .find(|(i, _)| i == id)
            .map_or(id.to_string(), |(_, o)| o.clone())
    };
    let (mut queued, mut taken, mut seen, mut leased) = (0, 0, 0, 0);
    for id in 1..=max_id.unwrap_or(0) {
        let t = super::queue::host_prefix(crawl, crate::ids::HostId(id as i64));
        queued += count(&mut link, "ZCARD", &format!("{t}:queue"))?;
        let held: Vec<Vec<u8>> =
            link.run(|con| redis::cmd("HVALS").arg(format!("{t}:holders")).query(con))?;
        // 16 bytes per URL taken (see `queue`).
        taken += held.iter().map(|h| h.len() as u64 / 16).sum::<u64>();
        let rows: Option<u64> = link.run(|con| {
            redis::cmd("HGET")
                .arg(format!("{t}:shape"))
                .arg("count")
                .query(con)
        })?;
        seen += rows.unwrap_or(0);
        let leases: u64 = link.run(|con| {
            redis::cmd("ZCOUNT")
                .arg(super::leases::lease_keys(crawl, &id.to_string()).0)
                .arg(now)
                .arg("+inf")
                .query(con)
        })?;
        leased += u64::from(leases > 0);
    }
    let skipped: Vec<(String, String)> =
        link.run(|con| redis::cmd("HGETALL").arg(format!("{c}:skipped")).query(con))?;
    let processes = all
        .into_iter()
        .map(|(name, beat)| {
            let ago = beat.age(now);
            Process {
                alive: beat.alive(now),
                seen_ago: ago as f64 / 1000.0,
                warc_files: warc_files(&beat.dir),
                cooperation: cooperation(&beat.dir),
                name,
                beat,
            }
        })
        .collect();
    Ok(FleetStatus {
        frontier: super::shown(url),
        crawl: crawl.to_string(),
        processes,
        hosts: max_id.unwrap_or(0),
        hosts_with_work: count(&mut link, "ZCARD", &format!("{c}:active"))?,
        hosts_leased: leased,
        queued,
        taken,
        seen,
        skipped: skipped
            .into_iter()
            .map(|(id, why)| (origin_of(&id), why))
            .collect(),
        shards: super::shards::status(&mut link, crawl)?,
    })
}

fn cooperation(dir: &str) -> Option<(usize, usize)> {
    let store = crate::state::Store::open_read_only(std::path::Path::new(dir)).ok()?;
    let sites = store.coop_sites().ok()?;
    let subscribed = sites
        .iter()
        // A site's saved state names its subscription when it has one (coop's `SiteCoop`,
        // read here as plain JSON: the frontier sits below cooperation).
        .filter_map(|(_, _, json)| serde_json::from_str::<serde_json::Value>(json).ok())
        .filter(|site| site.get("subscription").is_some_and(|s| !s.is_null()))
        .count();
    Some((sites.len(), subscribed))
}

fn warc_files(dir: &str) -> Vec<(String, u64)> {
    let Ok(entries) = std::fs::read_dir(std::path::Path::new(dir).join("warc")) else {
        return Vec::new();
    };
    let mut files: Vec<(String, u64)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let size = e.metadata().ok()?.len();
            Some((e.file_name().to_string_lossy().into_owned(), size))
        })
        .filter(|(n, _)| n.contains(".warc"))
        .collect();
    files.sort();
    files
}

impl FleetStatus {
    /// As text, for a terminal.
    pub fn text(&self) -> String {
        let mut out = format!(
            "crawl {:?} on {}\nshared frontier: {} URLs queued, {} taken, {} seen; {} hosts, {} with work, {} leased\n",
            self.crawl,
            self.frontier,
            self.queued,
            self.taken,
            self.seen,
            self.hosts,
            self.hosts_with_work,
            self.hosts_leased
        );
        out.push_str("processes:\n");
        for p in &self.processes {
            let b = &p.beat;
            out.push_str(&format!(
                "  {:<20} {:<8} {:>8} pages {:>8.1}/s {:>5} hosts {:>4} in flight {:>5} taken  pid {} on {}, {} ({} WARC files, {} bytes{})  seen {:.0} s ago\n",
                p.name,
                if p.alive { b.state.as_str() } else if b.state == "stopped" { "stopped" } else { "gone" },
                b.fetched,
                b.rate,
                b.hosts,
                b.in_flight,
                b.taken,
                b.pid,
                b.machine,
                b.dir,
                p.warc_files.len(),
                p.warc_files.iter().map(|f| f.1).sum::<u64>(),
                p.cooperation.map_or(String::new(), |(sites, subscribed)| format!(
                    "; cooperation: {sites} sites, {subscribed} subscribed"
                )),
                p.seen_ago
            ));
            if p.alive && !b.held.is_empty() {
                let more = b.hosts.saturating_sub(b.held.len());
                out.push_str(&format!(
                    "  {:<20} holds {}{}\n",
                    "",
                    b.held.join(" "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        if !self.shards.is_empty() {
            out.push_str("shards (split by owner):\n");
        }
        for s in &self.shards {
            out.push_str(&format!(
                "  shard {:<4} {:<8} {:>6} inbox elements waiting, {:>8} taken in\n",
                s.shard,
                match (s.member, s.idle) {
                    (false, _) => "absent",
                    (true, true) => "idle",
                    (true, false) => "working",
                },
                s.inbox,
                s.trimmed
            ));
        }
        if !self.skipped.is_empty() {
            out.push_str("hosts given up:\n");
            for (origin, why) in &self.skipped {
                out.push_str(&format!("  {origin}: {why}\n"));
            }
        }
        out
    }
}

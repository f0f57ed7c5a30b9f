//! Redis's time by script, which `INFO commandstats` cannot give (it counts every script as
//! `evalsha`): each node keeps every command in its slow log for a stretch of the fleet's
//! crawl, and the entries are grouped by what ran, a script by its SHA and the shape of its
//! first key. Commands a script calls are logged too, by their own names.

use std::collections::HashMap;

fn connect(port: u16) -> redis::RedisResult<redis::Connection> {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))?.get_connection()
}

/// Makes the nodes at `ports` keep every command in their slow log, up to `keep` each.
pub(super) fn start(ports: &[u16], keep: u32) {
    for &port in ports {
        let Ok(mut con) = connect(port) else {
            eprintln!("slow log: no connection to port {port}");
            continue;
        };
        let set = |con: &mut redis::Connection, name: &str, value: u32| {
            redis::cmd("CONFIG")
                .arg("SET")
                .arg(name)
                .arg(value)
                .query::<()>(con)
        };
        let done = set(&mut con, "slowlog-max-len", keep)
            .and_then(|()| set(&mut con, "slowlog-log-slower-than", 0))
            .and_then(|()| redis::cmd("SLOWLOG").arg("RESET").query::<()>(&mut con));
        if let Err(e) = done {
            eprintln!("slow log: port {port}: {e}");
        }
    }
}

/// `{web:996}:queue` as `{web:N}:queue`: keys of one kind alike whatever their host.
fn shape(key: &[u8]) -> String {
    let mut out = String::new();
    for c in String::from_utf8_lossy(key).chars() {
        match c.is_ascii_digit() {
            true if out.ends_with('N') => {}
            true => out.push('N'),
            false => out.push(c),
        }
    }
    out
}

/// What an entry's arguments ran: a script by its SHA and first key, else the command.
fn what(args: &[Vec<u8>]) -> String {
    let name = String::from_utf8_lossy(args.first().map_or(&[][..], |a| a)).to_lowercase();
    if name != "evalsha" || args.len() < 3 {
        return name;
    }
    let sha = String::from_utf8_lossy(&args[1]);
    let first = args.get(3).map_or(String::new(), |k| shape(k));
    format!("script {} ({first})", &sha[..sha.len().min(8)])
}

/// How many keys an entry's script was given (0 for a command).
fn keys_of(args: &[Vec<u8>]) -> u64 {
    args.get(2)
        .and_then(|k| std::str::from_utf8(k).ok()?.parse().ok())
        .filter(|_| {
            args.first()
                .is_some_and(|a| a.eq_ignore_ascii_case(b"evalsha"))
        })
        .unwrap_or(0)
}

/// Reads the nodes' slow logs and prints Redis's time by what ran, the costliest first.
pub(super) fn report(ports: &[u16], keep: u32) {
    // name -> (calls, microseconds, keys); the span of the entries' times.
    let mut by: HashMap<String, (u64, u64, u64)> = HashMap::new();
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for &port in ports {
        let entries: redis::RedisResult<Vec<redis::Value>> = connect(port)
            .and_then(|mut con| redis::cmd("SLOWLOG").arg("GET").arg(keep).query(&mut con));
        let entries = match entries {
            Ok(e) => e,
            Err(e) => {
                eprintln!("slow log: port {port}: {e}");
                continue;
            }
        };
        for entry in entries {
            // id, time, microseconds, arguments, then the client's address and name.
            let Ok(fields) = redis::from_redis_value::<Vec<redis::Value>>(entry) else {
                continue;
            };
            let mut fields = fields.into_iter().skip(1);
            let (Some(at), Some(usec), Some(args)) = (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let (Ok(at), Ok(usec), Ok(args)) = (
                redis::from_redis_value::<i64>(at),
                redis::from_redis_value::<u64>(usec),
                redis::from_redis_value::<Vec<Vec<u8>>>(args),
            ) else {
                continue;
            };
            first = first.min(at);
            last = last.max(at);
            let e = by.entry(what(&args)).or_default();
            e.0 += 1;
            e.1 += usec;
            e.2 += keys_of(&args);
        }
    }
    let span = (last - first).max(1) as f64;
    let mut rows: Vec<_> = by.into_iter().collect();
    rows.sort_by_key(|(_, (_, usec, _))| std::cmp::Reverse(*usec));
    println!(
        "\n| Redis, by what ran (slow log over {span:.0} s) | calls | per second | s | us per call | keys per call |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, (calls, usec, keys)) in rows.iter().take(16) {
        println!(
            "| {name} | {calls} | {:.0} | {:.2} | {:.1} | {:.1} |",
            *calls as f64 / span,
            *usec as f64 / 1e6,
            *usec as f64 / (*calls).max(1) as f64,
            *keys as f64 / (*calls).max(1) as f64
        );
    }
}

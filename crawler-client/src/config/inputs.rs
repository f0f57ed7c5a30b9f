//! What the settings point at: seed lists (URLs and files), the console's token file, and
//! address overrides (`HOST=ADDR`).

use super::error::ConfigError;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use url::Url;

/// Reads a token file: its first line, without surrounding blanks.
pub fn read_token_file(path: &Path) -> Result<String, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ConsoleTokenFile {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text.lines().next().unwrap_or("").trim().to_string())
}

/// Parses `HOST=ADDR` (ADDR an IP address, with or without a port).
pub(crate) fn parse_resolve(host: &str, addr: &str) -> Result<(String, SocketAddr), ConfigError> {
    let bad = |why| ConfigError::Resolve {
        entry: format!("{host}={addr}"),
        why,
    };
    let sock = addr
        .parse::<SocketAddr>()
        .or_else(|_| addr.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| bad("not an IP address"))?;
    if host.is_empty() {
        return Err(bad("the host name is empty"));
    }
    Ok((host.to_ascii_lowercase(), sock))
}

/// Reads seeds: each argument is a URL, or a file of URLs.
pub(crate) fn read_seeds(args: &[String]) -> Result<Vec<Url>, ConfigError> {
    let mut out = Vec::new();
    for arg in args {
        if arg.contains("://") {
            out.push(seed_url(arg, arg)?);
            continue;
        }
        let text = std::fs::read_to_string(arg).map_err(|source| ConfigError::SeedFile {
            path: arg.clone(),
            source,
        })?;
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if !line.is_empty() {
                out.push(seed_url(line, &format!("{arg}:{}", n + 1))?);
            }
        }
    }
    Ok(out)
}

fn seed_url(s: &str, at: &str) -> Result<Url, ConfigError> {
    let bad = |why: String| ConfigError::Seed {
        at: at.to_string(),
        value: s.to_string(),
        why,
    };
    let mut url = Url::parse(s).map_err(|e| bad(format!("a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(bad("an http(s) URL".into()));
    }
    crate::analyze::url_norm::normalize(&mut url);
    Ok(url)
}

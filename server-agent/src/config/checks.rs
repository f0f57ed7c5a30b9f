//! The checks a path, URL, network or size passes before the agent uses it, each naming the
//! setting and what to give instead.

use super::error::ConfigError;
use std::path::{Path, PathBuf};
use url::Url;

/// Parses `1048576`, `512K`, `512KiB`, `20MB`, `2G`, `1TiB` (K/M/G/T are binary, as `du -h`).
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 512MiB"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => return Err(format!("unknown size unit {other:?} in {text:?}")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

pub(super) fn check_docroot(path: &Path) -> Result<PathBuf, ConfigError> {
    let err = |reason: String| ConfigError::Docroot {
        path: path.to_path_buf(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => err("does not exist".into()),
        std::io::ErrorKind::PermissionDenied => err("cannot be read: permission denied".into()),
        _ => err(e.to_string()),
    })?;
    if !meta.is_dir() {
        return Err(err("is not a directory".into()));
    }
    std::fs::read_dir(path).map_err(|e| err(format!("cannot be read: {e}")))?;
    path.canonicalize().map_err(|e| err(e.to_string()))
}

/// Parses a list of networks given to `flag`.
pub(super) fn cidrs(flag: &str, nets: &[String]) -> Result<Vec<ipnet::IpNet>, ConfigError> {
    nets.iter()
        .map(|n| {
            n.trim().parse::<ipnet::IpNet>().map_err(|e| {
                ConfigError::Value(format!(
                    "{flag} {n:?}: {e} (expected a CIDR such as 10.0.0.0/8 or 127.0.0.1/32)"
                ))
            })
        })
        .collect()
}

/// The web server's origin: an http(s) URL with a host and nothing after it.
pub(super) fn check_server_url(text: &str) -> Result<Url, ConfigError> {
    let bad = |why: &str| {
        ConfigError::Value(format!(
            "--server-url {text:?} {why} (expected an origin such as http://127.0.0.1:80)"
        ))
    };
    let url = Url::parse(text.trim()).map_err(|e| bad(&format!("does not parse: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(bad("is not an http or https URL with a host"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            "must be an origin only: the base URL's path is added to every request",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "must not carry credentials: the judge asks as anyone would",
        ));
    }
    Ok(url)
}

pub(super) fn check_base_url(text: &str) -> Result<Url, ConfigError> {
    let err = |reason: &str| ConfigError::BaseUrl {
        url: text.to_string(),
        reason: reason.to_string(),
    };
    let mut url = Url::parse(text.trim()).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => err("is not absolute"),
        other => err(&format!("does not parse: {other}")),
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(err("is not an http or https URL with a host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(err("must not have a query or fragment"));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

pub(super) fn default_state_dir(docroot: &Path) -> Result<PathBuf, ConfigError> {
    let name = docroot
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into());
    let parent = docroot.parent().ok_or_else(|| ConfigError::Directory {
        what: "state",
        path: docroot.to_path_buf(),
        reason:
            "the docroot is the filesystem root, so there is no directory beside it; give --state"
                .into(),
    })?;
    Ok(parent.join(format!("{name}.webcoop")))
}

/// Creates the directory if needed (mode 0700 when `private`, 0755 for what the web server
/// must read) and proves it writable with a probe file.
pub(super) fn prepare_dir(
    what: &'static str,
    path: &Path,
    private: bool,
) -> Result<PathBuf, ConfigError> {
    let err = |reason: String| ConfigError::Directory {
        what,
        path: path.to_path_buf(),
        reason,
    };
    let created = if private {
        webcoop_daemon::private::create_private_dir(path)
    } else {
        webcoop_daemon::private::create_public_dir(path)
    };
    created.map_err(|e| err(format!("cannot be created: {e}")))?;
    let probe = path.join(format!(".webcoop-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| err(format!("is not writable: {e}")))?;
    let _ = std::fs::remove_file(&probe);
    path.canonicalize().map_err(|e| err(e.to_string()))
}

/// The public URL prefix of the service for a site at `base_url`.
pub(crate) fn default_public_url(base_url: &Url) -> Url {
    base_url
        .join(".well-known/webcoop/")
        .unwrap_or_else(|_| base_url.clone())
}

/// `value` of `flag`, refused unless within `range` (so never NaN), saying what it must be.
pub(super) fn within<T: PartialOrd + std::fmt::Display>(
    flag: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    must: &str,
) -> Result<T, ConfigError> {
    match range.contains(&value) {
        true => Ok(value),
        false => Err(ConfigError::Value(format!("{flag} {value}: {must}"))),
    }
}

/// The value of a setting that `AgentOptions::defaults` gives, or an error naming it.
pub(super) fn given<T>(value: Option<T>, key: &str) -> Result<T, ConfigError> {
    value.ok_or_else(|| ConfigError::Value(format!("{key} has no value and no default")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes(" 3 kb "), Ok(3 << 10));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("5 parsecs").is_err());
        assert!(parse_bytes("99999999999T").is_err());
    }
}

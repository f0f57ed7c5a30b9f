//! What the web server's configuration says of the agent's documents: the proxy of
//! `/.well-known/webcoop/` to the agent's service and what it says of the client, the media
//! types of `.rdf` and `.atom`, and the compression of the listings.

use super::Finding;
use crate::config::Config;
use crate::server_config::nginx;
use std::path::Path;

/// The media types of robots.rdf, the changes feed and sitemaps, which compression must cover.
const LISTING_TYPES: [&str; 3] = [
    "application/rdf+xml",
    "application/atom+xml",
    "application/xml",
];

/// The agent's service address as the proxy must name it.
fn service_addr(config: &Config) -> Option<String> {
    config.service.as_ref().map(|s| s.listen.to_string())
}

pub(super) fn check_nginx(config: &Config, file: &Path, out: &mut Vec<Finding>) {
    let name = file.display().to_string();
    let loaded = match nginx::load(file) {
        Ok(l) => l,
        Err(e) => {
            out.push(Finding::fix(
                format!("{name}: cannot be read as nginx configuration"),
                e,
            ));
            return;
        }
    };
    let every = nginx::all(&loaded.tree);
    check_types(&name, &every, out);
    check_gzip(&name, &every, out);
    if let Some(addr) = service_addr(config) {
        check_service_proxy(config, (&name, &addr), &every, out);
    }
}

/// Media types: a `types` block here or in what it includes (mime.types).
fn check_types(name: &str, every: &[&nginx::Directive], out: &mut Vec<Finding>) {
    let mut types: Vec<(String, String)> = Vec::new();
    for d in every {
        if d.name == "types" {
            for t in d.block.iter().flatten() {
                for ext in &t.args {
                    types.push((ext.clone(), t.name.clone()));
                }
            }
        }
    }
    for (ext, want) in [
        ("rdf", "application/rdf+xml"),
        ("atom", "application/atom+xml"),
    ] {
        match types.iter().find(|(e, _)| e == ext) {
            Some((_, t)) if t == want => {
                out.push(Finding::ok(format!("{name}: .{ext} is served as {want}")))
            }
            Some((_, t)) => out.push(Finding::fix(
                format!("{name}: .{ext} is served as {t}"),
                format!("map it to {want}: types {{ {want} {ext}; }}"),
            )),
            None => out.push(Finding::fix(
                format!("{name}: no media type for .{ext} (Debian's mime.types has none for .rdf)"),
                format!("add: types {{ {want} {ext}; }} before include mime.types"),
            )),
        }
    }
}

/// Compression of the listings.
fn check_gzip(name: &str, every: &[&nginx::Directive], out: &mut Vec<Finding>) {
    let gzip_on = every
        .iter()
        .any(|d| d.name == "gzip" && d.args.first().is_some_and(|a| a == "on"));
    let gzip_types: Vec<&String> = every
        .iter()
        .filter(|d| d.name == "gzip_types")
        .flat_map(|d| d.args.iter())
        .collect();
    let missing: Vec<&str> = LISTING_TYPES
        .into_iter()
        .filter(|t| !gzip_types.iter().any(|g| g == t || *g == "*"))
        .collect();
    if gzip_on && missing.is_empty() {
        out.push(Finding::ok(format!(
            "{name}: robots.rdf, the changes feed and sitemaps are gzip-compressed"
        )));
    } else {
        out.push(Finding::fix(
            format!(
                "{name}: the listings go out uncompressed ({})",
                if gzip_on {
                    format!("gzip_types lacks {}", missing.join(", "))
                } else {
                    "gzip is not on".to_string()
                }
            ),
            "add: gzip on; gzip_types application/rdf+xml application/atom+xml application/xml text/xml;",
        ));
    }
}

/// The proxy of the agent's service at `addr`, and what it says of the client.
fn check_service_proxy(
    config: &Config,
    (name, addr): (&str, &str),
    every: &[&nginx::Directive],
    out: &mut Vec<Finding>,
) {
    let locations: Vec<&nginx::Directive> = every
        .iter()
        .copied()
        .filter(|d| {
            d.name == "location" && d.args.iter().any(|a| a.contains("/.well-known/webcoop"))
        })
        .collect();
    let proxies: Vec<(&nginx::Directive, &nginx::Directive)> = locations
        .iter()
        .flat_map(|l| {
            l.block
                .iter()
                .flatten()
                .filter(|b| b.name == "proxy_pass")
                .map(move |p| (*l, p))
        })
        .collect();
    let to: Vec<&str> = proxies
        .iter()
        .filter_map(|(_, p)| p.args.first().map(String::as_str))
        .collect();
    let right = proxies.iter().find(|(_, p)| {
        p.args.first().is_some_and(|t| {
            t.trim_end_matches('/')
                .strip_prefix("http://")
                .is_some_and(|h| h == addr)
        })
    });
    match right {
        Some((location, _)) => {
            out.push(Finding::ok(format!(
                "{name}: /.well-known/webcoop/ is proxied to the agent at {addr}"
            )));
            check_forwarded_for(config, name, location, out);
        }
        None => {
            let found = if to.is_empty() {
                "not proxied".to_string()
            } else {
                format!("proxied to {}", to.join(", "))
            };
            out.push(Finding::fix(
                format!("{name}: /.well-known/webcoop/ is {found}, but the agent listens on {addr}"),
                format!("add: location ^~ /.well-known/webcoop/ {{ proxy_pass http://{addr}; proxy_set_header Host $http_host; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; }}"),
            ));
        }
    }
}

/// What the proxy to the agent says of the client: the hub's rate limits go by it when the
/// proxy is trusted, and a plain `proxy_pass` forwards whatever `X-Forwarded-For` the client
/// sent itself.
fn check_forwarded_for(
    config: &Config,
    name: &str,
    location: &nginx::Directive,
    out: &mut Vec<Finding>,
) {
    let sets = location.block.iter().flatten().find(|d| {
        d.name == "proxy_set_header"
            && d.args
                .first()
                .is_some_and(|h| h.eq_ignore_ascii_case("x-forwarded-for"))
    });
    let value = sets.and_then(|d| d.args.get(1)).map(String::as_str);
    let trusted = config
        .service
        .as_ref()
        .is_some_and(|s| !s.trusted_proxies.is_empty());
    match value {
        Some("$remote_addr") | Some("$proxy_add_x_forwarded_for") if trusted => {
            out.push(Finding::ok(format!(
                "{name}: the proxy names the client in X-Forwarded-For, and the agent trusts it (--trusted-proxy): the hub limits each client on its own"
            )))
        }
        Some("$remote_addr") | Some("$proxy_add_x_forwarded_for") => out.push(Finding::fix(
            format!(
                "{name}: the proxy names the client, but the agent does not trust it: every client shares the proxy's address in the hub's rate limits"
            ),
            "give the agent --trusted-proxy 127.0.0.1/32 (the proxy's address)",
        )),
        _ => out.push(Finding::fix(
            format!(
                "{name}: the proxy to the agent forwards the client's own X-Forwarded-For{}: a client could name any address to escape the hub's rate limits",
                value.map(|v| format!(" ({v})")).unwrap_or_default()
            ),
            "add to that location: proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        )),
    }
}

pub(super) fn check_apache(config: &Config, file: &Path, text: &str, out: &mut Vec<Finding>) {
    let name = file.display();
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let lower: Vec<String> = lines.iter().map(|l| l.to_ascii_lowercase()).collect();
    for (ext, want) in [
        ("rdf", "application/rdf+xml"),
        ("atom", "application/atom+xml"),
    ] {
        let overridden = lower.iter().find(|l| {
            l.starts_with("addtype ")
                && l.split_whitespace()
                    .skip(2)
                    .any(|e| e.trim_start_matches('.') == ext)
        });
        match overridden {
            Some(l) if !l.contains(want) => out.push(Finding::fix(
                format!("{name}: .{ext} is mapped elsewhere ({l})"),
                format!("AddType {want} .{ext}"),
            )),
            _ => out.push(Finding::ok(format!(
                "{name}: .{ext} is served as {want} (Apache's mime.types)"
            ))),
        }
    }
    let deflate: Vec<&String> = lower
        .iter()
        .filter(|l| l.starts_with("addoutputfilterbytype") && l.contains("deflate"))
        .collect();
    let missing: Vec<&str> = LISTING_TYPES
        .into_iter()
        .filter(|t| {
            !deflate
                .iter()
                .any(|l| l.split_whitespace().any(|w| w == *t))
        })
        .collect();
    if missing.is_empty() {
        out.push(Finding::ok(format!(
            "{name}: robots.rdf, the changes feed and sitemaps are compressed (mod_deflate)"
        )));
    } else {
        out.push(Finding::fix(
            format!("{name}: the listings go out uncompressed (no DEFLATE for {})", missing.join(", ")),
            "add: AddOutputFilterByType DEFLATE application/rdf+xml application/atom+xml application/xml text/xml",
        ));
    }
    if let Some(addr) = service_addr(config) {
        let right = lower.iter().any(|l| {
            l.starts_with("proxypass ")
                && l.contains("/.well-known/webcoop/")
                && l.contains(&format!("http://{addr}/"))
        });
        if right {
            out.push(Finding::ok(format!(
                "{name}: /.well-known/webcoop/ is proxied to the agent at {addr}"
            )));
            // mod_proxy_http appends the client's address to X-Forwarded-For unless told not to.
            let adds = !lower
                .iter()
                .any(|l| l.starts_with("proxyaddheaders ") && l.contains("off"));
            let trusted = config
                .service
                .as_ref()
                .is_some_and(|s| !s.trusted_proxies.is_empty());
            match (adds, trusted) {
                (true, true) => out.push(Finding::ok(format!(
                    "{name}: mod_proxy names the client in X-Forwarded-For, and the agent trusts it (--trusted-proxy)"
                ))),
                (true, false) => out.push(Finding::fix(
                    format!("{name}: mod_proxy names the client, but the agent does not trust it: every client shares the proxy's address in the hub's rate limits"),
                    "give the agent --trusted-proxy 127.0.0.1/32 (the proxy's address)",
                )),
                (false, _) => out.push(Finding::fix(
                    format!("{name}: ProxyAddHeaders Off forwards the client's own X-Forwarded-For"),
                    "remove ProxyAddHeaders Off",
                )),
            }
        } else {
            out.push(Finding::fix(
                format!("{name}: /.well-known/webcoop/ is not proxied to the agent at {addr}"),
                format!("add (with mod_proxy_http): ProxyPass /.well-known/webcoop/ http://{addr}/.well-known/webcoop/ and ProxyPreserveHost On"),
            ));
        }
    }
}

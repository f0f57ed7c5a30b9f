//! What the agent's console says it counted from the access logs (`/api/popularity`).

use std::collections::BTreeMap;
use webcoop::servers::http_get;

/// Each page's decayed visitors and published share, as the console shows them (none when the
/// console does not answer).
pub(crate) fn counted(console: std::net::SocketAddr) -> BTreeMap<String, (f64, Option<f64>)> {
    let Ok(r) = http_get(console, "/api/popularity", &[]) else {
        return BTreeMap::new();
    };
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap_or_default();
    v["pages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["path"].as_str().unwrap_or_default().to_string(),
                (
                    p["visitors"].as_f64().unwrap_or(-1.0),
                    p["published"].as_f64(),
                ),
            )
        })
        .collect()
}

//! What the processes of a fleet share: the settings a new crawl stores with its name, and the
//! check that a process joining it asks for nothing else.

use super::options::{CrawlArgs, CrawlOptions, PER_PROCESS, as_map, overlaid};
use super::{ConfigError, Settings, out_of_range, settings_from};

/// The settings every process of a fleet shares, as this one was given them (from the config
/// file and the flags): what a new crawl stores.
pub(crate) fn shared_settings(
    args: &CrawlArgs,
) -> Result<serde_json::Map<String, serde_json::Value>, ConfigError> {
    let (_, file) = overlaid(args)?;
    let mut map = as_map(&file);
    map.retain(|k, v| !PER_PROCESS.contains(&k.as_str()) && !v.is_null());
    Ok(map)
}

/// The settings of a process joining crawl `crawl`, whose stored shared settings are
/// `stored`: a shared setting given here with another value is an error that names it.
pub(crate) fn settings_joining(
    args: &CrawlArgs,
    crawl: &str,
    stored: &serde_json::Map<String, serde_json::Value>,
) -> Result<Settings, ConfigError> {
    let mine = shared_settings(args)?;
    for (key, value) in &mine {
        let theirs = stored.get(key);
        if theirs != Some(value) {
            let runs = theirs.map_or("the default".to_string(), |v| v.to_string());
            return Err(out_of_range(format!(
                "{key} is {value} here but crawl {crawl:?} runs with {runs}: leave it out to \
                 join the crawl as it is, or start a crawl of another name"
            )));
        }
    }
    let (a, file) = overlaid(args)?;
    let mut merged = as_map(&file);
    merged.retain(|k, _| PER_PROCESS.contains(&k.as_str()));
    merged.extend(stored.clone());
    let file: CrawlOptions = serde_json::from_value(serde_json::Value::Object(merged))
        .map_err(|e| out_of_range(format!("the settings stored with crawl {crawl:?}: {e}")))?;
    settings_from(&a, file)
}

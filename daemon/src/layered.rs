//! Settings stated once, as a struct of `Option`s that is at the same time the command line
//! (clap), the configuration file (serde) and, by [`crate::command_line`], the environment:
//! the layers merge key by key, generically, so no setting is listed a second time to be
//! merged, and `--help` shows the defaults from the one place they are written.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The settings as a JSON object by key (the file's key, which is the option's name with `_`).
pub fn as_map<T: Serialize>(settings: &T) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(settings) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// The settings of `over` that are numbers but not finite (`NaN`, `inf`): JSON has no such
/// numbers, so merging would take them for unset and give the default instead.
fn non_finite<T: Serialize>(over: &T) -> Vec<String> {
    match toml::Value::try_from(over) {
        Ok(toml::Value::Table(t)) => t
            .into_iter()
            .filter(|(_, v)| matches!(v, toml::Value::Float(f) if !f.is_finite()))
            .map(|(k, v)| format!("{k} = {v}"))
            .collect(),
        _ => Vec::new(),
    }
}

/// `over`'s settings, each unset one taken from `under`.
pub fn overlay<T: Serialize + DeserializeOwned>(over: &T, under: &T) -> Result<T, String> {
    // Both layers: a file's `nan` would otherwise become JSON's null, an unset setting,
    // and its default.
    if let Some(bad) = non_finite(over).into_iter().chain(non_finite(under)).next() {
        return Err(format!("{bad}: not a finite number"));
    }
    let mut merged = as_map(under);
    merged.extend(as_map(over).into_iter().filter(|(_, v)| !v.is_null()));
    serde_json::from_value(serde_json::Value::Object(merged)).map_err(|e| e.to_string())
}

/// `cmd` with each setting's default at the end of its help, as `defaults` has it (options
/// whose default is unset, or derived from another setting, keep their own words).
pub fn help_with_defaults<T: Serialize>(cmd: clap::Command, defaults: &T) -> clap::Command {
    let defaults = as_map(defaults);
    cmd.mut_args(|arg| {
        let shown = match defaults.get(arg.get_id().as_str()) {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Null) | None => return arg,
            Some(v) => v.to_string(),
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let help = format!("{} [default: {shown}]", help.trim_end_matches('.'));
        arg.help(help)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize, clap::Args)]
    struct Options {
        /// Depth.
        #[arg(long)]
        depth: Option<u32>,
        /// Name.
        #[arg(long)]
        name: Option<String>,
        /// Nets.
        #[arg(long)]
        nets: Option<Vec<String>>,
        /// Share.
        #[arg(long)]
        share: Option<f64>,
    }

    #[test]
    fn a_number_that_is_not_finite_is_refused_not_taken_for_unset() {
        let file = Options {
            share: Some(0.5),
            ..Options::default()
        };
        for bad in [f64::NAN, f64::INFINITY] {
            let given = Options {
                share: Some(bad),
                ..Options::default()
            };
            let e = overlay(&given, &file).unwrap_err();
            assert!(
                e.starts_with("share = ") && e.ends_with("not a finite number"),
                "{e}"
            );
        }
        let fine = Options {
            share: Some(0.25),
            ..Options::default()
        };
        assert_eq!(overlay(&fine, &file).unwrap().share, Some(0.25));
        // A file's own non-finite number, under a command line that does not set it.
        let bad_file = Options {
            share: Some(f64::NAN),
            ..Options::default()
        };
        let e = overlay(&Options::default(), &bad_file).unwrap_err();
        assert!(
            e.starts_with("share = ") && e.ends_with("not a finite number"),
            "{e}"
        );
    }

    #[test]
    fn each_unset_setting_comes_from_below() {
        let given = Options {
            depth: Some(3),
            ..Options::default()
        };
        let file = Options {
            depth: Some(9),
            name: Some("file".into()),
            nets: None,
            share: None,
        };
        let merged = overlay(&given, &file).unwrap();
        assert_eq!(
            merged,
            Options {
                depth: Some(3),
                name: Some("file".into()),
                nets: None,
                share: None,
            }
        );
    }

    #[test]
    fn help_states_the_defaults() {
        let cmd = <Options as clap::Args>::augment_args(clap::Command::new("t"));
        let defaults = Options {
            depth: Some(5),
            name: Some("x".into()),
            nets: None,
            share: None,
        };
        let cmd = help_with_defaults(cmd, &defaults);
        let help = |id: &str| {
            cmd.get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(|a| a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default()
        };
        assert_eq!(help("depth"), "Depth [default: 5]");
        assert_eq!(help("name"), "Name [default: x]");
        assert_eq!(help("nets"), "Nets", "no default, no change");
    }
}

//! One rule for both binaries' environment variables: every long option may also come from
//! the environment, named after it (`--base-url` is `WEBCOOP_BASE_URL` for the agent,
//! `--max-depth` is `WEBCOOP_CRAWL_MAX_DEPTH` for the crawler), so a systemd unit or a
//! container sets any setting the same way, and no option carries a name written by hand.
//! Precedence, in both: the command line, then the environment, then the configuration file,
//! then the default.

/// `cmd` (and its subcommands) with every long option readable from `PREFIX` + its name in
/// upper case with `_` for `-`; options named in `except` (as `--name`) and those that already
/// name a variable keep theirs.
pub fn with_environment(cmd: clap::Command, prefix: &str, except: &[&str]) -> clap::Command {
    let cmd = cmd.mut_args(|arg| {
        let Some(long) = arg.get_long().map(str::to_string) else {
            return arg;
        };
        let skip = arg.get_env().is_some()
            || except.iter().any(|e| e.trim_start_matches("--") == long)
            || matches!(long.as_str(), "help" | "version");
        if skip {
            arg
        } else {
            // `--help` names the variable, never its value: some hold secrets (a token).
            arg.env(format!("{prefix}{}", long.replace('-', "_").to_uppercase()))
                .hide_env_values(true)
        }
    });
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names.into_iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(name, |sub| with_environment(sub, prefix, except))
    })
}

#[cfg(test)]
mod tests {
    use super::with_environment;
    use clap::{Arg, ArgAction, Command};

    fn cli() -> Command {
        Command::new("t")
            .arg(Arg::new("base_url").long("base-url"))
            .arg(Arg::new("token").long("token").env("OWN_TOKEN"))
            .arg(Arg::new("once").long("once").action(ArgAction::SetTrue))
            .arg(Arg::new("secret").long("secret"))
            .subcommand(Command::new("crawl").arg(Arg::new("max_depth").long("max-depth")))
    }

    #[test]
    fn every_long_option_is_named_in_the_environment() {
        let cmd = with_environment(cli(), "T_", &["--secret"]);
        let envs: Vec<(String, Option<String>)> = cmd
            .get_arguments()
            .map(|a| {
                let env = a.get_env().map(|e| e.to_string_lossy().into_owned());
                (a.get_id().to_string(), env)
            })
            .collect();
        assert!(envs.contains(&("base_url".into(), Some("T_BASE_URL".into()))));
        assert!(
            envs.contains(&("token".into(), Some("OWN_TOKEN".into()))),
            "{envs:?}"
        );
        assert!(envs.contains(&("once".into(), Some("T_ONCE".into()))));
        assert!(envs.contains(&("secret".into(), None)), "excepted");
        let crawl = cmd.find_subcommand("crawl").unwrap();
        let depth = crawl
            .get_arguments()
            .find(|a| a.get_id() == "max_depth")
            .unwrap();
        assert_eq!(depth.get_env().unwrap(), "T_MAX_DEPTH");
    }
}

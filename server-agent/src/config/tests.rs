//! The agent's settings checked: flags, variables and the file layered, each refusal named.

use super::*;
use std::path::Path;

fn cli(docroot: &Path, base: &str) -> AgentOptions {
    AgentOptions {
        docroot: Some(docroot.to_path_buf()),
        base_url: Some(base.into()),
        ..AgentOptions::default()
    }
}

#[test]
fn startup_errors_name_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();

    let e = Config::from_options(cli(&tmp.path().join("missing"), "https://e.org/")).unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    let file = tmp.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let e = Config::from_options(cli(&file, "https://e.org/")).unwrap_err();
    assert!(e.to_string().contains("is not a directory"), "{e}");
    let e = Config::from_options(cli(&site, "/relative/")).unwrap_err();
    assert!(e.to_string().contains("is not absolute"), "{e}");
    let e = Config::from_options(cli(&site, "ftp://e.org/")).unwrap_err();
    assert!(e.to_string().contains("http or https"), "{e}");
    let e = Config::from_options(AgentOptions::default()).unwrap_err();
    assert!(e.to_string().contains("--docroot"), "{e}");

    let mut inside = cli(&site, "https://e.org/");
    inside.state = Some(site.join("state"));
    let e = Config::from_options(inside).unwrap_err();
    assert!(e.to_string().contains("inside the docroot"), "{e}");

    let ok = Config::from_options(cli(&site, "https://e.org/docs")).unwrap();
    assert_eq!(ok.base_url.as_str(), "https://e.org/docs/");
    assert_eq!(
        ok.state,
        tmp.path().canonicalize().unwrap().join("site.webcoop")
    );
    assert_eq!(ok.out, ok.docroot);
    assert_eq!(ok.versions, 5);
}

#[test]
fn snapshot_settings_out_of_range_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();
    let with = |f: &dyn Fn(&mut AgentOptions)| {
        let mut o = cli(&site, "https://e.org/");
        f(&mut o);
        Config::from_options(o)
    };
    for (set, named) in [
        (
            &(|o: &mut AgentOptions| o.snapshot_share = Some(1.5)) as &dyn Fn(&mut AgentOptions),
            "--snapshot-share 1.5",
        ),
        // JSON, through which settings are layered, has no NaN: named, not defaulted.
        (
            &|o| o.snapshot_share = Some(f64::NAN),
            "snapshot_share = nan: not a finite number",
        ),
        (&|o| o.snapshot_every = Some(10), "--snapshot-every 10"),
        (&|o| o.snapshot_level = Some(0), "--snapshot-level 0"),
        (&|o| o.snapshot_level = Some(22), "--snapshot-level 22"),
    ] {
        let e = with(set).unwrap_err().to_string();
        assert!(e.contains(named), "{named}: {e}");
    }
    // Out-of-range values of a feature turned off are not looked at.
    let off = with(&|o| {
        o.snapshots = Some(false);
        o.snapshot_level = Some(99);
    })
    .unwrap();
    assert!(off.snapshots.is_none());
    let dump = with(&|o| o.resource_dump = Some(true)).unwrap();
    assert!(dump.snapshots.is_some_and(|s| s.resource_dump) && dump.resourcesync);
}

#[test]
fn unwritable_state_dir_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir(&site).unwrap();
    let blocker = tmp.path().join("blocker");
    std::fs::write(&blocker, "a file where a directory should be").unwrap();
    let mut c = cli(&site, "https://e.org/");
    c.state = Some(blocker.join("state"));
    let e = Config::from_options(c).unwrap_err();
    assert!(e.to_string().starts_with("state directory"), "{e}");
}

#[test]
fn config_file_fills_what_the_command_line_leaves_out() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("www")).unwrap();
    let path = tmp.path().join("agent.toml");
    std::fs::write(
        &path,
        "docroot = \"www\"\nbase_url = \"https://file.example/\"\nexclude = [\"drafts/**\"]\nversions_budget = \"64MiB\"\nversions = 3\n",
    )
    .unwrap();
    let c = Config::from_cli(Cli {
        config: Some(path.clone()),
        options: AgentOptions {
            versions: Some(7),
            ..AgentOptions::default()
        },
        ..Cli::default()
    })
    .unwrap();
    assert_eq!(c.docroot, tmp.path().join("www").canonicalize().unwrap());
    assert_eq!(c.base_url.as_str(), "https://file.example/");
    assert_eq!(c.exclude, ["drafts/**"]);
    assert_eq!(c.versions_budget, 64 << 20);
    assert_eq!(c.versions, 7, "the command line wins over the file");

    std::fs::write(
        &path,
        "docroot = \"www\"\nbase_url = \"https://e/\"\nbogus = 1\n",
    )
    .unwrap();
    let e = Config::from_cli(Cli {
        config: Some(path),
        ..Cli::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("bogus"), "{e}");
}

#[test]
fn flags_the_environment_and_the_file_layer_in_that_order() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("www")).unwrap();
    let path = tmp.path().join("agent.toml");
    std::fs::write(
        &path,
        "docroot = \"www\"\nbase_url = \"https://file.example/\"\nonce = true\ninclude = [\"a/**\"]\n",
    )
    .unwrap();
    let parse = |args: &[&str]| {
        let cmd = webcoop_daemon::command_line::with_environment(
            <Cli as clap::CommandFactory>::command(),
            "WEBCOOP_TEST_LAYERS_",
            &[],
        );
        let matches = cmd.try_get_matches_from(args).unwrap();
        let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap();
        Config::from_cli(cli).unwrap()
    };
    let file = path.to_str().unwrap();
    let c = parse(&["agent", "--config", file]);
    assert!(c.once, "from the file");
    assert_eq!(c.include, ["a/**"]);
    assert_eq!(c.versions, 5, "the default");
    let c = parse(&[
        "agent",
        "--config",
        file,
        "--once=false",
        "--include",
        "b,c",
        "--include",
        "d",
    ]);
    assert!(
        !c.once,
        "the command line's false wins over the file's true"
    );
    assert_eq!(
        c.include,
        ["b", "c", "d"],
        "a list given replaces the file's"
    );
    // SAFETY: no other test reads this variable's name, which is this test's own.
    unsafe { std::env::set_var("WEBCOOP_TEST_LAYERS_VERSIONS", "9") };
    let c = parse(&["agent", "--config", file]);
    assert_eq!(
        c.versions, 9,
        "the environment over the file and the default"
    );
    let c = parse(&["agent", "--config", file, "--versions", "2"]);
    assert_eq!(c.versions, 2, "the command line over the environment");
    // The subcommand is not a boolean's value: `--once check` is refused by clap's
    // require_equals rather than read as `--once=check`.
    let cmd = <Cli as clap::CommandFactory>::command();
    let m = cmd
        .try_get_matches_from(["agent", "--once", "check"])
        .unwrap();
    let cli = <Cli as clap::FromArgMatches>::from_arg_matches(&m).unwrap();
    assert_eq!(cli.options.once, Some(true));
    assert!(matches!(cli.command, Some(AgentCommand::Check { .. })));
}

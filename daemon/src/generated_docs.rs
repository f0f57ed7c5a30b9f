//! The man pages and shell completions of a binary, generated from its clap definition when
//! the package is built, so they never drift from `--help`.

use std::process::ExitCode;

/// With `WEBCOOP_GENERATE=DIR` (for packaging): writes the man pages (`man1/`) and the bash,
/// zsh and fish completions (`completions/`) of `cmd` into DIR, and says how that went;
/// `None` when the variable is unset (the binary runs as usual).
pub fn generate_if_asked(cmd: clap::Command) -> Option<ExitCode> {
    let dir = std::path::PathBuf::from(std::env::var_os("WEBCOOP_GENERATE")?);
    let name = cmd.get_name().to_string();
    let written = (|| -> std::io::Result<()> {
        let man = dir.join("man1");
        std::fs::create_dir_all(&man)?;
        clap_mangen::generate_to(cmd.clone(), &man)?;
        let completions = dir.join("completions");
        std::fs::create_dir_all(&completions)?;
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            clap_complete::generate_to(shell, &mut cmd.clone(), &name, &completions)?;
        }
        Ok(())
    })();
    Some(match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: generating into {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    })
}

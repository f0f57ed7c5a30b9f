//! The code a crawl runs, laid out together: a symbol ordering file given to LLVM's linker.
//!
//! The kernel maps a binary's file pages in windows around each page a process touches, so
//! code that runs is resident with the cold code around it: a crawl touched about 3.5 MB of
//! the crawler's 16.8 MB of code and had 13 MiB of it resident. Listed first, in the order of
//! the list, the functions that ran in profiled crawls share a few megabytes of pages. The
//! list (`hot-text.txt` beside the package's manifest) is made by `scripts/hot-text.sh`; a name
//! the build does not have (a dependency updated, another toolchain) is passed over, so a
//! stale list costs memory, never a build.

use std::path::{Path, PathBuf};

/// The lld the Rust toolchain ships, as a `cc -fuse-ld=lld` finds it: `<dir>/ld.lld`.
pub(crate) fn toolchain_lld_dir(sysroot: &Path, host: &str) -> Option<PathBuf> {
    let dir = sysroot.join("lib/rustlib").join(host).join("bin/gcc-ld");
    dir.join("ld.lld").is_file().then_some(dir)
}

/// The linker arguments that lay out `list`'s functions first, with the toolchain's lld.
pub(crate) fn link_args(lld_dir: &Path, list: &Path) -> Vec<String> {
    vec![
        "-fuse-ld=lld".into(),
        format!("-B{}", lld_dir.display()),
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        // Names of other builds and of code since changed are expected; they are not errors.
        "-Wl,--no-warn-symbol-ordering".into(),
    ]
}

/// Orders this package's release binaries by its `hot-text.txt`, where the toolchain has lld.
pub(crate) fn order_hot_text() {
    println!("cargo:rerun-if-env-changed=WEBCOOP_NO_HOT_TEXT");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let (target, host) = (var("TARGET"), var("HOST"));
    if target != host
        || var("PROFILE") != "release"
        || std::env::var_os("WEBCOOP_NO_HOT_TEXT").is_some()
    {
        return;
    }
    let list = Path::new(&var("CARGO_MANIFEST_DIR")).join("hot-text.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    if !list.is_file() {
        return;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = std::process::Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    match sysroot.and_then(|s| toolchain_lld_dir(&s, &host)) {
        Some(dir) => {
            for arg in link_args(&dir, &list) {
                println!("cargo:rustc-link-arg-bins={arg}");
            }
        }
        None => println!("cargo:warning=the toolchain has no rust-lld; code not laid out by use"),
    }
}

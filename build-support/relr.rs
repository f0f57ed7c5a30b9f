//! Packed relative relocations for the release binaries, where the toolchain and C library
//! of the machine building them take them (GNU ld 2.38, LLVM 15, glibc 2.36 and later).
//!
//! A position-independent executable carries one 24-byte `R_X86_64_RELATIVE` entry per
//! pointer in its read-only data: 1.3 MB in the crawler, read at every start and resident for
//! the process's life. `-z pack-relative-relocs` writes them as a bitmap of a few kilobytes and
//! keeps the executable position-independent (address randomisation stays). A linker or
//! loader that does not know the format is found by building and running a probe, and then
//! nothing is asked of it.

use std::path::Path;
use std::process::Command;

/// The linker argument.
const FLAG: &str = "-Wl,-z,pack-relative-relocs";

/// Asks for packed relocations in this package's binaries when a probe linked with them runs.
pub(crate) fn pack_relative_relocs() {
    println!("cargo:rerun-if-env-changed=CC");
    println!("cargo:rerun-if-env-changed=WEBCOOP_NO_RELR");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    let optimised = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    // A cross build cannot run its probe; debug builds (the tests') are not worth its seconds.
    if target != host
        || !target.ends_with("-linux-gnu")
        || !optimised
        || std::env::var_os("WEBCOOP_NO_RELR").is_some()
    {
        return;
    }
    let Some(out) = std::env::var_os("OUT_DIR") else {
        return;
    };
    if probe_runs(Path::new(&out)) {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    } else {
        println!("cargo:warning=the linker or C library does not take {FLAG}; linked without it");
    }
}

/// Whether a position-independent program linked with packed relocations builds and runs.
fn probe_runs(out: &Path) -> bool {
    let source = out.join("relr_probe.c");
    let program = out.join("relr_probe");
    // A pointer in writable data is what needs a relative relocation.
    let text = "static int x = 7; int *p = &x; int main(void) { return *p == 7 ? 0 : 1; }\n";
    if std::fs::write(&source, text).is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(cc)
        .args(["-fPIE", "-pie", FLAG, "-o"])
        .arg(&program)
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    built && Command::new(&program).status().is_ok_and(|s| s.success())
}

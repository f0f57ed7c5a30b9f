//! The release build's layout of the code crawls run (`build-support/hot_text.rs`): the
//! linker arguments it gives put the listed functions first, in the list's order, take the
//! list's comments and pass over names the program does not have.

use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)] // order_hot_text is the build script's; the test takes its parts.
#[path = "../../build-support/hot_text.rs"]
mod hot_text;

/// Three functions that print where they were laid out, in the order they are defined.
const PROGRAM: &str = r#"
#[no_mangle] #[inline(never)] pub extern "C" fn webcoop_first(x: u64) -> u64 { x.wrapping_mul(31) ^ 7 }
#[no_mangle] #[inline(never)] pub extern "C" fn webcoop_second(x: u64) -> u64 { x.rotate_left(5) ^ 3 }
#[no_mangle] #[inline(never)] pub extern "C" fn webcoop_third(x: u64) -> u64 { x.wrapping_add(11) ^ 5 }
fn main() {
    let n = std::env::args().count() as u64;
    let f: [(&str, extern "C" fn(u64) -> u64); 3] =
        [("webcoop_first", webcoop_first), ("webcoop_second", webcoop_second), ("webcoop_third", webcoop_third)];
    for (name, func) in f {
        println!("{} {} {}", func as usize, name, std::hint::black_box(func)(n));
    }
}
"#;

fn rustc(args: &[&str]) -> String {
    let out = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("rustc {args:?}: {e}"));
    assert!(
        out.status.success(),
        "rustc {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The program's functions by address, built with `link_args`.
fn laid_out(dir: &Path, name: &str, link_args: &[String]) -> Vec<String> {
    let source = dir.join("main.rs");
    std::fs::write(&source, PROGRAM).expect("source");
    let program = dir.join(name);
    let mut args: Vec<String> = ["-O", "--edition", "2021", "-o"].map(String::from).to_vec();
    args.push(program.display().to_string());
    args.push(source.display().to_string());
    for a in link_args {
        args.push(format!("-Clink-arg={a}"));
    }
    rustc(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let out = Command::new(&program).output().expect("the program runs");
    assert!(out.status.success());
    let mut funcs: Vec<(usize, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.to_string()))
        })
        .collect();
    assert_eq!(funcs.len(), 3, "the program printed its three functions");
    funcs.sort();
    funcs.into_iter().map(|(_, n)| n).collect()
}

fn toolchain_lld() -> Option<PathBuf> {
    let sysroot = PathBuf::from(rustc(&["--print", "sysroot"]).trim());
    let info = rustc(&["-vV"]);
    let host = info
        .lines()
        .find_map(|l| l.strip_prefix("host: "))?
        .trim()
        .to_string();
    hot_text::toolchain_lld_dir(&sysroot, &host)
        .or_else(|| webcoop_testkit::missing("rust-lld", "the Rust toolchain's lld"))
}

#[test]
fn listed_functions_are_laid_out_first_in_the_lists_order() {
    let Some(lld) = toolchain_lld() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    // Twin: with an empty list the functions keep the layout the compiler gave them.
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").expect("list");
    let natural = laid_out(dir.path(), "natural", &hot_text::link_args(&lld, &empty));
    let mut wanted = natural.clone();
    wanted.reverse();
    let list = dir.path().join("hot-text.txt");
    let text = format!(
        "# a comment, as the made list's header\n{}\n_ZN7nowhere4gone17h0123456789abcdefE\n{}\n{}\n",
        wanted[0], wanted[1], wanted[2]
    );
    std::fs::write(&list, text).expect("list");
    let ordered = laid_out(dir.path(), "ordered", &hot_text::link_args(&lld, &list));
    assert_ne!(natural, wanted, "the test needs a layout the list changes");
    assert_eq!(ordered, wanted, "the listed functions in the list's order");
}

#[test]
fn a_toolchain_without_lld_is_not_given_its_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(hot_text::toolchain_lld_dir(dir.path(), "x86_64-unknown-linux-gnu").is_none());
    // Twin: a sysroot that has it is found.
    let gcc_ld = dir
        .path()
        .join("lib/rustlib/x86_64-unknown-linux-gnu/bin/gcc-ld");
    std::fs::create_dir_all(&gcc_ld).expect("dirs");
    std::fs::write(gcc_ld.join("ld.lld"), "").expect("file");
    assert_eq!(
        hot_text::toolchain_lld_dir(dir.path(), "x86_64-unknown-linux-gnu"),
        Some(gcc_ld)
    );
}

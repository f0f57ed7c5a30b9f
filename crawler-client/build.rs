//! The crawler's binaries are linked with packed relative relocations where they run.

#[path = "../build-support/relr.rs"]
mod relr;

fn main() {
    relr::pack_relative_relocs();
}

//! The crawler's binaries: packed relative relocations where they run, and the code a crawl
//! runs laid out together.

#[path = "../build-support/relr.rs"]
mod relr;

#[path = "../build-support/hot_text.rs"]
mod hot_text;

fn main() {
    relr::pack_relative_relocs();
    hot_text::order_hot_text();
}

#!/usr/bin/env bash
# Builds the Debian packages of both binaries into target/debian/: release binaries, their man
# pages and shell completions (generated from the clap definitions), then cargo-deb
# (installed first if missing).
#
# Usage: scripts/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-deb >/dev/null || cargo install cargo-deb --locked --version 3.8.0
cargo build --release -p webcoop-agent -p webcoop-crawler --bins
rm -rf target/package target/debian
WEBCOOP_GENERATE=target/package/agent target/release/webcoop-agent
WEBCOOP_GENERATE=target/package/crawl target/release/webcoop-crawl
gzip -9n target/package/*/man1/*.1
cargo deb --no-build --strip -p webcoop-agent
cargo deb --no-build --strip -p webcoop-crawler
ls target/debian/*.deb

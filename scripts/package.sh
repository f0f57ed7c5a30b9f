#!/usr/bin/env bash
# Builds the Debian packages of both binaries into target/debian/: the binaries, their man
# pages and shell completions (generated from the clap definitions), then cargo-deb
# (installed first if missing).
#
# Usage: scripts/package.sh            release binaries, as shipped
#        WEBCOOP_PACKAGE_PROFILE=dev scripts/package.sh
#                                     the debug binaries a test build left in target/debug
#                                     (what scripts/test.sh installs and checks: the packaging
#                                     is under test there, not the optimiser)
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${WEBCOOP_PACKAGE_PROFILE:-release}"
case "$profile" in
    release) dir=target/release ;;
    dev) dir=target/debug ;;
    *) echo "WEBCOOP_PACKAGE_PROFILE is release or dev, not $profile" >&2; exit 2 ;;
esac
command -v cargo-deb >/dev/null || cargo install cargo-deb --locked --version 3.8.0
# The whole workspace's features (as the tests' build has them, so that after a test build
# only the two binaries are linked), these two binaries.
cargo build --profile "$profile" --workspace --bin webcoop-agent --bin webcoop-crawl
rm -rf target/package target/debian
WEBCOOP_GENERATE=target/package/agent "$dir/webcoop-agent"
WEBCOOP_GENERATE=target/package/crawl "$dir/webcoop-crawl"
gzip -9n target/package/*/man1/*.1
cargo deb --no-build --strip --profile "$profile" -p webcoop-agent
cargo deb --no-build --strip --profile "$profile" -p webcoop-crawler
ls target/debian/*.deb

#!/usr/bin/env bash
# Crawl throughput, politeness off: webcoop-crawl, wget -r and Scrapy on the same test web of
# many hosts on loopback (examples/crawl_bench/). Installs Scrapy in target/benchvenv and
# wget if missing; prints a markdown table.
#
# Usage: scripts/crawl-bench.sh [--hosts 200] [--pages 500] [--page-bytes 2000] [--others-seconds 60]
#        scripts/crawl-bench.sh --docroot DIR [--seed-path /std/index.html] [--runs 3] [--signed 1]
#        (a real site on one host with nginx: CPU per page and peak RSS beside wget, wget2
#        saving files and wget2 keeping nothing in each round, with each round's ratios, and
#        the floor: the same pages through the same library calls on one thread; --signed 1: each
#        run beside the same crawl signing every request, Web Bot Auth, in alternating order)
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
command -v wget >/dev/null || missing+=(wget)
# wget2 runs beside a real site's crawl (--docroot), saving files and keeping nothing.
command -v wget2 >/dev/null || missing+=(wget2)
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
venv=target/benchvenv
if [ ! -x "$venv/bin/python" ] || ! cmp -s examples/bench/requirements.txt "$venv/.requirements"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r examples/bench/requirements.txt
    cp examples/bench/requirements.txt "$venv/.requirements"
fi
cargo run --release --example crawl_bench -- --scrapy-python "$venv/bin/python" "$@"

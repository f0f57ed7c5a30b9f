#!/usr/bin/env bash
# Remakes crawler-client/hot-text.txt, the functions crawls run, which the release build lays
# out together (build-support/hot_text.rs; docs/ARCHITECTURE.md, "Hot code together"): the
# crawler runs under callgrind through the web-shaped benchmark with failing and slow hosts
# and, where Debian's rust-doc is installed, through the Rust documentation on one host.
# The package's build is profiled (`cargo run --release -p webcoop-crawler`, the benchmarks');
# its functions are also written under the names a workspace-wide build gives them (other
# features, other hashes). About 15 minutes on 2 cores.
#
# Usage: scripts/hot-text.sh          remake the list
#        scripts/hot-text.sh --check  how much of the list the current release build has
set -euo pipefail
cd "$(dirname "$0")/.."
list=crawler-client/hot-text.txt
if [ "${1:-}" = "--check" ]; then
    cargo build --quiet --release -p webcoop-crawler --bins
    exec python3 scripts/hot_text.py check --list "$list" --binary target/release/webcoop-crawl
fi
command -v valgrind >/dev/null || { echo "hot-text.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --quiet --release -p webcoop-crawler --bins
cp target/release/webcoop-crawl "$work/crawl-package"
cargo build --quiet --release --workspace --bin webcoop-crawl
cp target/release/webcoop-crawl "$work/crawl-workspace"
cargo build --quiet --release --example crawl_bench
cat >"$work/profiled" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --demangle=no --dump-instr=no \
    --callgrind-out-file=$work/callgrind.%p.out $work/crawl-package "\$@"
EOF
chmod +x "$work/profiled"
export CRAWL_BENCH_BIN="$work/profiled"
echo "hot-text.sh: a web of 300 hosts with failing and slow ones, under callgrind" >&2
target/release/examples/crawl_bench --web 1 --hosts 300 --pages 20 --slow-share 0.05 \
    --failing-share 0.23 --one-host-pages 200 --one-host-after 0 >"$work/web.log" 2>&1 \
    || { tail -20 "$work/web.log" >&2; exit 1; }
if [ -d /usr/share/doc/rust-doc/html/std ]; then
    echo "hot-text.sh: the Rust documentation on one host, under callgrind" >&2
    target/release/examples/crawl_bench --docroot /usr/share/doc/rust-doc/html \
        --seed-path /std/index.html --runs 1 >"$work/docs.log" 2>&1 \
        || { tail -20 "$work/docs.log" >&2; exit 1; }
fi
# Valgrind's processor has no SHA extensions and no AVX-512: what a real one runs instead is
# found by sampling the same crawls run natively.
samples=()
if command -v perf >/dev/null; then
    cat >"$work/sampled" <<EOF
#!/bin/sh
exec perf record -q -F 4999 -o $work/perf.\$\$.data $work/crawl-package "\$@"
EOF
    chmod +x "$work/sampled"
    echo "hot-text.sh: the same crawls natively, sampled by perf" >&2
    CRAWL_BENCH_BIN="$work/sampled" target/release/examples/crawl_bench --web 1 --hosts 300 \
        --pages 20 --slow-share 0.05 --failing-share 0.23 --one-host-pages 200 \
        --one-host-after 0 >"$work/web-native.log" 2>&1 \
        || { tail -20 "$work/web-native.log" >&2; exit 1; }
    if [ -d /usr/share/doc/rust-doc/html/std ]; then
        CRAWL_BENCH_BIN="$work/sampled" target/release/examples/crawl_bench \
            --docroot /usr/share/doc/rust-doc/html --seed-path /std/index.html --runs 1 \
            >"$work/docs-native.log" 2>&1 || { tail -20 "$work/docs-native.log" >&2; exit 1; }
    fi
    for data in "$work"/perf.*.data; do
        perf script -i "$data" -F ip,sym --no-demangle 2>/dev/null \
            | awk 'NF > 1 { print $2 }' >>"$work/samples.txt" || true
    done
    samples=(--samples "$work/samples.txt")
fi
python3 scripts/hot_text.py make --out "$list" --binary "$work/crawl-package" \
    --binary "$work/crawl-workspace" "${samples[@]}" "$work"/callgrind.*.out

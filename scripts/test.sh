#!/usr/bin/env bash
# The whole test suite, every tier, from a fresh machine: installs what the tests run against
# (GNU patch, zstd, nginx, Apache with mod_php, PHP-FPM, WordPress with MariaDB, wget, redis-server, Chromium with
# chromedriver, the Python docs as a site to crawl, a Python venv with the reference clients and
# warcio), checks formatting, runs clippy with warnings as errors, runs every test of the
# workspace with the outside tools (`--features webcoop/outside-tools`), and builds, installs
# and removes the Debian packages; with WEBCOOP_FUZZ_SECONDS=N, fuzzes each target N seconds.
#
# Plain `cargo test` is the first tier: everything that needs no outside program.
#
# Usage: scripts/test.sh [extra cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# --- system packages -------------------------------------------------------------------------
missing=()
command -v patch >/dev/null || missing+=(patch)
command -v zstd >/dev/null || missing+=(zstd)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
# The agent asks the web server about every file: Apache with mod_php and mod_cgi, and
# PHP-FPM behind nginx, are judged in tests/hostile/ as they run in production.
command -v apache2 >/dev/null || [ -x /usr/sbin/apache2 ] || missing+=(apache2)
ls /usr/lib/apache2/modules/libphp*.so >/dev/null 2>&1 || missing+=(libapache2-mod-php)
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || missing+=(php-fpm)
command -v wget >/dev/null || missing+=(wget)
# A generated site for the agent's origin mode: Debian's WordPress on PHP-FPM and MariaDB.
[ -f /usr/share/wordpress/wp-settings.php ] || missing+=(wordpress)
[ -d /usr/share/wordpress/wp-content/themes/twentytwentythree ] || missing+=(wordpress-theme-twentytwentythree)
[ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
php -m 2>/dev/null | grep -qx mysqli || missing+=(php-mysql)
php -m 2>/dev/null | grep -qx SimpleXML || missing+=(php-xml)
# Feeds as a site generator writes them: Debian's Hugo builds a blog the crawler reads.
command -v hugo >/dev/null || missing+=(hugo)
# The shared frontier of a fleet: real redis-server processes (and a Redis Cluster) on loopback.
command -v redis-server >/dev/null || missing+=(redis-server)
# The consoles are looked at in a real browser: Debian's Chromium, headless, by its chromedriver.
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
# A real documentation site for the crawler to crawl (and wget to compare with).
[ -f /usr/share/doc/python3.11/html/index.html ] || missing+=(python3.11-doc)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
# The crawler's TLS tests make their sites' certificates with the openssl command.
command -v openssl >/dev/null || missing+=(openssl)
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    # Tests start their own servers on loopback; keep the packages' services from starting.
    policy=/usr/sbin/policy-rc.d
    added_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
        $SUDO chmod +x "$policy"
        added_policy=1
    fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
    [ -z "$added_policy" ] || $SUDO rm -f "$policy"
fi

# A failing step stops the script; what runs beside it stops with it.
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

# --- reference clients -----------------------------------------------------------------------
# Made beside the build (44 s of a clean run's start on 2026-12-01, before the build began);
# waited for before the tests.
venv=target/refvenv
stamp="$venv/.requirements"
venv_run=""
venv_log=$(mktemp)
if [ ! -x "$venv/bin/python" ] || ! cmp -s tests/reference/requirements.txt "$stamp"; then
    say "creating $venv with the Python reference clients, beside the build"
    mkdir -p target
    (
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check -r tests/reference/requirements.txt
        cp tests/reference/requirements.txt "$stamp"
    ) >"$venv_log" 2>&1 &
    venv_run=$!
fi
export WEBCOOP_PYTHON="$PWD/$venv/bin/python"
# Every test that needs one of the tools above fails instead of skipping when it is missing.
export WEBCOOP_REQUIRE_TOOLS=1

# A test that cannot run (a tool, a package or a privilege missing: the stranger families and
# the judge need root, tests/offline/disk_full.rs mounts tmpfs) fails under this command, and
# writes why here first; the count is printed at the end, and any fails the run.
skip_log=$(mktemp)
export WEBCOOP_SKIP_LOG="$skip_log"

# --- disk ------------------------------------------------------------------------------------
# A one-off build gains nothing from incremental caches, which roughly double target/.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# A build that runs out of disk dies deep inside the linker (a bus error, or "No space left on
# device" in the middle of rustc's output); before a clean build, say so plainly instead.
# target/ takes about 2.8 GB; the fuzz targets (built where nightly is installed) 2.6 GB more.
need_mb="${WEBCOOP_MIN_FREE_MB:-6000}"
mkdir -p target
free_mb=$(df -Pm target | awk 'NR == 2 { print $4 }')
if [ ! -d target/debug ] && [ -n "$free_mb" ] && [ "$free_mb" -lt "$need_mb" ]; then
    echo "error: only ${free_mb} MB free on the disk holding $PWD/target; the test build needs" \
        "about ${need_mb} MB (set WEBCOOP_MIN_FREE_MB to override)" >&2
    df -h target >&2
    exit 1
fi

# --- builds beside the checks and the tests ------------------------------------------------
# Coverage-guided fuzzing (nightly) runs when WEBCOOP_FUZZ_SECONDS asks for it: every seed and
# kept crash is replayed on stable by the tests (tests/offline/fuzz_corpora.rs), and a few
# seconds a target were CI's last four minutes on a clean clone: the targets' build, which
# compiles every dependency again with coverage, finished 2:48 after the tests.
# `WEBCOOP_FUZZ_SECONDS=10 scripts/test.sh` runs it as before; fuzz/README.md has long runs.
# The fuzz targets build from the start at the lowest priority: they take the CPU the lints and
# the test build leave while they link, and the tests, which mostly wait on servers and
# sockets. They build unoptimised (`--dev`, with debug assertions and overflow checks) and
# without the address sanitizer (`-s none`): the sanitizer made it 432 CPU-seconds against
# 346. Long runs keep the sanitizer and use -O (fuzz/README.md).
fuzz_secs="${WEBCOOP_FUZZ_SECONDS:-0}"
fuzz_build=""
fuzz_log=$(mktemp)
if [ "$fuzz_secs" != 0 ] && rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    command -v cargo-fuzz >/dev/null || cargo install --quiet --locked cargo-fuzz
    (
        nice -n 19 cargo +nightly fuzz build --dev -s none
        printf 'fuzz targets built at %d:%02d\n' $((SECONDS / 60)) $((SECONDS % 60))
    ) >"$fuzz_log" 2>&1 &
    fuzz_build=$!
fi

packages=""
if [ "${WEBCOOP_PACKAGES:-1}" != 0 ] && [ "$(id -u)" = 0 ] && command -v dpkg >/dev/null; then
    packages=1
fi
deb_install=""
deb_log=$(mktemp)
if [ -n "$packages" ] && ! command -v cargo-deb >/dev/null; then
    nice -n 19 cargo install --quiet cargo-deb --locked --version 3.8.0 >"$deb_log" 2>&1 &
    deb_install=$!
fi

# --- checks ----------------------------------------------------------------------------------
say "cargo fmt --check"
cargo fmt --all -- --check
# The lints run beside the build and the tests, at the lowest priority, in a target directory
# of their own (cargo locks one directory per command): on a clean clone they were 4:34 before
# the build began, and the tests leave a fifth of the CPU idle (vmstat, 2026-11-29) while they
# wait on servers. Their verdict is read after the tests.
say "cargo clippy --all-targets -D warnings (with and without the outside-tools tier), beside the rest"
lint_log=$(mktemp)
(
    export CARGO_TARGET_DIR="$PWD/target/lint"
    nice -n 19 cargo clippy --workspace --all-targets --features webcoop/outside-tools -- -D warnings
    # The whole workspace again, not `-p webcoop`: its features resolve as above, so only the
    # root package is checked again (`-p webcoop` checked 57 crates again in a clean run).
    nice -n 19 cargo clippy --workspace --all-targets -- -D warnings
    printf 'lints done at %d:%02d\n' $((SECONDS / 60)) $((SECONDS % 60))
) >"$lint_log" 2>&1 &
lint_run=$!
say "building the tests and the binaries they run"
tests=(cargo test --workspace --features webcoop/outside-tools)
# tests/tools/ runs beside every other test binary: it mostly waits on nginx, Redis, Chromium
# and pywb, and it is the longest (about 170 s). Every other test target is named here; a new
# one must be added (cargo has no way to leave one target out).
tools=("${tests[@]}" --test tools)
offline=("${tests[@]}" --test offline)
others=("${tests[@]}" --lib --bins --test hostile --test binary --test malformed --test round_trip)
unlisted=$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
known = {"tools", "offline", "hostile", "binary", "malformed", "round_trip"}
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if "test" in t["kind"] and t["name"] not in known:
            print(p["name"], t["name"])')
if [ -n "$unlisted" ]; then
    echo "error: scripts/test.sh does not run these test targets; add them to its lists: $unlisted" >&2
    exit 1
fi
# The binaries the tests (and the package step) run are built for the whole workspace
# (`--workspace --bins`, as testkit's workspace_bin asks for them) with the features the tests'
# build has, so that both share every dependency. A dev-dependency that turns a feature on
# breaks that silently, and a clean build then compiles most crates twice (7.5 minutes of
# CI's build on 2026-11-29): the features the two resolve must be the same
# (webcoop-daemon's Cargo.toml asks for the dev-dependencies' features).
features_of() { cargo tree -q --workspace --features webcoop/outside-tools --prefix none -f '{p} [{f}]' "$@"; }
if ! unified=$(python3 - <(features_of -e no-dev) <(features_of) <<'PY'
import sys
def load(path):
    seen = {}
    for line in open(path):
        line = line.strip().replace(" (*)", "")
        if line:
            name, _, features = line.partition(" [")
            seen.setdefault(name, set()).add(features.rstrip("]"))
    return seen
bins, tests = load(sys.argv[1]), load(sys.argv[2])
for name in sorted(bins.keys() & tests.keys()):
    if bins[name] != tests[name]:
        print(f"  {name}: binaries {sorted(bins[name])}, tests {sorted(tests[name])}")
PY
) || [ -n "$unified" ]; then
    echo "error: the dev-dependencies turn on features the binaries' build does not have;" \
        "ask for them in daemon/Cargo.toml (see its comment):" >&2
    echo "$unified" >&2
    exit 1
fi
"${tools[@]}" --no-run "$@"
"${others[@]}" --test offline --no-run "$@"
cargo build --workspace --bins

if [ -n "$venv_run" ] && ! wait "$venv_run"; then
    cat "$venv_log" >&2
    echo "error: the Python reference clients could not be installed in $venv (above)" >&2
    exit 1
fi
rm -f "$venv_log"

say "cargo test --workspace --features webcoop/outside-tools (tests/tools, then tests/offline, beside the rest)"
# tests/tools mostly waits on its servers: four at a time, it took 338 s instead of 473-559 s
# at two (2026-11-29), and the rest, two at a time (the cores), 484 s beside it. tests/offline
# follows it, so that the two streams end closer together. (Four once timed out the agent's
# 10,000-file burst: that was the watch loop taking a backlog one file at a time, since fixed.)
tools_log=$(mktemp)
{ RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}" "${tools[@]}" "$@" && "${offline[@]}" "$@"; } \
    >"$tools_log" 2>&1 &
tools_run=$!
if ! "${others[@]}" "$@"; then
    kill "$tools_run" 2>/dev/null || true
    exit 1
fi
if ! wait "$tools_run"; then
    cat "$tools_log"
    echo "error: tests/tools or tests/offline failed (above)" >&2
    exit 1
fi
cat "$tools_log"
skipped=$(grep -c . "$skip_log" || true)
say "tests that could not run here: $skipped"
if [ "$skipped" != 0 ]; then
    cat "$skip_log" >&2
    echo "error: $skipped tests could not run on this machine (above); the test command runs them all" >&2
    exit 1
fi

# --- Debian packages, beside the fuzzing ------------------------------------------------------
# Built, installed with dpkg on this machine, used, removed and purged (scripts/package-test.sh).
# Installing needs root; WEBCOOP_PACKAGES=0 skips it. They run while the lints and the fuzz
# targets finish: after the lints, they were a clean clone's last 62 s on 2026-11-29.
package_run=""
package_log=$(mktemp)
if [ -n "$packages" ]; then
    if [ -n "$deb_install" ] && ! wait "$deb_install"; then
        cat "$deb_log" >&2
        echo "error: cargo install cargo-deb failed" >&2
        exit 1
    fi
    WEBCOOP_PACKAGE_PROFILE=dev scripts/package-test.sh >"$package_log" 2>&1 &
    package_run=$!
else
    say "Debian packages not built and installed (needs root and dpkg; WEBCOOP_PACKAGES=0 skips)"
fi

# --- the lints' verdict ----------------------------------------------------------------------
if ! wait "$lint_run"; then
    cat "$lint_log" >&2
    echo "error: cargo clippy failed (above)" >&2
    exit 1
fi
tail -n 1 "$lint_log"
rm -f "$lint_log"

# --- fuzzing ---------------------------------------------------------------------------------
# The seeds and kept crashes were replayed on stable above (tests/offline/fuzz_corpora.rs).
# Where a nightly toolchain is installed, each target also runs coverage-guided for a short
# budget (WEBCOOP_FUZZ_SECONDS, 0 to skip) from its seeds and the grown corpus, a cache outside
# the repository (fuzz/README.md) that keeps what it adds; a crash fails the suite.
if [ -n "$fuzz_build" ]; then
    say "fuzzing each target for ${fuzz_secs} s (cargo +nightly fuzz)"
    if ! wait "$fuzz_build"; then
        cat "$fuzz_log" >&2
        echo "error: cargo +nightly fuzz build failed" >&2
        exit 1
    fi
    tail -n 1 "$fuzz_log"
    corpus="${WEBCOOP_FUZZ_CORPUS:-$HOME/.cache/webcoop/fuzz-corpus}"
    logs=$(mktemp -d)
    # Three targets at a time on the two cores: each run is a fixed time, so three share the
    # cores for 4 rounds instead of 6 (on 2026-11-26 two at a time were 74 s of CI's last
    # 2.5 minutes); each target gets about two thirds of the executions.
    fuzz_one() {
        local target=$1 work
        mkdir -p "$corpus/$target"
        # An unoptimised target takes about 10 ms an input: replaying a cache of thousands
        # would use the whole budget before fuzzing starts. Each run starts from the seeds and
        # a random 300 of the cache (linked into a work directory), and what it finds new is
        # moved into the cache.
        work="$logs/$target.corpus"
        mkdir -p "$work"
        find "$corpus/$target" -maxdepth 1 -type f -printf '%f\n' | shuf -n 300 |
            while read -r f; do ln -s "$corpus/$target/$f" "$work/$f"; done
        local dict=()
        [ -f "fuzz/dicts/$target.dict" ] && dict=(-dict="$PWD/fuzz/dicts/$target.dict")
        if ! cargo +nightly fuzz run --dev -s none "$target" "$work" "$PWD/fuzz/seeds/$target" -- \
            -max_total_time="$fuzz_secs" -rss_limit_mb=2048 -max_len=65536 "${dict[@]}" \
            >"$logs/$target.log" 2>&1; then
            tail -n 40 "$logs/$target.log" >&2
            echo "error: fuzz target $target failed; its input is in fuzz/artifacts/$target" >&2
            return 1
        fi
        find "$work" -maxdepth 1 -type f -exec mv -n -t "$corpus/$target" {} +
        grep -h '^Done' "$logs/$target.log" | sed "s/^/$target: /"
    }
    pending=()
    for target in $(cargo +nightly fuzz list); do
        fuzz_one "$target" &
        pending+=($!)
        if ((${#pending[@]} == 3)); then
            wait "${pending[0]}"
            pending=("${pending[@]:1}")
        fi
    done
    for p in "${pending[@]}"; do wait "$p"; done
    rm -rf "$logs"
else
    say "fuzz targets not run (WEBCOOP_FUZZ_SECONDS unset or 0, or no nightly toolchain; their seeds and kept crashes were replayed on stable)"
fi
rm -f "$fuzz_log"
# --- Debian packages, their end -------------------------------------------------------------
if [ -n "$package_run" ]; then
    if ! wait "$package_run"; then
        cat "$package_log" >&2
        echo "error: the Debian packages failed (above)" >&2
        exit 1
    fi
    say "Debian packages (of the debug binaries the tests ran)"
    cat "$package_log"
fi
rm -f "$deb_log" "$package_log"
say "all tests passed"

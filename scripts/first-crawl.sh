#!/usr/bin/env bash
# A crawler's first visit to a cooperating site, one page at a time against one snapshot:
# Debian's nginx (the shipped example server block, gzip on) serves a docroot beside
# webcoop-agent; webcoop-crawl crawls it once with cooperation off (every page requested,
# gzip'd) and once with its defaults (robots.rdf names a snapshot: one request for the site),
# interleaved over several rounds. Requests and bytes are counted from nginx's access log,
# wall and CPU time from the processes; every page of both crawls is compared with the docroot.
#
# Usage: scripts/first-crawl.sh [--docroot /usr/share/doc/python3.11/html] [--rounds 3]
#        [--polite | --adaptive]
# Politeness is off (4 connections, no delay: the crawl's CPU floor) unless --polite, which
# leaves the crawler's defaults (one connection, at least a second between requests), or
# --adaptive, which keeps only the response-time rule (one connection, five times the last
# response time between requests, no minimum): the politest crawl this fast server allows.
# A profiler may wrap each crawl: CRAWL_WRAP="perf record -g -o /tmp/first.%s.data" (the %s
# is the crawl's name).
# CRAWL_BIN=PATH runs another build of webcoop-crawl (the one built here by default).
set -euo pipefail
cd "$(dirname "$0")/.."
docroot=/usr/share/doc/python3.11/html
rounds=3
politeness=(--delay-min 0 --delay-factor 0 --per-host-connections 4)
while [ $# -gt 0 ]; do
    case "$1" in
        --polite) politeness=(); shift ;;
        --adaptive) politeness=(--delay-min 0); shift ;;
        --docroot) docroot="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v nginx >/dev/null || { echo "nginx is needed (apt-get install nginx-light)" >&2; exit 1; }
cargo build --release -q -p webcoop-agent -p webcoop-crawler
agent=target/release/webcoop-agent
crawl=${CRAWL_BIN:-target/release/webcoop-crawl}
work=$(mktemp -d)
trap 'kill $(cat "$work"/nginx.pid 2>/dev/null) $agent_pid 2>/dev/null || true; rm -rf "$work"' EXIT
# A copy, so the agent's documents land beside the pages and not in /usr/share; nginx's
# workers (another user) must be able to enter it.
chmod 755 "$work"
cp -rL "$docroot" "$work/www"
chmod -R a+rX "$work/www"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
agent_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sed -e "s|listen 80;|listen 127.0.0.1:$port;|" -e "s|root /var/www/example;|root $work/www;|" \
    -e "s|127.0.0.1:8081|127.0.0.1:$agent_port|" -e "s|https://www.example.org|http://127.0.0.1:$port|" \
    examples/nginx/site.conf > "$work/site.conf"
mkdir -p "$work/nginx"
cat > "$work/nginx.conf" <<EOF
daemon on; pid $work/nginx.pid; error_log $work/error.log warn; worker_processes 1;
events { worker_connections 256; }
http {
  log_format counted '\$request_method \$uri \$status \$bytes_sent \$request_length';
  access_log $work/access.log counted;
  default_type application/octet-stream;
  client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi; uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;
  include $work/site.conf;
}
EOF
nginx -c "$work/nginx.conf" -p "$work"
base="http://127.0.0.1:$port/"
"$agent" --docroot "$work/www" --state "$work/state" --base-url "$base" \
    --listen "127.0.0.1:$agent_port" --allow-callback-net 127.0.0.0/8 \
    --complete-listing 2> "$work/agent.log" &
agent_pid=$!
for i in $(seq 600); do
    # (grep reads all: with -q, curl would die of SIGPIPE and pipefail call it a failure)
    curl -s "${base}robots.rdf" | grep "wc:snapshot" >/dev/null && break
    if [ "$i" = 600 ]; then
        echo "no snapshot in robots.rdf after 5 minutes; the agent said:" >&2
        tail -5 "$work/agent.log" >&2
        exit 1
    fi
    sleep 0.5
done
grep -o 'snapshot published.*' "$work/agent.log" | tail -1
run() { # name, extra crawler options
    local name=$1; shift
    local out="$work/crawl-$name"
    rm -rf "$out"
    : > "$work/access.log"
    kill -USR1 "$(cat "$work/nginx.pid")"
    local wrap=()
    # shellcheck disable=SC2206 # the wrapper is words by design
    [ -n "${CRAWL_WRAP:-}" ] && wrap=($(printf "$CRAWL_WRAP" "$name"))
    /usr/bin/time -f "%e %U %S %M" -o "$work/$name.time" \
        "${wrap[@]}" "$crawl" crawl --seeds "$base" --out "$out" --allow-net 127.0.0.0/8 --progress quiet \
        ${politeness[@]+"${politeness[@]}"} "$@" > "$work/$name.out" 2> "$work/$name.err"
    sleep 0.2
    local requests bytes_out bytes_in pages
    requests=$(wc -l < "$work/access.log")
    bytes_out=$(awk '{s+=$4} END {print s+0}' "$work/access.log")
    bytes_in=$(awk '{s+=$5} END {print s+0}' "$work/access.log")
    "$crawl" copies --out "$out" > "$work/$name.copies" 2>/dev/null || true
    # Each copy held against the file nginx serves for its URL: SHA-256 entity tags.
    pages=$(python3 - "$work/$name.copies" "$work/www" "$base" <<'PY'
import base64, hashlib, os, sys, urllib.parse
copies, root, base = sys.argv[1:4]
exact = wrong = 0
for line in open(copies):
    if not line.startswith('"'):
        continue
    etag, url = line.split()[:2]
    path = urllib.parse.unquote(url[len(base):].split('?')[0]) or 'index.html'
    if path.endswith('/'):
        path += 'index.html'
    try:
        body = open(os.path.join(root, path), 'rb').read()
    except OSError:
        continue
    tag = '"' + base64.urlsafe_b64encode(hashlib.sha256(body).digest()).decode().rstrip('=') + '"'
    exact, wrong = (exact + 1, wrong) if tag == etag else (exact, wrong + 1)
print(f"{exact} exact, {wrong} wrong")
PY
)
    read -r wall user sys rss < "$work/$name.time"
    local archive
    archive=$(find "$out" -name '*.warc.gz' -printf '%s\n' | awk '{s+=$1} END {printf "%.1f", s/1e6}')
    printf '| %s | %s | %s | %s | %s | %.2f | %.2f | %d | %s |\n' "$name" "$requests" \
        "$bytes_out" "$bytes_in" "$pages" "$wall" "$(echo "$user + $sys" | bc)" "$((rss / 1024))" "$archive"
}
echo
echo "| crawl | requests | bytes sent by nginx | bytes of requests | pages held | wall s | CPU s | peak RSS MB | archive MB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$rounds"); do
    # Every file robots.rdf lists, each its own gzip'd request: the per-page first crawl of
    # the same resources the snapshot holds.
    [ -n "${SNAPSHOT_ONLY:-}" ] || run listed-per-page --coop-snapshots false
    run snapshot
    # The same with the archive's records stored, not deflated (--warc-gzip-level 0): the
    # first visit's floor without the crawl's own compression, at about four times the disk.
    run snapshot-stored --warc-gzip-level 0
    # Cooperation off: only what links reach (HTML pages), for scale.
    [ -n "${SNAPSHOT_ONLY:-}" ] || run links-only --coop off
done

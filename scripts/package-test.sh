#!/usr/bin/env bash
# Builds both Debian packages, installs them on this machine with dpkg, checks what a
# webmaster gets (binaries, man pages, completions, the webcoop user, /etc/webcoop/agent.toml,
# a unit systemd-analyze accepts), runs the installed agent from its /etc configuration over a
# temporary docroot, then removes and purges the packages and checks the docroot is untouched.
# Needs root (scripts/test.sh runs it when it is root).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\n== %s\n' "$*"; }
fail() { echo "package test: $*" >&2; exit 1; }

scripts/package.sh
agent_deb=$(ls target/debian/webcoop-agent_*.deb | tail -1)
crawl_deb=$(ls target/debian/webcoop-crawl_*.deb | tail -1)
say "installing $agent_deb $crawl_deb"
dpkg -i "$agent_deb" "$crawl_deb"
trap 'dpkg --purge webcoop-agent webcoop-crawl >/dev/null 2>&1 || true' EXIT

[ -x /usr/bin/webcoop-agent ] && [ -x /usr/bin/webcoop-crawl ] || fail "binaries not installed"
getent passwd webcoop >/dev/null || fail "no webcoop user"
[ "$(stat -c %U /var/lib/webcoop/public)" = webcoop ] || fail "/var/lib/webcoop/public not webcoop's"
grep -q '^docroot = ' /etc/webcoop/agent.toml || fail "no /etc/webcoop/agent.toml"
dpkg-query -W -f='${Conffiles}\n' webcoop-agent | grep -q /etc/webcoop/agent.toml || fail "agent.toml is not a conffile"
MANPAGER=cat man webcoop-agent 2>/dev/null | grep -q -- "--docroot" || fail "man webcoop-agent"
MANPAGER=cat man webcoop-crawl-crawl 2>/dev/null | grep -q -- "--console" || fail "man webcoop-crawl-crawl"
bash -c 'source /usr/share/bash-completion/completions/webcoop-agent && complete -p webcoop-agent' >/dev/null \
    || fail "bash completion"
[ -f /usr/share/zsh/vendor-completions/_webcoop-crawl ] || fail "zsh completion"
[ -f /usr/share/fish/vendor_completions.d/webcoop-crawl.fish ] || fail "fish completion"
[ -f /usr/share/doc/webcoop-agent/examples/nginx-site.conf ] || fail "nginx example"
[ -f /usr/share/doc/webcoop-agent/examples/apache-site.conf ] || fail "Apache example"
say "systemd-analyze verify"
systemd-analyze verify /lib/systemd/system/webcoop-agent.service
grep -q '^ProtectSystem=strict' /lib/systemd/system/webcoop-agent.service || fail "unit not hardened"

say "the installed agent, from its /etc configuration, over a temporary docroot"
www=$(mktemp -d)
printf '<p>home</p>\n' > "$www/index.html"
mkdir "$www/docs" && printf '<p>doc</p>\n' > "$www/docs/a.html"
before=$(cd "$www" && find . -printf '%p %s %T@ %m\n' | sort | sha256sum)
# The web server the agent asks about each file: a plain one over the docroot.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$www" "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; dpkg --purge webcoop-agent webcoop-crawl >/dev/null 2>&1 || true' EXIT
# Up to 30 s: it starts beside the fuzzing, on busy cores.
for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
/usr/bin/webcoop-agent --config /etc/webcoop/agent.toml --docroot "$www" \
    --server-url "http://127.0.0.1:$port" --once
grep -q 'index.html' /var/lib/webcoop/public/robots.rdf || fail "robots.rdf lacks index.html"
grep -q 'docs/a.html' /var/lib/webcoop/public/sitemap.xml || fail "sitemap.xml lacks docs/a.html"
[ "$(stat -c %a /var/lib/webcoop/agent)" = 700 ] || fail "the state directory is not 0700"
[ "$(stat -c %a /var/lib/webcoop/agent/agent.sqlite)" = 600 ] || fail "agent.sqlite is not 0600"
[ "$(stat -c %a /var/lib/webcoop/public/robots.rdf)" = 644 ] || fail "robots.rdf is not 0644"
out=$(/usr/bin/webcoop-agent --config /etc/webcoop/agent.toml --docroot "$www" \
    --server-url "http://127.0.0.1:$port" check || true)
echo "$out" | grep -q "robots.rdf is published" || fail "check did not run: $out"
[ "$(cd "$www" && find . -printf '%p %s %T@ %m\n' | sort | sha256sum)" = "$before" ] \
    || fail "the agent wrote into the docroot"

kill $server 2>/dev/null || true
say "removing and purging"
dpkg -r webcoop-agent webcoop-crawl
[ ! -e /usr/bin/webcoop-agent ] || fail "binary left after removal"
[ -f /etc/webcoop/agent.toml ] || fail "a removal (not a purge) keeps the configuration"
dpkg --purge webcoop-agent
trap - EXIT
[ ! -e /etc/webcoop/agent.toml ] || fail "purge left /etc/webcoop/agent.toml"
[ ! -e /var/lib/webcoop ] || fail "purge left /var/lib/webcoop"
[ "$(cd "$www" && find . -printf '%p %s %T@ %m\n' | sort | sha256sum)" = "$before" ] \
    || fail "removing the packages touched the docroot"
rm -rf "$www"
say "packages: all checks passed"

#!/usr/bin/env python3
"""Redis's CPU per host part of the fleet's batch script (`PUT` in
crawler-client/src/frontier/fleet/queue_scripts.rs), two versions side by side, each on a
scratch redis-server on loopback: 3,000 hosts of 10 queued URLs, then calls of 22 hosts each
(the mean of a crawl at 3,000 hosts) whose parts are empty, pay cash to one queued URL
(`deposit1`) or to two (`deposit`), or offer one new URL. Prints Redis's CPU (INFO cpu) per host part, in microseconds.

    scripts/put-script-cost.py OLD.rs:KEYS NEW.rs:KEYS [ROUNDS]

KEYS is the number of keys per host the version takes (6 up to layout 5, 5 from layout 6).
OLD.rs can be had with `git show REV:crawler-client/src/frontier/fleet/queue_scripts.rs`.
Needs redis-py (target/refvenv has it).
"""
import random
import re
import struct
import subprocess
import sys
import time

import redis

def script_of(path):
    src = open(path).read()
    macros = {}
    for name in ['rows_in_buckets', 'bulk', 'grouped', 'host_functions']:
        m = re.search(r'macro_rules! %s \{\s*\(\) => \{(.*?)\n    \};\n\}' % name, src, re.S)
        body = m.group(1)
        s = re.search(r'(r?)"(.*)"', body, re.S)
        macros[name] = s.group(2)
    m = re.search(r'pub\(super\) const PUT: &str = concat!\((.*?)\n\);', src, re.S)
    body = m.group(1)
    tail = re.search(r'host_functions!\(\),\s*r"(.*)"\s*$', body, re.S).group(1)
    return ''.join(macros[n] for n in ['rows_in_buckets', 'bulk', 'grouped', 'host_functions']) + tail

def fp(i):
    return struct.pack('>Q', (i * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)

def run(path, nkeys, port):
    srv = subprocess.Popen(['redis-server', '--bind', '127.0.0.1', '--port', str(port), '--save', '',
                            '--appendonly', 'no'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    r = redis.StrictRedis(port=port)
    sha = r.script_load(script_of(path))
    if nkeys == 6:
        names = ['queue', 'seq', 'rows', 'shape', 'taken', 'holders']
    else:
        names = ['queue', 'rows', 'shape', 'taken', 'holders']
    def keys(h):
        return ['{c:qg%d}:%d:%s' % (h % 32, h, k) for k in names]
    H, PER = 3000, 22
    def call(parts):
        ks, args = [], ['40']
        for h, urls, cash in parts:
            ks += keys(h)
            part = ['', '0', str(len(urls))]
            for (f, u) in urls:
                part += [f, '0.5', '3', '1', '0', u]
            part.append(str(len(cash)))
            for f in cash:
                part += [f, '0.01']
            args.append(str(len(part)))
            args += part
        return r.evalsha(sha, len(ks), *(ks + args))
    # Populate: 10 URLs per host.
    nxt = 0
    for g in range(0, H, PER):
        parts = []
        for h in range(g, min(H, g + PER)):
            urls = [(fp(h * 1000 + j), '/p/%d.html' % j) for j in range(10)]
            parts.append((h, urls, []))
        call(parts)
    def cpu():
        i = r.info('cpu')
        return i['used_cpu_user'] + i['used_cpu_sys']
    out = {}
    rnd = random.Random(1)
    for scenario in ['empty', 'deposit1', 'deposit', 'offer']:
        c0, t0 = cpu(), time.time()
        calls = 1500
        for c in range(calls):
            hosts = rnd.sample(range(H), PER)
            if scenario == 'empty':
                parts = [(h, [], []) for h in hosts]
            elif scenario == 'deposit1':
                parts = [(h, [], [fp(h * 1000 + rnd.randrange(10))]) for h in hosts]
            elif scenario == 'deposit':
                parts = [(h, [], [fp(h * 1000 + rnd.randrange(10)), fp(h * 1000 + rnd.randrange(10))]) for h in hosts]
            else:
                nxt += 1
                parts = [(h, [(fp(h * 1000 + 100 + nxt), '/n/%d.html' % nxt)], []) for h in hosts]
            call(parts)
        out[scenario] = (cpu() - c0) / (calls * PER) * 1e6
    srv.terminate()
    srv.wait()
    return out

def version(arg):
    path, _, keys = arg.rpartition(':')
    if keys not in ('5', '6'):
        sys.exit('%s: give PATH:KEYS, KEYS 5 or 6' % arg)
    return path, int(keys)

if len(sys.argv) < 3:
    sys.exit(__doc__)
(old, old_keys), (new, new_keys) = version(sys.argv[1]), version(sys.argv[2])
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
for rnd_ in range(rounds):
    a = run(old, old_keys, 7411)
    b = run(new, new_keys, 7412)
    print('round', rnd_, 'old', {k: round(v, 2) for k, v in a.items()}, 'new', {k: round(v, 2) for k, v in b.items()},
          'ratio', {k: round(b[k] / a[k], 2) for k in a})

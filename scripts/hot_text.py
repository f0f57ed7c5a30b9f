#!/usr/bin/env python3
"""The crawler's hot-text list: the functions profiled crawls ran, named as builds name them.

  hot_text.py make --out LIST --binary BIN [--binary BIN ...] [--samples FILE ...] PROFILE...
      PROFILE: callgrind outputs (--demangle=no). Every function that ran is listed, the
      ones that cost most first, under each name the given binaries give it. FILE: the
      symbols of a native run's samples, one a line (`perf script -F ip,sym --no-demangle`):
      code a processor runs where valgrind's does not (SHA extensions, wider vectors),
      listed after, most sampled first.
  hot_text.py check --list LIST --binary BIN
      How many of the list's functions BIN has, and the span they take in its code.

A name carries hashes that change with a build's dependency features and toolchain (the
`17h...E` of legacy mangling, v0's crate disambiguators, ThinLTO's `.llvm.N`); a function is
matched across builds by its name without them. See docs/ARCHITECTURE.md, "Hot code together".
"""

import argparse
import collections
import re
import subprocess
import sys

HEADER = """\
# The crawler's functions that profiled crawls ran, most costly first: the release build
# lays them out at the start of its code (build-support/hot_text.rs), so that a crawl's
# resident code is what it runs. Made by scripts/hot-text.sh; names a build lacks are
# passed over by the linker. Do not edit by hand.
"""


def normalise(name):
    """A function's name without the hashes that differ between builds."""
    name = re.sub(r"'\d+$", "", name)  # callgrind's marks of recursion
    name = re.sub(r"\.llvm\.\d+$", "", name)
    name = re.sub(r"17h[0-9a-f]{16}E$", "17hE", name)
    if name.startswith("_R"):
        # Crate disambiguators vary in length, and back-references are offsets past them.
        name = re.sub(r"Cs[0-9A-Za-z]{1,16}_", "Cs_", name)
        name = re.sub(r"B[0-9A-Za-z]{0,8}_", "B_", name)
    return name


def profile_costs(paths):
    """Self cost (instructions) of each function named in callgrind outputs."""
    cost = collections.Counter()
    for path in paths:
        names = {}
        current = None
        after_calls = False
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith(("fn=", "cfn=")):
                    m = re.match(r"c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
                    if not m:
                        continue
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    if line.startswith("fn="):
                        current = names.get(m.group(1))
                        cost[current] += 0
                    after_calls = False
                elif line.startswith("calls="):
                    after_calls = True
                elif line[:1].isdigit() or line[:1] in "+-*":
                    if after_calls:
                        after_calls = False  # the inclusive cost of a call, not the caller's own
                        continue
                    parts = line.split()
                    if current is not None and len(parts) > 1 and parts[1].isdigit():
                        cost[current] += int(parts[1])
    return cost


def binary_functions(path):
    """(address, size, name) of each function a binary defines."""
    out = subprocess.run(
        ["nm", "--defined-only", "-S", path], capture_output=True, text=True, check=True
    ).stdout
    funcs = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            funcs.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return funcs


def make(args):
    cost = profile_costs(args.profiles)
    builds = []
    sizes = {}
    for binary in args.binary:
        names, by_key = set(), collections.defaultdict(list)
        for _, size, name in binary_functions(binary):
            names.add(name)
            sizes.setdefault(name, size)
            # A generic function's instances differ only by the hash: one is told from
            # another by its size, which the same code has in a build of other features.
            by_key[(normalise(name), size)].append(name)
        builds.append((names, by_key))
    sampled = collections.Counter()
    for path in args.samples or ():
        with open(path, errors="replace") as f:
            sampled.update(line.strip() for line in f if line.strip())
    ranked = [n for n, _ in cost.most_common()]
    ranked += [n for n, _ in sampled.most_common() if n not in cost]
    listed, seen, found = [], set(), 0
    for name in ranked:
        name = re.sub(r"'\d+$", "", name)
        if name not in sizes:
            continue
        found += 1
        key = (normalise(name), sizes[name])
        for names, by_key in builds:
            for same in [name] if name in names else sorted(by_key.get(key, ())):
                if same not in seen:
                    seen.add(same)
                    listed.append(same)
    with open(args.out, "w") as f:
        f.write(HEADER)
        f.write("\n".join(listed) + "\n")
    print(
        f"{found} of {len(ranked)} profiled functions are the binaries' "
        f"({len(ranked) - len(cost)} sampled only); {len(listed)} names listed"
    )


def check(args):
    listed = set()
    with open(args.list) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                listed.add(line)
    funcs = [f for f in binary_functions(args.binary) if f[2] in listed]
    if not funcs:
        print(f"none of the {len(listed)} listed names is in {args.binary}: regenerate the list")
        return 1
    size = sum(f[1] for f in funcs)
    span = max(a + s for a, s, _ in funcs) - min(a for a, _, _ in funcs)
    print(
        f"{len(funcs)} listed functions in {args.binary}, {size / 1e6:.2f} MB of code "
        f"in a span of {span / 1e6:.2f} MB"
    )
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--binary", action="append", required=True)
    m.add_argument("--samples", action="append")
    m.add_argument("profiles", nargs="+")
    c = sub.add_parser("check")
    c.add_argument("--list", required=True)
    c.add_argument("--binary", required=True)
    args = parser.parse_args()
    if args.command == "make":
        make(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())

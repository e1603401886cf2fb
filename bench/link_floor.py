#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What the way localauthd is linked costs in memory (issue 29, figure 7's floor): the release
link of localauthd made again (SwiftPM's own link command, read from .build/release.yaml) as the
toolchain makes it (gold, PIE, `-export-dynamic` from the static Swift runtime's static-stdlib-args.lnk),
with `--no-export-dynamic`, that with lld and packed relative relocations (DT_RELR: as the Makefile links
it since round three), non-PIE, and non-PIE without the exports; each variant started idle (a first finger
enrolled on the virtual reader, one `list`, 1 s), RSS / PSS / private dirty and the executable's
own share, rounds alternating. The variants are measured, never installed: a non-PIE executable
gives up ASLR for the daemon's own code (docs/performance.md, "Round three").

Usage: /usr/bin/python3 bench/link_floor.py [--rounds 3]   (as root, after `make bench` built
the release binaries). Prints one line per variant and the sections that moved.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import common  # noqa: E402,F401 (pam/tests on the path)
from figures.memory_floor import idle_daemon, mappings  # noqa: E402

VARIANTS = (("PIE, -export-dynamic (the toolchain's)", []),
            ("PIE, --no-export-dynamic", ["-Xlinker", "--no-export-dynamic"]),
            ("PIE, --no-export-dynamic, lld, RELR (make's)", ["-Xlinker", "--no-export-dynamic", "-use-ld=lld",
                                                              "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"]),
            ("non-PIE, -export-dynamic", ["-Xclang-linker", "-no-pie"]),
            ("non-PIE, --no-export-dynamic", ["-Xclang-linker", "-no-pie", "-Xlinker",
                                              "--no-export-dynamic"]))


def link_args():
    """SwiftPM's link command for the release localauthd, from its build manifest, without the
    Makefile's --no-export-dynamic, lld and DT_RELR (each variant says its own)."""
    text = open(os.path.join(ROOT, ".build", "release.yaml")).read()
    at = text.index('  "C.localauthd-x86_64-unknown-linux-gnu-release.exe":\n')
    line = next(l for l in text[at:].splitlines() if l.strip().startswith("args:"))
    args = json.loads(line.split("args:", 1)[1])
    out = []
    for a in args:
        if a in ("--no-export-dynamic", "pack-relative-relocs") and out and out[-1] == "-Xlinker":
            out.pop()
            if a == "pack-relative-relocs" and out[-2:] == ["-Xlinker", "-z"]:
                del out[-2:]
            continue
        if a.startswith("-use-ld=") or a.startswith("-ld-path="):
            continue
        out.append(a)
    return out


def idle(binary, ctl):
    with idle_daemon(binary, ctl, "la-link-floor-") as pid:
        maps = mappings(pid)
        got = {k: sum(m.get(k, 0) for m in maps) for k in ("Rss", "Pss", "Private_Dirty")}
        got["exe Rss"] = sum(m.get("Rss", 0) for m in maps if m["path"] == binary)
        got["exe Private_Dirty"] = sum(m.get("Private_Dirty", 0) for m in maps if m["path"] == binary)
        return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    base = link_args()
    out_at = base.index("-o") + 1
    work = tempfile.mkdtemp(prefix="la-link-floor-")
    ctl = os.path.join(ROOT, ".build", "release", "localauthctl")
    try:
        binaries = []
        for i, (name, extra) in enumerate(VARIANTS):
            path = os.path.join(work, "localauthd-%d" % i)
            cmd = list(base)
            cmd[out_at] = path
            r = subprocess.run(cmd + extra, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("link %s: %s" % (name, r.stderr[-2000:]))
            binaries.append((name, path))
        os.sync()  # freshly linked pages are dirty in the page cache until written
        samples = {name: [] for name, _ in binaries}
        for i in range(args.rounds):
            for name, path in (binaries if i % 2 == 0 else binaries[::-1]):
                samples[name].append(idle(path, ctl))
        print("idle after a first finger and one list, median of %d (MB): RSS / PSS / private dirty;"
              " the executable's RSS / private dirty; .rela.dyn and .dynsym+.dynstr on disk" % args.rounds)
        for name, path in binaries:
            v = samples[name]
            med = {k: statistics.median(x[k] for x in v) / 1024 for k in v[0]}
            secs = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
            size = {}
            for line in secs.splitlines():
                f = line.replace("[ ", "[").split()
                if len(f) > 6 and f[1] in (".rela.dyn", ".dynsym", ".dynstr"):
                    size[f[1]] = int(f[5], 16)
            print("  %-36s %5.2f / %5.2f / %4.2f   exe %5.2f / %4.2f   rela %.2f, dynsym+str %.2f" % (
                name, med["Rss"], med["Pss"], med["Private_Dirty"], med["exe Rss"],
                med["exe Private_Dirty"], size.get(".rela.dyn", 0) / 2**20,
                (size.get(".dynsym", 0) + size.get(".dynstr", 0)) / 2**20))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

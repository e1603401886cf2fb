#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What FoundationEssentials costs the daemon (issue 29, figure 7's floor): the daemon's own code
imports no Foundation, yet the toolchain's FoundationEssentials, _FoundationCollections and
_FoundationCShims are linked into localauthd. This says who brings them and what they cost:

  1. the link: SwiftPM's release link of localauthd made again (its command, read from
     .build/release.yaml) with lld's --why-extract; each object of the toolchain's Foundation
     archives that the link takes, and which object outside them asked first, for which symbol;
  2. the binary: the loader's relative relocations (.relr.dyn: the pages it writes at every
     start) and the records the Swift runtime scans (conformance and type descriptors), by the
     module that owns them (`nm -S`, as figure 7's floor);
  3. the idle daemon (that link's binary; a first finger enrolled on the virtual reader, one
     `list`, 1 s, as bench/link_floor.py): RSS / PSS / private dirty, and the executable's resident
     and written bytes of Foundation's modules, median of --rounds, counted two ways: by the
     symbols on each page (pagemap x nm -S: figures/memory_floor.py, as figure 7's floor), and by
     the input section of the link map each byte comes from (every byte the archive member put
     in: descriptors, GOT entries, unwind tables' share, not only sized symbols);
  4. the same in the smallest program: two static executables linked as the Makefile links
     (--static-swift-stdlib, lld, DT_RELR, no exports), one printing an array, the other making
     the same array through FoundationEssentials' Data (and Data(base64Encoded:), as swift-crypto's
     PEM code does); started in alternation, --rounds each.

Usage: /usr/bin/python3 bench/foundation_cost.py [--rounds 5]   (as root, after
`swift build -c release $(STATIC_STDLIB) --product localauthd` and `--product localauthctl`).
"""
import argparse
import bisect
import collections
import json
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import common  # noqa: E402,F401 (pam/tests on the path)
from figures.memory_floor import (elf_layout, idle_daemon, executable_by_module, mappings, resident_pages,  # noqa: E402
                                  symbols)

FOUNDATION_ARCHIVES = ("libFoundationEssentials.a", "lib_FoundationCollections.a", "lib_FoundationCShims.a",
                       "libFoundationInternationalization.a", "libCoreFoundation.a", "libFoundation.a")
PAGE = 4096


def foundation(module):
    """Whether a module name (figures/memory_floor.py's) is one of the toolchain's Foundation."""
    return "Foundation" in module


def link_args():
    """SwiftPM's link command for the release localauthd, from its build manifest."""
    text = open(os.path.join(ROOT, ".build", "release.yaml")).read()
    at = text.index('  "C.localauthd-x86_64-unknown-linux-gnu-release.exe":\n')
    line = next(l for l in text[at:].splitlines() if l.strip().startswith("args:"))
    return json.loads(line.split("args:", 1)[1])


def why_extract(work):
    """(binary, link map, entry points, objects taken per archive): the release link made again
    into `work`."""
    args = link_args()
    binary = os.path.join(work, "localauthd")
    args[args.index("-o") + 1] = binary
    why, link_map = os.path.join(work, "why"), os.path.join(work, "map")
    r = subprocess.run(args + ["-Xlinker", "--why-extract=" + why, "-Xlinker", "-Map=" + link_map],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("link: " + r.stderr[-2000:])
    taken, entries = collections.Counter(), []
    for line in open(why).read().splitlines()[1:]:
        ref, extracted, symbol = line.split("\t")
        archive = re.search(r"([^/]+\.a)\(", extracted)
        if not archive or archive.group(1) not in FOUNDATION_ARCHIVES:
            continue
        taken[archive.group(1)] += 1
        ref_archive = re.search(r"([^/]+\.a)\(", ref)
        if not ref_archive or ref_archive.group(1) not in FOUNDATION_ARCHIVES:
            entries.append((ref.split("release/")[-1], extracted.split("/")[-1], symbol))
    os.sync()  # a freshly linked binary's pages are dirty in the page cache until written
    return binary, link_map, entries, taken


def origin(path):
    """Who put an input section in: one of the toolchain's Foundation archives, swift-crypto's
    BoringSSL or Swift, or another archive or target."""
    if "/CCryptoBoringSSL.build/" in path or "/CXKCP.build/" in path:
        return "swift-crypto: BoringSSL (C)"
    if re.search(r"/(Crypto|CryptoBoringWrapper|CCryptoBoringSSLShims|CXKCPShims)\.build/", path):
        return "swift-crypto: Swift"
    member = re.search(r"([^/]+\.a)\(", path)
    if member:
        return ("Foundation: " if member.group(1) in FOUNDATION_ARCHIVES else "") + member.group(1)
    target = re.search(r"/([^/]+)\.build/", path)
    return target.group(1) if target else os.path.basename(path)


def input_sections(link_map):
    """[(address, size, origin)] of every allocated input section lld's map lists, by address,
    none overlapping (merged sections, .eh_frame's among them, are listed at their input sizes:
    each keeps only the bytes no earlier one took)."""
    listed = []
    for line in open(link_map):
        f = line.split(None, 4)
        if (len(f) == 5 and line.startswith(" " * 9) and f[4].startswith("/") and ":(" in f[4]
                and re.match(r"^[0-9a-f]+$", f[0]) and int(f[0], 16) and int(f[2], 16)):
            listed.append((int(f[0], 16), int(f[2], 16), origin(f[4].split(":(")[0])))
    out, end = [], 0
    for a, size, who in sorted(listed):
        if a + size > end:
            out.append((max(a, end), a + size - max(a, end), who))
            end = a + size
    return out


def by_origin(pid, binary, sections):
    """The executable's resident and written bytes by the origin of the input section they hold."""
    real = os.path.realpath(binary)
    maps = [m for m in mappings(pid) if m["path"] == real]
    _, loads, _ = elf_layout(binary)
    first = min(maps, key=lambda m: m["start"])
    bias = first["start"] - loads[0][0] + loads[0][2] - first["offset"]
    starts = [s[0] for s in sections]
    resident, written = collections.Counter(), collections.Counter()
    for m in maps:
        for page, dirty in resident_pages(pid, m["start"], m["end"]):
            lo, hi = page - bias, page - bias + PAGE
            i = max(0, bisect.bisect_right(starts, lo) - 1)
            while i < len(sections) and sections[i][0] < hi:
                a, size, who = sections[i]
                i += 1
                n = min(a + size, hi) - max(a, lo)
                if n > 0:
                    resident[who] += n
                    written[who] += n if dirty else 0
    return resident, written


def section(binary, name):
    """(address, bytes) of one section of the ELF file."""
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]{16})\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and m.group(1) == name:
            with open(binary, "rb") as f:
                f.seek(int(m.group(3), 16))
                return int(m.group(2), 16), f.read(int(m.group(4), 16))
    return 0, b""


def relr_addresses(binary):
    """Every address the loader relocates (.relr.dyn: an address, then bitmaps of the 63 words
    after it)."""
    _, data = section(binary, ".relr.dyn")
    out, where = [], 0
    for (entry,) in struct.iter_unpack("<Q", data):
        if entry & 1 == 0:
            out.append(entry)
            where = entry + 8
        else:
            for i in range(63):
                if entry >> (i + 1) & 1:
                    out.append(where + i * 8)
            where += 63 * 8
    return out


def records(binary, name):
    """The descriptors a Swift metadata section's relative pointers name."""
    addr, data = section(binary, name)
    return [addr + i * 4 + (offset & ~1) for i, (offset,) in enumerate(struct.iter_unpack("<i", data))]


def by_owner(addresses, syms, starts):
    """(entries, pages, Foundation's entries, pages with any, pages with only Foundation's): each
    address to the module of the symbol it lies in, or of the symbol before it (a GOT entry or a
    local the symbol table does not size)."""
    pages = collections.defaultdict(set)
    theirs = 0
    for a in addresses:
        i = bisect.bisect_right(starts, a) - 1
        module = syms[i][2] if i >= 0 else "-"
        theirs += foundation(module)
        pages[a // PAGE].add(foundation(module))
    return (len(addresses), len(pages), theirs, sum(1 for p in pages.values() if True in p),
            sum(1 for p in pages.values() if p == {True}))


def idle(binary, ctl, sections):
    """The idle daemon's totals (kB), executable_by_module and by_origin."""
    with idle_daemon(binary, ctl, "la-foundation-") as pid:
        maps = mappings(pid)
        totals = {k: sum(m.get(k, 0) for m in maps) for k in ("Rss", "Pss", "Private_Dirty")}
        return totals, executable_by_module(pid, binary), by_origin(pid, binary, sections)


SMALL = {
    "without": "let bytes: [UInt8] = [1, 2, 3, 4]\n"
               "print(\"ready\", bytes.count, String(describing: bytes))\n",
    "with": "import FoundationEssentials\n"
            "let bytes = Data([1, 2, 3, 4])\n"
            "let decoded = Data(base64Encoded: \"AQID\") ?? Data()\n"
            "print(\"ready\", bytes.count, decoded.count, String(describing: [UInt8](bytes)))\n",
}


def small_programs(work):
    """The two smallest programs, linked as the Makefile's STATIC_STDLIB links."""
    flags = ["-O", "-static-stdlib", "-use-ld=lld", "-L" + os.path.join(ROOT, ".build", "static-cxx"),
             "-Xlinker", "--no-export-dynamic", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"]
    out = {}
    for name, body in SMALL.items():
        src = os.path.join(work, name + ".swift")
        with open(src, "w") as f:
            f.write("import Glibc\n" + body + "fflush(stdout)\npause()\n")
        out[name] = os.path.join(work, name)
        subprocess.run(["swiftc"] + flags + [src, "-o", out[name]], check=True, capture_output=True)
    os.sync()
    return out


def small_idle(binary):
    p = subprocess.Popen([binary], stdout=subprocess.PIPE, text=True)
    try:
        p.stdout.readline()
        time.sleep(0.2)
        maps = mappings(p.pid)
        totals = {k: sum(m.get(k, 0) for m in maps) for k in ("Rss", "Pss", "Private_Dirty")}
        return totals, executable_by_module(p.pid, binary)
    finally:
        p.kill()
        p.wait()


def summary(samples):
    """Medians (MB): RSS, PSS, private dirty; the executable's resident and written bytes; and
    those of Foundation's modules."""
    def med(f):
        return statistics.median(f(s) for s in samples) / 2**20

    def part(e, key, pick):
        return sum(b for m, b in e.get(key, {}).items() if pick(m))
    return (med(lambda s: s[0]["Rss"] * 1024), med(lambda s: s[0]["Pss"] * 1024),
            med(lambda s: s[0]["Private_Dirty"] * 1024),
            med(lambda s: part(s[1], "resident_bytes_by_module", lambda m: True)),
            med(lambda s: part(s[1], "written_bytes_by_module", lambda m: True)),
            med(lambda s: part(s[1], "resident_bytes_by_module", foundation)),
            med(lambda s: part(s[1], "written_bytes_by_module", foundation)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    ctl = os.path.join(ROOT, ".build", "release", "localauthctl")
    work = tempfile.mkdtemp(prefix="la-foundation-")
    try:
        daemon, link_map, entries, taken = why_extract(work)
        print("1. the link: objects taken from the toolchain's Foundation archives: %s" % ", ".join(
            "%s %d" % (a, n) for a, n in taken.most_common()))
        print("   asked for first from outside them (object -> archive member: symbol):")
        for ref, extracted, symbol in entries:
            print("     %s -> %s: %s" % (ref, extracted, symbol[:90]))

        syms = symbols(daemon)
        starts = [s[0] for s in syms]
        print("2. the binary (%s): entries, pages; Foundation's entries, pages holding any, pages "
              "holding only theirs" % daemon)
        for what, addresses in (("loader's relative relocations", relr_addresses(daemon)),
                                ("conformance descriptors", records(daemon, "swift5_protocol_conformances")),
                                ("type descriptors", records(daemon, "swift5_type_metadata"))):
            n, pages, theirs, anyp, only = by_owner(addresses, syms, starts)
            print("   %-30s %6d on %3d pages; %5d (%4.1f %%) on %3d pages, %3d only theirs" % (
                what, n, pages, theirs, 100.0 * theirs / n, anyp, only))

        sections = input_sections(link_map)
        samples = [idle(daemon, ctl, sections) for _ in range(args.rounds)]
        print("3. the idle daemon, median of %d (MB): RSS / PSS / private dirty; the executable "
              "resident / written; Foundation's modules resident / written" % args.rounds)
        print("   %.2f / %.2f / %.2f   exe %.2f / %.2f   Foundation %.3f / %.3f" % summary(samples))
        mods = collections.defaultdict(list)
        for _, e, _ in samples:
            for m, b in e["resident_bytes_by_module"].items():
                if foundation(m):
                    mods[m].append((b, e["written_bytes_by_module"].get(m, 0)))
        for m, v in sorted(mods.items()):
            print("     %-44s resident %.3f (%.3f-%.3f), written %.3f" % (
                m, statistics.median(x[0] for x in v) / 2**20, min(x[0] for x in v) / 2**20,
                max(x[0] for x in v) / 2**20, statistics.median(x[1] for x in v) / 2**20))
        print("   by the link map's input sections (MB resident / written, median): every origin "
              "above 0.1 MB, Foundation's archives and swift-crypto")
        origins = collections.Counter()
        for _, _, (resident, _) in samples:
            origins.update(resident)

        def med(who, k):
            return statistics.median(s[2][k].get(who, 0) for s in samples) / 2**20
        for who in sorted(origins, key=lambda w: -med(w, 0)):
            if med(who, 0) >= 0.1 or who.startswith(("Foundation", "swift-crypto")):
                print("     %-44s %.3f / %.3f" % (who, med(who, 0), med(who, 1)))
        for group in ("Foundation", "swift-crypto"):
            print("     %-44s %.3f / %.3f" % (group + ", together", *(statistics.median(
                sum(b for w, b in s[2][k].items() if w.startswith(group)) for s in samples) / 2**20
                for k in (0, 1))))

        programs = small_programs(work)
        small = {name: [] for name in programs}
        order = list(programs)
        for i in range(args.rounds * 2):
            for name in (order if i % 2 == 0 else order[::-1]):
                small[name].append(small_idle(programs[name]))
        print("4. the smallest program, %d starts each alternated (MB): RSS / PSS / private dirty; "
              "the executable resident / written; Foundation's modules resident / written" % (args.rounds * 2))
        for name in order:
            print("   %-8s %.2f / %.2f / %.2f   exe %.2f / %.2f   Foundation %.3f / %.3f   (%.1f MB on disk)" % (
                (name,) + summary(small[name]) + (os.path.getsize(programs[name]) / 2**20,)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

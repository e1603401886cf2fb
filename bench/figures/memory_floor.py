# SPDX-License-Identifier: Apache-2.0
"""Figure 7's floor (issue 29): what the idle daemon's resident memory is made of, so that the
memory goals it misses can be argued with numbers.

Two readings of the idle daemon (after figure 7's "idle after start"), and fprintd's beside it:
  - /proc/PID/smaps per mapping, summed by what is mapped (our executable, each library,
    the heap, anonymous memory, stacks): RSS, PSS, private dirty, private clean, shared.
  - Our static executable page by page: /proc/PID/pagemap says which of its pages are resident,
    and which of those are the process's own copy (written: the loader's relocations, the runtime's
    state; bit 61 clear in a file mapping); each resident page's bytes go to the symbols that lie
    on it (`nm -S` of the same binary)
    grouped by the module their mangled name names (Swift: `$s<len><module>`; C++:
    `_ZN<len><namespace>`; C: the library's prefix, CCryptoBoringSSL_, swift_, c_nio_ ...), and
    what no symbol covers to the ELF section it lies in (.eh_frame, .rela.dyn, swift5 metadata).
    The same symbol sizes summed over the whole binary say what each dependency weighs on disk.
"""
import bisect
import contextlib
import os
import shutil
import re
import struct
import subprocess
import sys
import tempfile
import time

from common import log

PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT = 1 << 63
# Set for a page of the file (or shared anonymous memory); clear for a private copy a write made.
FILE_PAGE = 1 << 61

# C symbols by the prefix their library gives them, first match wins (checked in order).
C_PREFIXES = (
    ("CCryptoBoringSSL", "BoringSSL (swift-crypto)"), ("c_nio_", "SwiftNIO (C shims)"),
    ("CNIO", "SwiftNIO (C shims)"), ("swift_", "Swift runtime"), ("_swift_", "Swift runtime"),
    ("__swift", "Swift runtime"), ("swift::", "Swift runtime"), ("_ZN5swift", "Swift runtime"),
    ("_ZNSt", "libstdc++"), ("_ZSt", "libstdc++"), ("_ZNKSt", "libstdc++"), ("__cxa", "libstdc++"),
    ("__gxx", "libstdc++"), ("_ZN9__gnu_cxx", "libstdc++"), ("_ZN10__cxxabiv1", "libstdc++"),
    ("_Unwind", "libgcc"), ("__gcc", "libgcc"), ("_ZN4llvm", "Swift runtime (LLVM support)"),
    ("_ZN6icu_", "ICU"), ("u_", "ICU"), ("ucol_", "ICU"), ("ubrk_", "ICU"), ("uloc_", "ICU"),
    ("udat_", "ICU"), ("ures_", "ICU"), ("utext_", "ICU"), ("unum_", "ICU"), ("icudt", "ICU data"),
    # FoundationEssentials' Unicode tables (BuiltInUnicodeScalarSet, from _FoundationCShims'
    # headers) keep CoreFoundation's names; CoreFoundation itself comes only with full Foundation.
    ("__CFUniChar", "FoundationEssentials (__CFUniChar tables)"),
    ("_CF", "CoreFoundation"), ("CF", "CoreFoundation"), ("__CF", "CoreFoundation"),
    ("_dispatch", "libdispatch"), ("dispatch_", "libdispatch"), ("_ZN8_Block", "BlocksRuntime"),
    ("_Block", "BlocksRuntime"), ("la_", "ours (C shims)"), ("shim_", "ours (C shims)"),
)


def module_of(name):
    """The module or library a symbol belongs to, from its (mangled) name."""
    if name.startswith("$s") or name.startswith("_$s"):
        rest = name[2:] if name.startswith("$s") else name[3:]
        m = re.match(r"(\d+)", rest)
        if m:
            n = int(m.group(1))
            module = rest[len(m.group(1)):len(m.group(1)) + n]
            return "Swift: " + module
        if rest[:1] in ("S", "s"):
            return "Swift: Swift (standard library)"
        return "Swift: (other)"
    for prefix, lib in C_PREFIXES:
        if name.startswith(prefix):
            return lib
    m = re.match(r"_ZN?K?L?(\d+)", name)
    if m:
        n = int(m.group(1))
        start = name.index(m.group(1)) + len(m.group(1))
        return "C++: " + name[start:start + n]
    return "C (other)"



@contextlib.contextmanager
def idle_daemon(binary, ctl, prefix):
    """A daemon started by hand on a temporary socket and state directory with the virtual reader,
    one finger enrolled and one `list` answered, then idle 1 s: its pid (bench/foundation_cost.py,
    bench/link_floor.py). Stopped and its directory removed afterwards."""
    import seat
    d = tempfile.mkdtemp(prefix=prefix)
    sock = os.path.join(d, "socket")
    p = subprocess.Popen([binary, "--socket", sock, "--state-dir", os.path.join(d, "state"),
                          "--virtual-reader"], stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(d, "log"), "w"), env=seat.env())
    env = dict(os.environ, LOCALAUTHD_SOCKET=sock)
    try:
        for _ in range(200):
            if subprocess.run([ctl, "status"], env=env, capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        enrol = subprocess.Popen([ctl, "enroll", "--user", "root", "--finger", "right-index-finger"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(5):
            subprocess.run([ctl, "simulate", "touch", "f1", "--quiet"], env=env, capture_output=True)
        if enrol.wait(30) != 0:
            sys.exit("%s: the enrolment failed" % binary)
        subprocess.run([ctl, "list", "--user", "root"], env=env, capture_output=True, check=True)
        time.sleep(1)
        yield p.pid
    finally:
        p.terminate()
        p.wait(10)
        shutil.rmtree(d, ignore_errors=True)

def mappings(pid):
    """/proc/PID/smaps as a list of dicts: start, end, perms, offset, path and the kB fields."""
    out, cur = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                start, end = (int(x, 16) for x in head[0].split("-"))
                cur = {"start": start, "end": end, "perms": head[1], "offset": int(head[2], 16),
                       "path": " ".join(head[5:]) if len(head) > 5 else ""}
                out.append(cur)
            elif cur is not None and len(head) >= 2 and head[0].endswith(":") and head[1].isdigit():
                cur[head[0][:-1]] = int(head[1])
    return out


FIELDS = ("Rss", "Pss", "Private_Dirty", "Private_Clean", "Shared_Clean", "Shared_Dirty")


def by_mapping(pid, exe):
    """smaps summed by what is mapped: name -> {field: kB}, largest RSS first."""
    groups = {}
    for m in mappings(pid):
        path = m["path"]
        if exe and path and (path == exe or os.path.basename(path) == os.path.basename(exe)):
            name = "our executable (%s)" % os.path.basename(exe)
        elif path.startswith("["):
            name = "[stack]" if path.startswith("[stack") else path
        elif path:
            name = os.path.basename(path)
        else:
            # Anonymous: thread stacks and their guards are small rw-p mappings; malloc's arenas
            # and the Swift allocations they hold make the rest.
            name = "anonymous"
        g = groups.setdefault(name, dict.fromkeys(FIELDS, 0))
        for k in FIELDS:
            g[k] += m.get(k, 0)
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]["Rss"]))


def elf_layout(binary):
    """(is PIE, [(vaddr, memsz, offset)] of the LOAD segments, [(addr, size, name)] of sections)."""
    lh = subprocess.run(["readelf", "-lhW", binary], capture_output=True, text=True,
                        check=True).stdout
    pie = "DYN (" in lh
    loads = []
    for line in lh.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            loads.append((int(f[2], 16), int(f[5], 16), int(f[1], 16)))
    sections = []
    sh = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True,
                        check=True).stdout
    for line in sh.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]{16})\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and int(m.group(2), 16):
            sections.append((int(m.group(2), 16), int(m.group(3), 16), m.group(1)))
    return pie, loads, sorted(sections)


def symbols(binary):
    """[(vaddr, size, module)] of every sized symbol (nm -S), sorted by address, one per address
    (aliases dropped). A Swift symbol whose name begins with a standard-library type (`$sS`,
    `$ss`: a specialisation of Array, Dictionary ... or a witness) goes to the first module of
    the binary it names further on, when it names one: that module's types are why the code
    exists."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    raw = {}
    for line in out.splitlines():
        f = line.split(" ", 3)
        if len(f) == 4:
            try:
                addr, size = int(f[0], 16), int(f[1], 16)
            except ValueError:
                continue
            if size and size > raw.get(addr, (0, ""))[0]:
                raw[addr] = (size, f[3])
    modules = {module_of(name) for _, name in raw.values()}
    known = {m[len("Swift: "):] for m in modules if m.startswith("Swift: ")} - {
        "Swift (standard library)", "(other)"}
    syms = []
    for addr, (size, name) in raw.items():
        module = module_of(name)
        if module == "Swift: Swift (standard library)":
            for m in re.finditer(r"(\d+)([A-Za-z_]\w*)", name[3:]):
                candidate = m.group(2)[:int(m.group(1))]
                if candidate in known:
                    module = "Swift: " + candidate
                    break
        syms.append((addr, size, module))
    syms.sort()
    return syms


def resident_pages(pid, start, end):
    """(address, written) of each page in [start, end) that is in the process's page table;
    written: the page is the process's own copy, no longer the file's."""
    n = (end - start) // PAGE
    with open("/proc/%d/pagemap" % pid, "rb") as f:
        f.seek(start // PAGE * 8)
        data = f.read(n * 8)
    return [(start + i * PAGE, not e & FILE_PAGE)
            for i, (e,) in enumerate(struct.iter_unpack("<Q", data)) if e & PRESENT]


def gap(resident, sections, sec_starts, lo, hi, written=None):
    """Bytes [lo, hi) that no symbol covers: to the ELF section lo lies in."""
    j = bisect.bisect_right(sec_starts, lo) - 1
    sec = sections[j] if j >= 0 and sections[j][0] + sections[j][1] > lo else None
    name = "[section %s, no symbol]" % sec[2] if sec else "[between sections]"
    resident[name] = resident.get(name, 0) + hi - lo
    if written is not None:
        written[name] = written.get(name, 0) + hi - lo


def same_layout(a, b):
    """Whether two ELF files place every allocated section at the same address with the same size
    (a binary and its stripped copy: strip moves no allocated section)."""
    return elf_layout(a)[1:] == elf_layout(b)[1:]


def executable_by_module(pid, binary, mapped_as=None):
    """Our executable's resident bytes by module (and section, where no symbol lies), and every
    symbol's size by module over the whole binary (what each dependency weighs on disk).
    mapped_as: the path the process maps it by, when that is not `binary` (a booted system's
    installed copy, stripped: `binary` is then the unstripped build it came from, checked by
    same_layout)."""
    real = mapped_as or os.path.realpath(binary)
    maps = [m for m in mappings(pid) if m["path"] and (m["path"] == real or (
        not mapped_as and os.path.realpath(m["path"]) == real))]
    if not maps:
        return None
    pie, loads, sections = elf_layout(binary)
    first = min(maps, key=lambda m: m["start"])
    bias = first["start"] - loads[0][0] + loads[0][2] - first["offset"] if pie else 0
    syms = symbols(binary)
    starts = [s[0] for s in syms]
    sec_starts = [s[0] for s in sections]
    resident, written, by_perms = {}, {}, {}
    for m in maps:
        pages = resident_pages(pid, m["start"], m["end"])
        by_perms[m["perms"]] = by_perms.get(m["perms"], 0) + len(pages) * PAGE
        for page, dirty in pages:
            lo, hi = page - bias, page - bias + PAGE  # in the binary's addresses
            w = written if dirty else None
            pos = lo  # bytes below pos are counted
            # Symbols that start before the page may reach into it: look back a little.
            i = max(0, bisect.bisect_right(starts, lo) - 64)
            while i < len(syms) and syms[i][0] < hi and pos < hi:
                a, size, module = syms[i]
                i += 1
                end = min(hi, a + size)
                if end <= pos:
                    continue
                if a > pos:
                    gap(resident, sections, sec_starts, pos, a, w)
                    pos = a
                resident[module] = resident.get(module, 0) + end - pos
                if dirty:
                    written[module] = written.get(module, 0) + end - pos
                pos = end
            if pos < hi:
                gap(resident, sections, sec_starts, pos, hi, w)
    on_disk = {}
    for _, size, module in syms:
        on_disk[module] = on_disk.get(module, 0) + size
    return {"resident_bytes_by_module": dict(sorted(resident.items(), key=lambda kv: -kv[1])),
            "written_bytes_by_module": dict(sorted(written.items(), key=lambda kv: -kv[1])),
            "resident_bytes_by_perms": by_perms,
            "symbol_bytes_by_module": dict(sorted(on_disk.items(), key=lambda kv: -kv[1])),
            "binary_bytes": os.path.getsize(binary)}


def floor(bench):
    """After figure 7's idle reading: both daemons by mapping, ours by module."""
    log("figure 7 floor: the idle daemons by mapping, our executable's resident pages by module ...")
    exe = os.path.join(bench.args.bin, "localauthd")
    out = {"by mapping": {}}
    for side in bench.sides:
        out["by mapping"][side.name] = by_mapping(side.pid, exe if side is bench.ours else "")
    try:
        out["executable"] = executable_by_module(bench.ours.pid, exe)
    except (OSError, subprocess.CalledProcessError) as e:
        out["executable"] = {"error": str(e)}
    bench.results["7 floor"] = out


def print_floor(r, top=12):
    """The floor's tables: both daemons by mapping (largest first), our executable by module."""
    if "7 floor" not in r:
        return
    f = r["7 floor"]
    print("\n7 floor: the idle daemons by mapping (/proc/PID/smaps; MB: RSS / PSS / private dirty "
          "/ private clean)")
    for side, groups in f["by mapping"].items():
        print("  %s" % side)
        for i, (name, g) in enumerate(groups.items()):
            if i >= top:
                rest = list(groups.values())[top:]
                print("    %-44s %6.2f / %6.2f / %6.2f / %6.2f  (%d more mappings)" % (
                    "the rest", *(sum(x[k] for x in rest) / 1024 for k in (
                        "Rss", "Pss", "Private_Dirty", "Private_Clean")), len(rest)))
                break
            print("    %-44s %6.2f / %6.2f / %6.2f / %6.2f" % (
                name[:44], g["Rss"] / 1024, g["Pss"] / 1024, g["Private_Dirty"] / 1024,
                g["Private_Clean"] / 1024))
    e = f.get("executable")
    if not e or "error" in e:
        print("  our executable by module: %s" % ((e or {}).get("error", "not found")))
        return
    total = sum(e["resident_bytes_by_module"].values())
    written = e.get("written_bytes_by_module", {})
    print("  our executable (%.1f MB on disk), resident %.2f MB by module, %.2f MB of it written "
          "(pagemap x nm -S; on disk: the module's symbol bytes)" % (
              e["binary_bytes"] / 2**20, total / 2**20, sum(written.values()) / 2**20))
    for i, (name, b) in enumerate(e["resident_bytes_by_module"].items()):
        if i >= top + 6:
            rest = sum(list(e["resident_bytes_by_module"].values())[top + 6:])
            print("    %-52s %6.2f MB" % ("the rest", rest / 2**20))
            break
        print("    %-52s %6.2f MB   (written %4.2f, on disk %6.2f MB)" % (
            name[:52], b / 2**20, written.get(name, 0) / 2**20,
            e["symbol_bytes_by_module"].get(name, 0) / 2**20))
    if written:
        print("    written, by module: %s" % ", ".join(
            "%s %.2f" % (n[:30], b / 2**20) for n, b in list(written.items())[:8]))
    print("    by mapping permission: %s" % ", ".join(
        "%s %.2f MB" % (p, b / 2**20) for p, b in sorted(e["resident_bytes_by_perms"].items())))

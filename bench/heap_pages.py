# SPDX-License-Identifier: Apache-2.0
"""What keeps each resident page of glibc's per-thread arenas resident (issue 29, the burst's
memory), read from /proc/PID/mem and /proc/PID/pagemap of the running daemon, no debugger.

glibc 2.36 (Debian 12), x86_64. Each non-main arena's heap is walked chunk by chunk from the first
chunk after its malloc_state to its top chunk. A chunk is free when the next chunk's PREV_INUSE bit
is clear, or when it sits in one of the arena's fast bins (walked, their links demangled), or in a
thread's tcache (recognised by glibc's per-process `tcache_key` in its second word: the value most
small "used" chunks share there). Every resident page of the heap is then put in one class:
  live     - a byte of a chunk in use lies on it (its header excluded)
  cached   - only free chunks, at least one in a tcache or fast bin (malloc_trim keeps these)
  free     - only free binned chunks; malloc_trim(3) returns a page only when one free chunk
             covers it whole, so these are the pages bordering live ones
  top      - the top chunk (shrunk only past the trim threshold)
For the live chunks, the first word is looked up among the executable's symbols: a Swift object
starts with its class metadata's address, which names its type.
"""
import bisect
import collections
import re
import struct
import subprocess

PAGE = 4096


class Memory:
    def __init__(self, pid):
        self.pid = pid
        self.mem = open("/proc/%d/mem" % pid, "rb")
        self.pagemap = open("/proc/%d/pagemap" % pid, "rb")

    def read(self, addr, n):
        self.mem.seek(addr)
        return self.mem.read(n)

    def word(self, addr):
        return struct.unpack("<Q", self.read(addr, 8))[0]

    def resident_pages(self, start, end):
        first, last = start // PAGE, (end + PAGE - 1) // PAGE
        self.pagemap.seek(first * 8)
        data = self.pagemap.read((last - first) * 8)
        return [(first + i) * PAGE for i, (e,) in enumerate(struct.iter_unpack("<Q", data)) if e & (1 << 63)]


def symbols(binary):
    """(sorted addresses, names) of the binary's data symbols (nm), for metadata lookups."""
    out = subprocess.run(["nm", "-C", "--defined-only", binary], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "dDbBrRsSvV":
            rows.append((int(parts[0], 16), parts[2]))
    rows.sort()
    return [r[0] for r in rows], [r[1] for r in rows]


def exe_base(pid, binary_name):
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and fields[5].endswith("/" + binary_name) and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    return None


def walk(pid, binary=None):
    m = Memory(pid)
    syms = symbols(binary) if binary else None
    base = exe_base(pid, binary.rsplit("/", 1)[-1]) if binary else None
    heaps = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            r = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw-p \S+ \S+ 0\s*$", line)
            if r:
                start, end = int(r.group(1), 16), int(r.group(2), 16)
                if start % (64 << 20) == 0 and start + 32 <= m.word(start) <= start + 64:
                    heaps.append((start, end, m.word(start)))
    # glibc's tcache_key: the second word most small used chunks share (tcache entries carry it).
    candidates = collections.Counter()
    chunks_of = {}
    for start, end, arena in heaps:
        top = m.word(arena + 96)
        p = arena + 2200  # sizeof(struct malloc_state) in glibc 2.36
        p += (16 - (p + 16) % 16) % 16
        # Only resident pages are read: reading the others through /proc/PID/mem would map the
        # zero page there (pagemap would then call them present). A chunk's header always lies on
        # a resident page (malloc_trim keeps the page of every free chunk's header).
        resident = m.resident_pages(start, end)
        data = {a: m.read(a, PAGE) for a in resident}

        def w(addr, data=data):
            page = data.get(addr & ~(PAGE - 1))
            return struct.unpack_from("<Q", page, addr & (PAGE - 1))[0] if page else 0
        chunks = []
        while p < top:
            size = w(p + 8) & ~7
            if size < 32 or p + size > top:
                break
            nxt = p + size
            used = bool(w(nxt + 8) & 1)
            chunks.append([p, size, used])
            if used and size <= 1040:
                candidates[w(p + 24)] += 1
            p = nxt
        # Fast bins: heads in malloc_state, links mangled (PROTECT_PTR: (pos >> 12) ^ ptr).
        fast = set()
        for i in range(10):
            q = m.word(arena + 16 + 8 * i)
            n = 0
            while q and n < 100000 and (q + 16) & ~(PAGE - 1) in data:
                fast.add(q)
                q = ((q + 16) >> 12) ^ w(q + 16)
                n += 1
        chunks_of[start] = (chunks, fast, top, end, data, resident)
    key = candidates.most_common(1)[0][0] if candidates else None
    report = []
    types = collections.Counter()
    type_pages = collections.Counter()
    for start, end, arena in heaps:
        chunks, fast, top, hend, data, resident = chunks_of[start]

        def w(addr, data=data):
            page = data.get(addr & ~(PAGE - 1))
            return struct.unpack_from("<Q", page, addr & (PAGE - 1))[0] if page else 0
        cls = {}  # page -> class
        live_bytes = 0
        starts = [c[0] for c in chunks]
        for p, size, used in chunks:
            cached = used and (p in fast or (size <= 1040 and w(p + 24) == key))
            if used and not cached:
                live_bytes += size
                name = None
                if syms and base is not None:
                    first = w(p + 16) - base
                    i = bisect.bisect_right(syms[0], first) - 1
                    if 0 <= i and first - syms[0][i] < 4096:
                        name = syms[1][i]
                name = name or "(not a metadata address: %d-byte chunk)" % size
                types[name] += size
                pages = range((p + 16) // PAGE, (p + size - 1) // PAGE + 1)
                for pg in pages:
                    if cls.get(pg) != "live":
                        cls[pg] = "live"
                        type_pages[name] += 1
            else:
                for pg in range((p + 16) // PAGE, (p + size - 1) // PAGE + 1):
                    if cached:
                        if cls.get(pg) != "live":
                            cls[pg] = "cached"
                    else:
                        cls.setdefault(pg, "free")
        counts = collections.Counter()
        for addr in resident:
            pg = addr // PAGE
            if addr >= top:
                counts["top"] += 4
            else:
                counts[cls.get(pg, "header")] += 4
        report.append({"heap": "%x" % start, "chunks": len(chunks), "live_kb": live_bytes // 1024,
                       "resident_kb": dict(counts)})
    return {"arenas": report,
            "live_types_kb": [(n, b // 1024, type_pages[n] * 4) for n, b in types.most_common(25)],
            "pages_by_type_kb": [(n, p * 4) for n, p in type_pages.most_common(25)]}


if __name__ == "__main__":
    import json
    import sys
    print(json.dumps(walk(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None), indent=1))

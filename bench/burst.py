#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The burst of figure 8 on its own (issue 18): where the daemon's memory goes, and the console
user's verify during the burst, with the status clients as root or under many uids.

Each burst runs on a freshly started release daemon (--virtual-reader, python-dbusmock's logind as
in bench/stacks.py): idle after one `list`, then `localauth-bench concurrent` (or `concurrent-uids`), right
after it and 10 s later the daemon's memory (/proc/PID/smaps per mapping kind, smaps_rollup,
threads). Prints one JSON object; with --smaps the per-mapping differences too.

Usage (as root, release build):
  /usr/bin/python3 bench/burst.py --bin .build/release [--bursts 3] [--uids FIRST] [--heavy 40]
      [--env NAME=VALUE ...] [--smaps]
"""
import argparse
import collections
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import common as B  # noqa: E402
import heap_pages  # noqa: E402
import stacks  # noqa: E402


def mappings(pid):
    """smaps per mapping kind: {kind: {"rss": kB, "private_dirty": kB, "count": n}}."""
    kinds = {}
    current = None
    header = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$")
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            m = header.match(line)
            if m:
                size_kb = (int(m.group(2), 16) - int(m.group(1), 16)) // 1024
                name = m.group(3).strip()
                if not name:
                    # Anonymous, each on its own: a malloc arena's heap (64 MB aligned), a thread's
                    # stack, an mmap'd large allocation.
                    name = "[anon %s %s %dk]" % (m.group(1), line.split()[1], size_kb)
                else:
                    name = os.path.basename(name) if name.startswith("/") else name
                current = kinds.setdefault(name, {"rss": 0, "private_dirty": 0, "count": 0, "size": 0})
                current["count"] += 1
                current["size"] += size_kb
            elif current is not None:
                key, _, rest = line.partition(":")
                if key in ("Rss", "Private_Dirty"):
                    current["rss" if key == "Rss" else "private_dirty"] += int(rest.split()[0])
    return kinds


MALLINFO = False
ARENAS = False
PAGES_OF = None  # the daemon's binary, when --pages
TRIM_AT_END = False
KILL_AT_END = False


def malloc_info(pid, log):
    """glibc's malloc_info(3) of the daemon, through gdb (the XML goes to the daemon's stderr, its
    log): per arena the bytes malloc holds (system) and how much of it is free (total)."""
    with open(log) as f:
        f.seek(0, 2)
        start = f.tell()
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (int)malloc_info(0, *(void**)&stderr)",
                    "-ex", "call (int)fflush(*(void**)&stderr)"], capture_output=True, timeout=60)
    with open(log) as f:
        f.seek(start)
        text = f.read()
    total = re.findall(r'<total type="(\w+)" count="(\d+)" size="(\d+)"/>', text)
    system = re.findall(r'<system type="(\w+)" size="(\d+)"/>', text)
    heaps = text.count("<heap nr=")
    # Per arena: what malloc holds from the system and how much of it is free, in kB.
    per_heap = []
    for block in re.findall(r'<heap nr="\d+">(.*?)</heap>', text, re.S):
        hfree = sum(int(sz) for t, c, sz in re.findall(r'<total type="(\w+)" count="(\d+)" size="(\d+)"/>', block)
                    if t != "mmap")
        hsys = dict(re.findall(r'<system type="(\w+)" size="(\d+)"/>', block))
        per_heap.append({"system_kb": int(hsys.get("current", 0)) // 1024, "free_kb": hfree // 1024,
                         "in_use_kb": (int(hsys.get("current", 0)) - hfree) // 1024})
    # The last <total>/<system> lines are the whole process's (after every heap's own).
    tail = text[text.rfind("</heap>"):] if "</heap>" in text else text
    free = {t: (int(c), int(sz)) for t, c, sz in re.findall(r'<total type="(\w+)" count="(\d+)" size="(\d+)"/>', tail)}
    sysd = {t: int(sz) for t, sz in re.findall(r'<system type="(\w+)" size="(\d+)"/>', tail)}
    return {"arenas": heaps, "free": free, "system": sysd, "per_heap": per_heap,
            "raw_lines": len(total) + len(system)}


def resident_kb(pid, start, end):
    """kB of [start, end) resident (/proc/PID/pagemap)."""
    page = 4096
    first, last = start // page, (end + page - 1) // page
    with open("/proc/%d/pagemap" % pid, "rb") as pm:
        pm.seek(first * 8)
        data = pm.read((last - first) * 8)
    return sum(4 for (e,) in struct.iter_unpack("<Q", data) if e & (1 << 63))


def arenas(pid):
    """glibc's per-thread arenas, read from the daemon's memory (no debugger): for each arena's
    first heap (a 64 MB aligned anonymous mapping whose heap_info names the malloc_state right
    after it), the heap's resident kB and its top chunk's size and resident kB. malloc_trim(3)
    gives back free pages inside binned chunks, never a non-main arena's top chunk: that shrinks
    only once it exceeds the trim threshold (which glibc raises when a large mmapped block is freed)."""
    out = []
    with open("/proc/%d/maps" % pid) as f, open("/proc/%d/mem" % pid, "rb") as mem:
        def word(addr):
            mem.seek(addr)
            return struct.unpack("<Q", mem.read(8))[0]
        for line in f:
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw-p \S+ \S+ 0\s*$", line)
            if not m:
                continue
            start, end = int(m.group(1), 16), int(m.group(2), 16)
            if start % (64 << 20):
                continue
            arena = word(start)
            if not start + 32 <= arena <= start + 64:  # heap_info: 32 bytes, 48 since glibc 2.35
                continue
            # malloc_state's `top` follows its mutex, flags, have_fastchunks and ten fastbins.
            top = word(arena + 96)
            top_size = word(top + 8) & ~7
            out.append({"heap_kb": (end - start) // 1024, "resident_kb": resident_kb(pid, start, end),
                        "top_kb": top_size // 1024,
                        "top_resident_kb": resident_kb(pid, (top + 16 + 4095) & ~4095, top + top_size)})
    return out


def snapshot(pid, log=None):
    info = malloc_info(pid, log) if MALLINFO and log else None
    return {
        "arenas": arenas(pid) if ARENAS else None,
        "pages": heap_pages.walk(pid, PAGES_OF) if PAGES_OF else None,
        "malloc_info": info,
        "rss_kb": B.rss_kb(pid), "pss_kb": B.pss_kb(pid),
        "private_dirty_kb": B.rollup_kb(pid, "Private_Dirty"),
        "threads": len(os.listdir("/proc/%d/task" % pid)),
        "fds": len(os.listdir("/proc/%d/fd" % pid)),
        "thread_names": sorted(open("/proc/%d/task/%s/comm" % (pid, t)).read().strip()
                               for t in os.listdir("/proc/%d/task" % pid)),
        "mappings": mappings(pid),
    }


class Args:
    """What stacks.Ours reads of bench.py's arguments."""

    def __init__(self, bin_dir, module, client=None):
        self.bin = bin_dir
        self.module = module
        self.client = client


class Shim:
    def __init__(self, args):
        self.args = args
        self.procs = B.Processes()


def one_burst(ours, bench_bin, a, extra_env, idle=None, keep=False):
    """A burst on a fresh daemon; with `idle` (the first burst's idle figures), on the one running."""
    fresh = idle is None
    if fresh:
        # The daemon's alone (not the mock logind's seat.env() may start on the way).
        ours.reader_env = dict(ours.reader_env, **extra_env)
        ours.start()
        ours.enrol()
        subprocess.run(ours.list_cmd(), env=ours.env(), capture_output=True, check=True)
        time.sleep(1)
        idle = snapshot(ours.pid, ours.log)
    before = None
    if a.auths and fresh:
        # Figure 7's authentications before the burst, as `make bench` runs them: the burst's
        # "10 s after" is compared with the idle figure taken before them.
        left = a.auths
        while left > 0:
            ours.client(min(left, 250), [(ours.match, B.PRINT_ID)])
            left -= 250
        time.sleep(1)
        before = snapshot(ours.pid, ours.log)
    if a.uids:
        cmd = [bench_bin, "concurrent-uids", str(a.clients), str(a.rounds), B.USER, B.PRINT_ID,
               str(a.uids), str(a.heavy)]
    else:
        cmd = [bench_bin, "concurrent", str(a.clients), str(a.rounds), B.USER, B.PRINT_ID]
    load = os.getloadavg()[0]
    _, out = B.timed(cmd, ours.env(), "concurrent")
    after = snapshot(ours.pid, ours.log)
    time.sleep(10)
    later = snapshot(ours.pid, ours.log)
    if TRIM_AT_END:
        subprocess.run(["gdb", "-p", str(ours.pid), "-batch", "-ex", "call (int)malloc_trim(0)"],
                       capture_output=True, timeout=60)
        later["trimmed_again"] = snapshot(ours.pid)
        later["trimmed_again"].pop("mappings")
    c = json.loads(out)
    if KILL_AT_END and not keep:
        # What is live now stays in a heap profile (heaptrack's preload): no shutdown frees it.
        ours.daemon.kill()
        ours.daemon.wait()
    if not keep:
        ours.bench.procs.stop(ours.daemon, timeout=120)
    return {"idle": idle, "before": before or idle, "after": after, "later": later, "load": load, "burst": {
        "status_median_ms": B.ms(statistics.median(c["status_ns"])),
        "status_p99_ms": B.ms(B.percentile(c["status_ns"], 0.99)),
        "verify_median_ms": B.ms(statistics.median(c["verify_ns"])) if c["verify_ns"] else None,
        "verify_max_ms": B.ms(max(c["verify_ns"])) if c["verify_ns"] else None,
        "verify_n": len(c["verify_ns"]),
        "verify_idle_median_ms": B.ms(statistics.median(c["verify_idle_ns"])),
        "verify_prompt_median_ms": B.ms(statistics.median(c["verify_prompt_ns"])) if c.get("verify_prompt_ns") else None,
        "verify_idle_prompt_median_ms": B.ms(statistics.median(c["verify_idle_prompt_ns"]))
        if c.get("verify_idle_prompt_ns") else None,
        "wall_ms": B.ms(c["wall_ns"]),
        "heavy_n": len(c.get("heavy_ns", [])), "heavy_refused": c.get("heavy_refused"),
        "heavy_median_ms": B.ms(statistics.median(c["heavy_ns"])) if c.get("heavy_ns") else None,
    }}


def named_uids_bin(bin_dir, first, count):
    """A bin directory whose `localauthd` runs the real one in a mount namespace of its own where
    /etc/passwd names the burst's uids (laburst<uid>) and the heavy uid: their `status` then reads
    their (empty) account state as root's does, instead of answering the reader line alone. The
    machine's /etc/passwd is never changed."""
    tmp = tempfile.mkdtemp(prefix="la-burst-names-")
    os.chmod(tmp, 0o755)
    passwd = os.path.join(tmp, "passwd")
    with open("/etc/passwd") as f, open(passwd, "w") as out:
        out.write(f.read())
        for uid in range(first - 1, first + count):
            out.write("laburst%d:x:%d:%d::/nonexistent:/usr/sbin/nologin\n" % (uid, uid, uid))
    os.chmod(passwd, 0o644)
    wrapper = os.path.join(tmp, "localauthd")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec unshare -m sh -c 'mount --bind %s /etc/passwd && exec %s \"$@\"' sh \"$@\"\n"
                % (passwd, os.path.join(os.path.abspath(bin_dir), "localauthd")))
    os.chmod(wrapper, 0o755)
    for name in ("localauthctl", "localauth-bench"):
        os.symlink(os.path.join(os.path.abspath(bin_dir), name), os.path.join(tmp, name))
    return tmp


def diff(a, b):
    out = {}
    for name in set(a) | set(b):
        x, y = a.get(name, {}), b.get(name, {})
        d = {k: y.get(k, 0) - x.get(k, 0) for k in ("rss", "private_dirty", "count")}
        if any(d.values()):
            out[name] = d
    return dict(sorted(out.items(), key=lambda kv: -abs(kv[1]["private_dirty"])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    ap.add_argument("--module", default=os.path.join(ROOT, "pam", "build", "pam_localauth.so"))
    ap.add_argument("--client", default=os.path.join(ROOT, "pam", "build", "tests", "bench_client"))
    ap.add_argument("--auths", type=int, default=0,
                    help="PAM authentications (bench_client) between idle and the burst, as figure 7")
    ap.add_argument("--bursts", type=int, default=3)
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--uids", type=int, default=0, help="first uid of the status clients (0: all root)")
    ap.add_argument("--named-uids", action="store_true",
                    help="the uids get names (a private /etc/passwd for the daemon): status reads their accounts")
    ap.add_argument("--heavy", type=int, default=40, help="connections the heavy uid tries")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for the daemon")
    ap.add_argument("--smaps", action="store_true", help="print the per-mapping differences")
    ap.add_argument("--same", action="store_true", help="every burst on one daemon (idle: before the first)")
    ap.add_argument("--trim-at-end", action="store_true", help="malloc_trim(0) through gdb after 10 s")
    ap.add_argument("--mallinfo", action="store_true", help="malloc_info(3) through gdb at each point")
    ap.add_argument("--pages", action="store_true",
                    help="what keeps each resident arena page resident, live chunks by type (heap_pages.py)")
    ap.add_argument("--arenas", action="store_true",
                    help="each arena's resident kB and its top chunk's (read from /proc/PID/mem)")
    ap.add_argument("--kill-at-end", action="store_true",
                    help="SIGKILL the daemon after the 10 s (a heap profiler then sees what was live)")
    a = ap.parse_args()
    global MALLINFO, TRIM_AT_END, KILL_AT_END, ARENAS
    MALLINFO = a.mallinfo
    ARENAS = a.arenas
    global PAGES_OF
    PAGES_OF = os.path.realpath(os.path.join(a.bin, "localauthd")) if a.pages else None
    TRIM_AT_END = a.trim_at_end
    KILL_AT_END = a.kill_at_end
    if os.geteuid() != 0:
        sys.exit("run as root")
    extra_env = dict(e.split("=", 1) for e in a.env)
    if a.named_uids:
        a.bin = named_uids_bin(a.bin, a.uids, a.clients)
    os.sync()  # a binary linked a moment before is dirty in the page cache (smaps: private dirty)
    shim = Shim(Args(a.bin, a.module, a.client))
    runs = []
    try:
        tmp = ours = None
        for i in range(a.bursts):
            if ours is None or not a.same:
                tmp = tempfile.mkdtemp(prefix="la-burst-")
                os.chmod(tmp, 0o755)
                ours = stacks.Ours(shim, os.path.join(tmp, "ours"))
            r = one_burst(ours, os.path.join(a.bin, "localauth-bench"), a, extra_env,
                          idle=runs[0]["idle"] if a.same and runs else None,
                          keep=a.same and i < a.bursts - 1)
            if not a.same or i == a.bursts - 1:
                subprocess.run(["rm", "-rf", tmp])
            runs.append(r)
            mb = lambda kb: round(kb / 1024, 2)  # noqa: E731
            line = {k: {"rss": mb(r[k]["rss_kb"]), "pss": mb(r[k]["pss_kb"]),
                        "private_dirty": mb(r[k]["private_dirty_kb"]), "threads": r[k]["threads"],
                        "fds": r[k]["fds"],
                        "in_use_kb": (r[k]["malloc_info"]["system"]["current"]
                                      - sum(sz for kind, (_, sz) in r[k]["malloc_info"]["free"].items()
                                            if kind != "mmap")) // 1024
                        if r[k]["malloc_info"] else None}
                    for k in ("idle", "before", "after", "later")}
            if "trimmed_again" in r["later"]:
                t = r["later"]["trimmed_again"]
                line["trimmed_again"] = {"rss": mb(t["rss_kb"]), "private_dirty": mb(t["private_dirty_kb"]),
                                         "threads": t["threads"]}
            print(json.dumps({"burst": i + 1, "load": round(r["load"], 2), **line, **r["burst"]}),
                  flush=True)
            if a.smaps:
                for k in ("idle", "before", "after", "later"):
                    print("  threads %s: %s" % (k, r[k]["thread_names"]))
                    if r[k]["malloc_info"]:
                        print("  malloc_info %s: %s" % (k, r[k]["malloc_info"]))
                    if r[k].get("pages"):
                        pg = r[k]["pages"]
                        tot = collections.Counter()
                        for ar in pg["arenas"]:
                            tot.update(ar["resident_kb"])
                        print("  pages %s: resident arena kB by what holds them: %s" % (k, dict(tot)))
                        print("    per arena: %s" % " ".join(
                            "%s" % ",".join("%s%d" % (c[0], v) for c, v in sorted(ar["resident_kb"].items()))
                            for ar in pg["arenas"]))
                        for name, kb in pg["pages_by_type_kb"][:12]:
                            print("    pages held by live %-60s %5d kB" % (name[:60], kb))
                    if r[k].get("arenas"):
                        ar = r[k]["arenas"]
                        print("  arenas %s: %d, resident %d kB, of it top chunks %d kB: %s" % (
                            k, len(ar), sum(x["resident_kb"] for x in ar),
                            sum(x["top_resident_kb"] for x in ar),
                            " ".join("%d/%d" % (x["resident_kb"], x["top_resident_kb"]) for x in ar)))
                for label, x, y in (("idle -> before the burst", "idle", "before"),
                                    ("idle -> right after", "idle", "after"),
                                    ("before the burst -> 10 s after", "before", "later"),
                                    ("idle -> 10 s after", "idle", "later")):
                    print("  %s:" % label)
                    for name, d in list(diff(r[x]["mappings"], r[y]["mappings"]).items())[:40]:
                        print("    %-40s rss %+7d kB  private dirty %+7d kB  mappings %+d" % (
                            name, d["rss"], d["private_dirty"], d["count"]))
    finally:
        shim.procs.stop_all()
        if a.named_uids:
            subprocess.run(["rm", "-rf", a.bin])
    keys = ("rss_kb", "pss_kb", "private_dirty_kb")
    summary = {}
    for k in ("idle", "after", "later"):
        summary[k] = {key: statistics.median(r[k][key] for r in runs) / 1024 for key in keys}
    summary["later_minus_idle_rss_mb"] = statistics.median(
        (r["later"]["rss_kb"] - r["idle"]["rss_kb"]) / 1024 for r in runs)
    summary["verify_median_ms"] = statistics.median(
        r["burst"]["verify_median_ms"] for r in runs if r["burst"]["verify_median_ms"] is not None)
    summary["n"] = len(runs)
    summary["env"] = extra_env
    print(json.dumps({"summary": summary}))


if __name__ == "__main__":
    main()

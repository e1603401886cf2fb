#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Figure 1's prompt -> result on the booted system under measurement-only variants of the unit
(issue 29; docs/performance.md, "Prompt -> result on the booted system").

The machine of bench/boot.py (the package under the shipped units, alice's console session, the
real journald, logind, dbus-daemon and polkitd), and beside it, when asked, a daemon started by hand
on this machine as `make bench` starts it (bench/stacks.py's Ours: python-dbusmock's logind, the
state in /tmp, bench_client under pam_wrapper). Blocks of figure 1's client, the sides in rotating
order block by block; before each booted block localauthd.service is restarted with the variant's
drop-in and warmed with three verifies. Prints each side's median, the paired difference against
the shipped unit and against the by-hand daemon (the median over blocks of the difference of the
block medians), and journald's and the daemon's CPU per verify (schedstat). Every drop-in is
removed at the end; nothing of it is in `make bench`.

Sides (--sides, comma-separated):
  shipped          the shipped unit
  no-journald      StandardError=file: (the daemon's records as plain lines in a file) and the client
                   in a mount namespace whose /dev/log is /dev/null (pam_localauth's syslog line lost)
  records-to-file  only the first half of no-journald
  client-no-log    only the second half
  no-seccomp       every seccomp-based option of the unit off (systemd-nspawn's own filters stay)
  no-sandbox       that and every namespace, mount, device and IP option off
  no-sandbox-no-journald
  nice             CAP_SYS_NICE in the unit's bounding set (needs --cap-nice): the nice values the
                   unit's LimitNICE=-4 gives libdispatch's threads on a real machine, which this
                   container cannot apply (no CAP_SYS_RESOURCE)
  by-hand          the daemon started by hand on this machine
  fprintd          Debian's fprintd in the booted machine

Usage: bench/boot_variants.py --root CACHED_ROOT --deb dist/localauth_*.deb --compat dist/localauth-fprintd-compat_*.deb
       [--bin .build/release] [--sides ...] [--blocks 20] [--runs 40] [--cap-nice] [--cpu-shares N] [--json PATH]
(as root). --cpu-shares N first moves this process (and so everything it starts, the booted machine
included) into a cgroup-v1 cpu group of its own with cpu.shares N, for a machine that others load;
the group is removed at the end.
"""
import argparse
import atexit
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import boot  # noqa: E402
from common import log  # noqa: E402

DROPIN = "/etc/systemd/system/localauthd.service.d/zz-bench-variant.conf"
LIMIT = "/etc/systemd/system/localauthd.service.d/zz-bench-no-start-limit.conf"
RECORDS_TO_FILE = "StandardError=file:/run/localauthd-bench-records.log\n"
NO_SECCOMP = """SystemCallFilter=
SystemCallArchitectures=
SystemCallErrorNumber=
MemoryDenyWriteExecute=no
LockPersonality=no
RestrictNamespaces=no
RestrictRealtime=no
RestrictSUIDSGID=no
RestrictAddressFamilies=
ProtectKernelModules=no
ProtectKernelLogs=no
ProtectClock=no
ProtectHostname=no
"""
NO_SANDBOX = NO_SECCOMP + """ProtectSystem=no
ProtectHome=no
PrivateTmp=no
PrivateMounts=no
ReadWritePaths=
DevicePolicy=auto
DeviceAllow=
PrivateNetwork=no
IPAddressDeny=
NoNewPrivileges=no
ProtectKernelTunables=no
ProtectControlGroups=no
ProtectProc=default
PrivateIPC=no
RemoveIPC=no
"""
# side: (the unit's drop-in under [Service], the client without /dev/log)
VARIANTS = {
    "shipped": ("", False),
    "no-journald": (RECORDS_TO_FILE, True),
    "records-to-file": (RECORDS_TO_FILE, False),
    "client-no-log": ("", True),
    "no-seccomp": (NO_SECCOMP, False),
    "no-sandbox": (NO_SANDBOX, False),
    "no-sandbox-no-journald": (NO_SANDBOX + RECORDS_TO_FILE, True),
    "nice": ("CapabilityBoundingSet=CAP_SYS_NICE\n", False),
}


def cpu_of(pid):
    """(ns on CPU, context switches) of every thread of a process of this machine."""
    ns = switches = 0
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                fields = f.read().split()
            ns, switches = ns + int(fields[0]), switches + int(fields[2])
    except OSError:
        pass
    return ns, switches


class VariantBench(boot.BootBench):
    hand = None

    def set_variant(self, name):
        m = self.m
        body = VARIANTS[name][0]
        if body:
            m.write(DROPIN, "[Service]\n" + body)
        elif os.path.exists(m.root + DROPIN):
            os.unlink(m.root + DROPIN)
        m.sh("systemctl daemon-reload && systemctl restart localauthd.service")
        return boot.host_pid(m, self.main_pid("localauthd.service"))

    def start_by_hand(self):
        import bench as bench_module
        import common
        import stacks
        b = bench_module.Bench.__new__(bench_module.Bench)
        b.args = argparse.Namespace(module=os.path.join(REPO, "pam", "build", "pam_localauth.so"),
                                    client=self.args.client, bin=self.args.bin)
        b.procs = common.Processes()
        b.tmp = tempfile.mkdtemp(prefix="la-boot-variants-")
        os.chmod(b.tmp, 0o755)
        b.multiarch = "x86_64-linux-gnu"
        self.hand_bench = b
        self.hand = stacks.Ours(b, os.path.join(b.tmp, "by-hand"))
        self.hand.start()
        self.hand.enrol()
        self.print_id = common.PRINT_ID

    def by_hand_rows(self, runs):
        return self.hand.client(runs + 1, [(self.hand.match, self.print_id)])[1:]

    def block(self, side, runs):
        """One block of `runs` verifies: (rows, CPU per verify of the daemon and of journald)."""
        if side == "fprintd":
            return self.pam_runs(self.theirs, runs), None
        if side == "by-hand":
            self.by_hand_rows(3)
            d0 = cpu_of(self.hand.pid)
            rows = self.by_hand_rows(runs)
            d1 = cpu_of(self.hand.pid)
            return rows, {"daemon_us": (d1[0] - d0[0]) / runs / 1e3, "journald_us": 0.0}
        daemon = self.set_variant(side)
        no_syslog = VARIANTS[side][1]
        self.pam_runs(self.ours, 3, no_syslog=no_syslog)
        d0, j0 = cpu_of(daemon), cpu_of(self.journald)
        rows = self.pam_runs(self.ours, runs, no_syslog=no_syslog)
        d1, j1 = cpu_of(daemon), cpu_of(self.journald)
        n = runs + 1  # pam_runs makes one more, left out of its rows
        return rows, {"daemon_us": (d1[0] - d0[0]) / n / 1e3, "journald_us": (j1[0] - j0[0]) / n / 1e3}

    def run_variants(self):
        a = self.args
        self.setup()
        self.m.write(LIMIT, "[Unit]\nStartLimitIntervalSec=0\n")
        self.journald = boot.host_pid(self.m, int(self.m.out(
            "systemctl show -p MainPID --value systemd-journald").strip() or 0)) or 0
        if "by-hand" in a.sides:
            self.start_by_hand()
        rows = {s: [] for s in a.sides}
        cpu = {s: [] for s in a.sides}
        loads = []
        try:
            for b in range(a.blocks):
                k = b % len(a.sides)
                order = a.sides[k:] + a.sides[:k]
                if b % 2:
                    order = order[::-1]
                loads.append(os.getloadavg()[0])
                for side in order:
                    got, used = self.block(side, a.runs)
                    rows[side].append([x["result_ns"] for x in got[a.skip:]])
                    if used:
                        cpu[side].append(used)
                log("block %d/%d, load %.2f: %s" % (b + 1, a.blocks, loads[-1], " ".join(
                    "%s %.3f" % (s, statistics.median(rows[s][-1]) / 1e6) for s in order)))
        finally:
            for path in (DROPIN, LIMIT):
                if os.path.exists(self.m.root + path):
                    os.unlink(self.m.root + path)
            self.m.sh("systemctl daemon-reload && systemctl reset-failed localauthd.service && "
                      "systemctl restart localauthd.service")
        return {"loads": loads, "result_ns": rows, "cpu_per_verify": cpu}

    def close(self):
        if self.hand:
            self.hand_bench.procs.stop_all()
            subprocess.run(["rm", "-rf", self.hand_bench.tmp])
        boot.BootBench.close(self)


def report(out):
    rows, cpu = out["result_ns"], out["cpu_per_verify"]
    print("prompt -> result, ms; load %.2f .. %.2f over %d blocks" % (
        min(out["loads"]), max(out["loads"]), len(out["loads"])))

    def block_median(b):
        return statistics.median(b) / 1e3

    for ref in ("shipped", "by-hand"):
        if ref not in rows:
            continue
        print("\n%-24s %8s %22s %10s %14s %14s" % ("side", "median", "paired vs " + ref + " (us)",
                                                   "faster in", "daemon CPU us", "journald us"))
        for side, blocks in rows.items():
            median = statistics.median(x for b in blocks for x in b) / 1e6
            used = cpu.get(side) or []

            def per(key):
                return "%.0f" % statistics.median(c[key] for c in used) if used else "-"
            if side == ref:
                print("%-24s %8.3f %22s %10s %14s %14s" % (side, median, "", "", per("daemon_us"),
                                                           per("journald_us")))
                continue
            d = [block_median(x) - block_median(y) for x, y in zip(blocks, rows[ref])]
            print("%-24s %8.3f %+22.1f %10s %14s %14s" % (
                side, median, statistics.median(d), "%d of %d" % (sum(1 for v in d if v < 0), len(d)),
                per("daemon_us"), per("journald_us")))


def join_cpu_group(shares):
    group = "/sys/fs/cgroup/cpu/la-boot-variants-%d" % os.getpid()
    if not os.path.isdir("/sys/fs/cgroup/cpu"):
        sys.exit("--cpu-shares needs the cgroup-v1 cpu controller at /sys/fs/cgroup/cpu")
    os.mkdir(group)
    with open(group + "/cpu.shares", "w") as f:
        f.write(str(shares))
    with open(group + "/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
    # At exit, after what the bench started has stopped (python-dbusmock's logind ends at exit too).
    atexit.register(leave_cpu_group, group)
    return group


def leave_cpu_group(group):
    with open("/sys/fs/cgroup/cpu/cgroup.procs", "w") as f:
        f.write(str(os.getpid()))
    for _ in range(50):  # the machine's processes leave as it powers off
        try:
            os.rmdir(group)
            return
        except OSError:
            time.sleep(0.2)
    log("%s is still in use; remove it once empty" % group)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--deb", required=True)
    ap.add_argument("--compat", required=True)
    ap.add_argument("--bin", default=os.path.join(REPO, ".build", "release"))
    ap.add_argument("--client", default=os.path.join(REPO, "pam", "build", "tests", "bench_client"))
    ap.add_argument("--sides", default="by-hand,shipped,no-journald,records-to-file,client-no-log,"
                                       "no-seccomp,no-sandbox,fprintd")
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--skip", type=int, default=2, help="verifies left out at each block's start")
    ap.add_argument("--cap-nice", action="store_true",
                    help="boot with --capability=CAP_SYS_NICE (the side 'nice' needs it)")
    ap.add_argument("--cpu-shares", type=int, default=0)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    a.sides = a.sides.split(",")
    unknown = [s for s in a.sides if s not in VARIANTS and s not in ("by-hand", "fprintd")]
    if unknown:
        sys.exit("unknown sides: %s" % unknown)
    if "nice" in a.sides and not a.cap_nice:
        sys.exit("the side 'nice' needs --cap-nice")
    if os.geteuid() != 0:
        sys.exit("boot_variants: needs root (systemd-nspawn)")
    a.timer = os.path.join(tempfile.mkdtemp(prefix="la-boot-timer-"), "boot_timer")
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-o", a.timer, os.path.join(HERE, "boot_timer.c")],
                   check=True)
    if a.cpu_shares:
        join_cpu_group(a.cpu_shares)
    bench = VariantBench(a)
    if a.cap_nice:
        tmux = bench.m.tmux

        def with_capability(*args, check=True):
            if "new-session" in args and "--boot" in args:
                i = args.index("--boot")
                args = args[:i + 1] + ("--capability=CAP_SYS_NICE",) + args[i + 1:]
            return tmux(*args, check=check)
        bench.m.tmux = with_capability
    try:
        out = bench.run_variants()
    finally:
        bench.close()
        subprocess.run(["rm", "-rf", os.path.dirname(a.timer)])
    out["settings"] = {k: v for k, v in vars(a).items() if k != "json"}
    report(out)
    path = a.json or os.path.join(HERE, "results", "boot-variants-%s.json" % time.strftime(
        "%Y%m%dT%H%M%SZ", time.gmtime()))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f)
    print("\nJSON: %s" % path)


if __name__ == "__main__":
    sys.exit(main())

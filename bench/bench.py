#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`make bench`: localauthd + pam_localauth.so side by side with fprintd + pam_fprintd.

One run, the same machine, the same libfprint virtual device kind (virtual_device, an instant
"SCAN id" sent the moment the PAM prompt arrives), the same PAM client (pam/tests/bench_client
under pam_wrapper, private service directory, /etc/pam.d untouched). The two stacks run at the
same time and the phases alternate between them (A B A B ...) so that load drift hits both alike.

Ours: the release localauthd --virtual-reader on a temporary socket and state directory.
Theirs: Debian's fprintd + libpam-fprintd (installed when missing; /etc/pam.d is checked to be
byte-identical afterwards) on a private system-type dbus-daemon with the real polkitd; fprintd is
started by D-Bus activation (`fprintd -t`) with FP_VIRTUAL_DEVICE and STATE_DIRECTORY.

Figures (docs/performance.md explains each):
  1  pam_authenticate, matching finger: total, start -> prompt, prompt -> result
  2  the same, another finger (tries=1 / max-tries=1)
  3  pamtester as a whole process, matching finger (prompt read from a pty)
  4  canEvaluatePolicy through LAContext (new connection each), status on one connection (ours)
  5  cold start: the first `list` as a whole process to its answer, daemon not running
     (ours: systemd-socket-activate; theirs: D-Bus activation)
  6  `localauthctl list` / `fprintd-list` as a whole process, daemon running
  7  daemon RSS (and PSS, private dirty) idle after start, after figure 1 and after 1000
     authentications; the floor (figures/memory_floor.py): both daemons idle by mapping, our
     executable's resident pages by the module that brings them
  8  1000 concurrent status clients while verifies run (ours): a) all at once, b) Poisson
     arrivals at 1000 requests per second in all, c) a) against a minimal C server (the floor),
     d) a) with each status client under a uid of its own and one heavy uid (issue 18)
  9  LASecret.loadData after a finger, beside evaluatePolicy (ours)
  10 fprintd's clients through localauthd's D-Bus door (--fprintd-compat, a private bus of its
     own with the real polkitd) beside fprintd: pam_fprintd.so pam_authenticate with a matching
     finger (the same bench_client, service line and reader driver), fprintd-list as a process
  11 what a verify's prompt -> result is made of (ours): fsyncs and logind round trips per
     verify (untimed counts), one fdatasync on the state directory's file system (timed)
  growth (how cost grows; a pair of daemons of its own on libfprint's virtual_image, NBIS):
     1, 10, 100, 1000, 10000 enrolled users: cold start, list, status, memory, the accounts read at
     start (strace); verify over 1, 5, 10 fingers of one account; the enrolment's duplicate
     check over 1, 5, 10, 50 prints of all accounts (--no-growth skips it, --growth-only runs
     only it)

The figures live in bench/figures/, one module per question, the way the daemon is split by use
case; the stacks in stacks.py, what they share in common.py, the table in report.py.

Usage: /usr/bin/python3 bench/bench.py [--quick] [--json PATH]   (as root; `make bench`)
Prints the table, issue 29's goals (met / not met) and writes JSON (default bench/results/bench-<UTC time>.json and latest.json).
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the tree

from common import (INCUMBENT_PACKAGES, ROOT, USER, Processes, ensure_incumbent,  # noqa: E402
                    interleaved, log, machine, pam_d_digest, pss_kb, rollup_kb, rss_kb, sha256,
                    stats)
from figures import (concurrency, daemon_memory, fprintd_clients, memory_floor,  # noqa: E402
                     pam_authenticate, swift_client, verify_anatomy, whole_process)
from figures.growth import growth_phase, print_growth  # noqa: E402
from report import budgets, goals, print_goals, print_table  # noqa: E402
from stacks import Ours, OursOverDBus, Theirs  # noqa: E402


class Bench:
    def __init__(self, args):
        self.args = args
        self.procs = Processes()
        self.tmp = tempfile.mkdtemp(prefix="la-bench-")
        os.chmod(self.tmp, 0o755)
        self.multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                                        text=True).stdout.strip() or "x86_64-linux-gnu"
        self.ours = Ours(self, os.path.join(self.tmp, "ours"))
        self.theirs = Theirs(self, os.path.join(self.tmp, "theirs"))
        self.sides = (self.ours, self.theirs)
        self.over_dbus = OursOverDBus(self, os.path.join(self.tmp, "ours-dbus"))
        self.bench_bin = os.path.join(args.bin, "localauth-bench")
        self.results = {}

    def close(self):
        self.procs.stop_all()
        if self.args.keep:
            log("kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, key, side, samples_ns, **extra):
        """min / median / p95 / max in ms and n, from samples in nanoseconds."""
        entry = dict(stats(samples_ns), **extra)
        self.results.setdefault(key, {})[side] = entry
        return entry

    def interleaved(self, blocks, fn, sides=None):
        """common.interleaved over ours and theirs, or another pair (figure 10)."""
        return interleaved(sides or self.sides, blocks, fn)

    def memory(self, label):
        for side in self.sides:
            self.results.setdefault("rss_kb", {}).setdefault(side.name, {})[label] = {
                "rss_kb": rss_kb(side.pid), "pss_kb": pss_kb(side.pid),
                "private_dirty_kb": rollup_kb(side.pid, "Private_Dirty"), "auths": side.auths}

    # The figures in the order that keeps them apart: memory idle first, the PAM figures before
    # the authentications that figure 7 counts, the bursts after them, cold start last (it stops
    # and starts the daemons).
    STEPS = (daemon_memory.idle_after_start, memory_floor.floor, pam_authenticate.match,
             lambda bench: bench.memory("after figure 1"), verify_anatomy.anatomy,
             pam_authenticate.no_match,
             whole_process.pamtester, daemon_memory.after_authentications, whole_process.list_warm,
             fprintd_clients.through_the_door, swift_client.can_evaluate_and_status,
             swift_client.secret_after_finger, concurrency.burst_and_paced, concurrency.floor,
             concurrency.many_uids, whole_process.cold_start)

    def run(self):
        for side in self.sides:
            log("starting %s ..." % side.name)
            side.start()
            side.enrol()
        for step in self.STEPS:
            step(self)
        return self.results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, ".build", "release"))
    ap.add_argument("--module", default=os.path.join(ROOT, "pam", "build", "pam_localauth.so"))
    ap.add_argument("--client", default=os.path.join(ROOT, "pam", "build", "tests",
                                                     "bench_client"))
    ap.add_argument("--runs", type=int, default=200, help="figures 1 and 2, per side")
    ap.add_argument("--blocks", type=int, default=10, help="A B rounds for figures 1 and 2")
    ap.add_argument("--process-runs", type=int, default=60, help="figures 3 and 6, per side")
    ap.add_argument("--cold-runs", type=int, default=21, help="figure 5, per side")
    ap.add_argument("--auths", type=int, default=1000, help="figure 7")
    ap.add_argument("--swift-runs", type=int, default=1000, help="figure 4")
    ap.add_argument("--clients", type=int, default=1000, help="figure 8")
    ap.add_argument("--rounds", type=int, default=5, help="figure 8: requests per client")
    ap.add_argument("--rate", type=int, default=1000, help="figure 8b: requests per second")
    ap.add_argument("--quick", action="store_true", help="small numbers, to try the bench out")
    ap.add_argument("--no-growth", action="store_true", help="skip the growth phase")
    ap.add_argument("--growth-only", action="store_true", help="only the growth phase")
    ap.add_argument("--growth-users", default="1,10,100,1000,10000",
                    help="growth: enrolled users")
    ap.add_argument("--growth-fingers", default="1,5,10", help="growth: one account's fingers")
    ap.add_argument("--growth-gallery", default="1,5,10,50",
                    help="growth: prints in all for the enrolment's duplicate check")
    ap.add_argument("--growth-runs", type=int, default=21, help="growth: list/status, per side")
    ap.add_argument("--growth-cold-runs", type=int, default=11, help="growth: cold starts, per side")
    ap.add_argument("--growth-identify-runs", type=int, default=5,
                    help="growth: verify pairs (a miss, a match) per side and finger count")
    ap.add_argument("--prints", default=None, help="growth: the NBIS images' directory")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.blocks, args.process_runs, args.cold_runs = 20, 2, 5, 3
        args.auths, args.swift_runs, args.clients, args.rounds = 100, 100, 100, 2
        args.growth_users, args.growth_fingers, args.growth_gallery = "1,10", "1,5", "1,12"
        args.growth_runs, args.growth_cold_runs, args.growth_identify_runs = 5, 3, 2
    args.growth_users = [int(n) for n in args.growth_users.split(",")]
    args.growth_fingers = [int(n) for n in args.growth_fingers.split(",")]
    args.growth_gallery = [int(n) for n in args.growth_gallery.split(",")]
    if sorted(args.growth_users) != args.growth_users or args.growth_users[0] < 1 or sorted(
            args.growth_fingers) != args.growth_fingers or not 1 <= args.growth_fingers[0] <= \
            args.growth_fingers[-1] <= 10:
        sys.exit("--growth-users: rising counts from 1; --growth-fingers: rising, 1 to 10")
    args.bin, args.module, args.client = (os.path.abspath(p) for p in (args.bin, args.module,
                                                                       args.client))
    if os.getuid() != 0:
        sys.exit("run as root: pam_localauth.so believes only a daemon run by root, and fprintd "
                 "needs root on its bus")
    for path in (args.module, args.client, *(os.path.join(args.bin, b) for b in (
            "localauthd", "localauthctl", "localauth-bench"))):
        if not os.path.exists(path):
            sys.exit("%s is missing (make bench builds it)" % path)
    pam_before = pam_d_digest()
    installed = ensure_incumbent()
    versions = {p: subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True,
                                  text=True).stdout for p in INCUMBENT_PACKAGES + ["libfprint-2-2"]}
    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(), "installed_now": installed, "versions": versions,
            "git_head": subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"],
                                       capture_output=True, text=True).stdout.strip(),
            "localauthd_sha256": sha256(os.path.join(args.bin, "localauthd")),
            "module_sha256": sha256(args.module), "user": USER,
            "p95": "nearest rank", "clock": "CLOCK_MONOTONIC",
            "settings": {k: v for k, v in vars(args).items() if k != "json"}}

    # Freshly linked binaries are dirty in the page cache until written back, and smaps counts
    # those pages as the daemon's private dirty memory: write them back first.
    os.sync()
    bench = Bench(args)

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    try:
        results = bench.results if args.growth_only else bench.run()
        if not args.no_growth:
            growth_phase(bench)
    finally:
        bench.close()
        if pam_d_digest() != pam_before:
            print("WARNING: /etc/pam.d changed during the bench", file=sys.stderr)
    info["machine"]["loadavg_after"] = os.getloadavg()
    info["pam_d_unchanged"] = pam_d_digest() == pam_before
    if not args.growth_only:
        info["budgets"] = budgets(results)
        print_table(results, info)
        memory_floor.print_floor(results)
        verify_anatomy.print_anatomy(results)
    if "growth" in results:
        print_growth(results["growth"])
    if not args.growth_only:
        info["goals"] = goals(results)
        print_goals(info["goals"])
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = args.json or os.path.join(ROOT, "bench", "results", "bench-%s.json" % stamp)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(dict(info, results=results), f, indent=1)
    latest = os.path.join(os.path.dirname(os.path.abspath(path)), "latest.json")
    if os.path.abspath(path) != latest:
        shutil.copyfile(path, latest)
    print("\nJSON: %s" % path)
    if not args.quick and not args.growth_only:
        import charts  # bench/charts.py
        for svg in charts.write_charts(results, info, os.path.join(ROOT, "docs", "performance")):
            print("chart: %s" % svg)
    return 1 if "failed" in results.get("growth", {}) else 0


if __name__ == "__main__":
    sys.exit(main())

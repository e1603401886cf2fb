#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What one verify costs, two builds side by side (issue 18): figure 1 of bench.py (pam_authenticate
with a matching finger through bench_client: start -> prompt, prompt -> result) against two release
daemons at once, blocks alternating A B B A ..., then, untimed, the fsyncs per verify (strace -f
-c on each daemon for a block) and what it asked python-dbusmock's logind per verify (questions, round trips).

Usage: /usr/bin/python3 bench/verify_cost.py --before DIR --after DIR [--runs 200] [--blocks 10]
(as root; DIR holds a release localauthd and localauthctl). Prints a table and writes JSON.
"""
import argparse
import json
import statistics
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench  # noqa: E402
import common  # noqa: E402
import seat  # noqa: E402 (common puts pam/tests on the path)
import stacks  # noqa: E402


class Side(stacks.Ours):
    def __init__(self, b, tmp, name, bin_dir):
        super().__init__(b, tmp)
        self.name = name
        self.bin = bin_dir


def monitor_log():
    seat.address()
    return os.path.join(seat._mock.directory, "monitor.log")


def monitored(fn):
    """fn() with dbus-monitor logging every message on the shared mock logind's bus (only while
    counting: the timed runs have no monitor on the bus)."""
    with open(monitor_log(), "a") as log:
        monitor = subprocess.Popen(["dbus-monitor", "--address", seat.address(), "--profile"], stdout=log,
                                   stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            return fn()
        finally:
            time.sleep(0.3)
            monitor.terminate()
            monitor.wait()


def logind_visits_per_verify(side, runs):
    """What the daemon asked python-dbusmock's logind while `runs` verifies ran (dbus-monitor's
    log, Tests/system/logind_mock.py): questions and round trips waited for, per verify."""
    path = monitor_log()
    # GetSessionByPID answers 20 ms late: questions sent together are all on the bus before it
    # answers, so that a fast answer is not taken for a round trip waited for.
    seat.say("slow 20")
    start = os.path.getsize(path) if os.path.exists(path) else 0
    monitored(lambda: side.client(runs, [(side.match, common.PRINT_ID)]))
    seat.say("slow 0")
    with open(path) as f:
        f.seek(start)
        lines = f.read().splitlines()
    questions, round_trips, answered, callers = 0, 0, True, set()
    for line in lines:
        f = line.split("\t")
        if len(f) >= 8 and f[0] == "mc" and f[4] == "org.freedesktop.login1":
            questions += 1
            round_trips += 1 if answered else 0
            answered = False
            callers.add(f[3])
        elif len(f) >= 5 and f[0] in ("mr", "err") and f[4] in callers:
            answered = True
    return {"questions": questions / runs, "round_trips": round_trips / runs}


def fsyncs_per_verify(side, runs):
    """strace -f -c on the daemon for `runs` verifies (slows it; not timed)."""
    out = os.path.join(side.tmp, "strace.txt")
    tracer = subprocess.Popen(["strace", "-f", "-c", "-e", "trace=fsync,fdatasync,sync_file_range",
                               "-o", out, "-p", str(side.pid)], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    side.client(runs, [(side.match, common.PRINT_ID)])
    tracer.send_signal(2)
    tracer.wait(timeout=10)
    counts = {}
    with open(out) as f:
        for line in f:
            words = line.split()
            if len(words) >= 5 and words[-1] in ("fsync", "fdatasync", "sync_file_range"):
                counts[words[-1]] = int(words[3])
    return {k: v / runs for k, v in counts.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--module", default=os.path.join(ROOT, "pam", "build", "pam_localauth.so"))
    ap.add_argument("--client", default=os.path.join(ROOT, "pam", "build", "tests", "bench_client"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--blocks", type=int, default=10)
    ap.add_argument("--count-runs", type=int, default=40)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    args.bin = args.after
    b = bench.Bench.__new__(bench.Bench)
    b.args = args
    b.procs = common.Processes()
    import tempfile
    b.tmp = tempfile.mkdtemp(prefix="la-verify-cost-")
    os.chmod(b.tmp, 0o755)
    sides = [Side(b, os.path.join(b.tmp, "before"), "before", os.path.abspath(args.before)),
             Side(b, os.path.join(b.tmp, "after"), "after", os.path.abspath(args.after))]
    b.sides = sides
    load_before = os.getloadavg()
    results = {"load_before": load_before}
    try:
        for side in sides:
            side.start()
            side.enrol()
        per_block = args.runs // args.blocks
        rows = b.interleaved(args.blocks, lambda s: s.client(per_block + 1, [(s.match, common.PRINT_ID)])[1:])
        for side in sides:
            r = sum(rows[side.name], [])
            if any(x["rc"] != 0 for x in r):
                sys.exit("%s: a verify failed" % side.name)
            for key in ("total_ns", "prompt_ns", "result_ns"):
                results.setdefault(side.name, {})[key] = common.stats([x[key] for x in r])
        # Load drifts on a shared machine: the median, over blocks, of (after's block median minus
        # before's block median), the two blocks of a pair run back to back.
        for key in ("total_ns", "prompt_ns", "result_ns"):
            pairs = [statistics.median(x[key] for x in a) - statistics.median(x[key] for x in b_)
                     for a, b_ in zip(rows["after"], rows["before"])]
            results.setdefault("paired_block_difference_ms", {})[key] = {
                "median": statistics.median(pairs) / 1e6, "blocks": len(pairs),
                "after_faster_in": sum(1 for d in pairs if d < 0)}
        results["load_after_timing"] = os.getloadavg()
        for side in sides:
            results[side.name]["logind_per_verify"] = logind_visits_per_verify(side, args.count_runs)
            results[side.name]["fsyncs_per_verify"] = fsyncs_per_verify(side, args.count_runs)
    finally:
        b.procs.stop_all()
        subprocess.run(["rm", "-rf", b.tmp])
    print(json.dumps(results, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

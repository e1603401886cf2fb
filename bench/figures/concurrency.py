# SPDX-License-Identifier: Apache-2.0
"""Figure 8: --clients concurrent status clients while verifies run (ours): a) all at once,
b) Poisson arrivals at --rate per second, c) a) against a minimal C server (the floor),
d) a) with each status client under a uid of its own and one heavy uid (issue 18)."""
import json
import os
import subprocess
import time

from common import ROOT, PRINT_ID, USER, log, ms, percentile, timed, wait_for

# 8d: the first of the status clients' uids (none in passwd: status needs no account name), and
# how many connections the heavy uid tries, back to back (its per-uid limit refuses the excess,
# its gate paces the rest).
MANY_UIDS_FIRST = 610000
HEAVY_CONNECTIONS = 40


def record_burst(bench, label, c, rate):
    bench.record(label, "localauth", c["status_ns"], p99=ms(percentile(c["status_ns"], 0.99)),
                 clients=c["clients"], rounds=c["rounds"], rate=rate, wall_ms=ms(c["wall_ns"]))


def burst_and_paced(bench):
    """8a and 8b: a burst (every client at once), then Poisson arrivals at --rate per second."""
    a = bench.args
    for mode, rate in (("burst", None), ("paced", a.rate)):
        log("figure 8 (%s): %d concurrent status clients while verifies run ..." % (mode, a.clients))
        cmd = [bench.bench_bin, "concurrent", str(a.clients), str(a.rounds), USER, PRINT_ID]
        _, out = timed(cmd + ([str(rate)] if rate else []), bench.ours.env(), "concurrent")
        c = json.loads(out)
        bench.ours.auths += len(c["verify_ns"]) + len(c["verify_idle_ns"])
        label = "8%s status, %s" % ("a" if rate is None else "b", mode)
        record_burst(bench, label, c, c["rate"])
        bench.record(label.replace("status", "verify"), "localauth", c["verify_ns"])
        bench.record("8 verify, idle (before %s)" % mode, "localauth", c["verify_idle_ns"])
        if rate is None:
            # What the burst took, and whether it is given back within 10 s.
            bench.memory("right after the burst")
            time.sleep(10)
            bench.memory("10 s after the burst")
    bench.memory("at the end")


def floor(bench):
    """8c: the same burst against a minimal C server that does only the accept, SO_PEERCRED and
    one answer per request (bench/floor_server.c), in this run."""
    a = bench.args
    log("figure 8c: the same burst against the floor (a minimal C server) ...")
    floor_bin = os.path.join(bench.tmp, "floor_server")
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-o", floor_bin,
                    os.path.join(ROOT, "bench", "floor_server.c")], check=True)
    floor_sock = os.path.join(bench.tmp, "floor.socket")
    server = bench.procs.start([floor_bin, floor_sock])
    wait_for("the floor server", lambda: os.path.exists(floor_sock), proc=server)
    _, out = timed([bench.bench_bin, "concurrent", str(a.clients), str(a.rounds), USER, PRINT_ID],
                   dict(os.environ, LOCALAUTHD_SOCKET=floor_sock), "concurrent (floor)")
    c = json.loads(out)
    record_burst(bench, "8c status, burst, floor (C server)", c, c["rate"])
    bench.procs.stop(server)


def many_uids(bench):
    """8d (issue 18): 8a's burst with each status client under a uid of its own, one heavy uid,
    and the console user's verifies (root's, as in 8a) beside them."""
    a = bench.args
    log("figure 8d: %d status clients of %d uids and one heavy uid, while verifies run ..."
        % (a.clients, a.clients))
    _, out = timed([bench.bench_bin, "concurrent-uids", str(a.clients), str(a.rounds), USER, PRINT_ID,
                    str(MANY_UIDS_FIRST), str(HEAVY_CONNECTIONS)], bench.ours.env(), "concurrent-uids")
    c = json.loads(out)
    bench.ours.auths += len(c["verify_ns"]) + len(c["verify_idle_ns"])
    record_burst(bench, "8d status, burst, 1000 uids", c, 0)
    bench.record("8d verify, burst, 1000 uids", "localauth", c["verify_ns"])
    # Where the verify's time goes: EVALUATE sent to its placeFinger event (read, scheduled,
    # decided up to the scan), beside the same before the burst.
    bench.record("8d verify to placeFinger, burst", "localauth", c["verify_prompt_ns"])
    bench.record("8d verify to placeFinger, idle", "localauth", c["verify_idle_prompt_ns"])
    bench.record("8d heavy uid's status, burst", "localauth", c["heavy_ns"],
                 connections=c["heavy_connections"], refused=c["heavy_refused"])
    bench.record("8d verify, idle (before 8d)", "localauth", c["verify_idle_ns"])

# SPDX-License-Identifier: Apache-2.0
"""Figure 11 (issue 29): what a verify's time after the touch is made of, beside figure 1.

Untimed counts on the running daemon (bench/verify_cost.py's, which slow it: never in a timed
figure): its fsyncs per verify (strace -f -c) and what it asks logind per verify (dbus-monitor on
python-dbusmock's bus: questions, and round trips waited for). Timed: one `fdatasync` of a small
write on the state directory's file system, at the same moment, so that "n fsyncs x their cost"
can be set against figure 1's prompt -> result."""
import os
import time

from common import log


def anatomy(bench):
    import verify_cost  # bench/verify_cost.py (imported here: it imports bench.py itself)
    runs = 20 if bench.args.quick else 40
    ours = bench.ours
    log("figure 11: fsyncs and logind round trips per verify (%d verifies, untimed) ..." % runs)
    out = {"fsyncs per verify (strace -c)": verify_cost.fsyncs_per_verify(ours, runs),
           "logind per verify (dbus-monitor)": verify_cost.logind_visits_per_verify(ours, runs),
           "verifies": runs}
    ours.auths += 2 * runs
    path = os.path.join(ours.tmp, "fdatasync-probe")
    samples = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for i in range(200):
            os.pwrite(fd, b"%512d" % i, 0)
            t0 = time.monotonic_ns()
            os.fdatasync(fd)
            samples.append(time.monotonic_ns() - t0)
    finally:
        os.close(fd)
        os.unlink(path)
    bench.record("11 fdatasync, state dir's fs", "localauth", samples)
    bench.results["11 verify anatomy"] = {"localauth": out}


def print_anatomy(r):
    a = r.get("11 verify anatomy", {}).get("localauth")
    if not a:
        return
    f = r["11 fdatasync, state dir's fs"]["localauth"]
    fs = a["fsyncs per verify (strace -c)"]
    lg = a["logind per verify (dbus-monitor)"]
    print("\n11 a verify's parts (ours, %d verifies, untimed counts): %s per verify; logind: %.1f "
          "questions, %.1f round trips waited for; one fdatasync on the state directory's file "
          "system now: %.3f ms median (p95 %.3f)" % (
              a["verifies"], ", ".join("%.2f %s" % (v, k) for k, v in fs.items()) or "no fsync",
              lg["questions"], lg["round_trips"], f["median"], f["p95"]))

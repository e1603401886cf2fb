#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The cold start with N accounts, two builds side by side (issue 29, docs/performance.md, "The cold
start at 10,000 accounts"): as bench.py's growth figure, systemd-socket-activate holds the socket
and the first `localauthctl list --user alice` starts the daemon and is timed, whole process, to
its answer; then the daemon is stopped (SIGTERM to its group). Blocks alternate the order of the
two daemons (A B, B A, ...); each side has its own copy of the same state directory.

The state directory: the 0.1.0 fixture (Tests/Fixtures/state: alice with one sealed print, the
key file beside it) and N-1 more accounts, each a directory with a copy of alice's record. What
the start lists grows with the number of directories in users/, not with what is in them.

Usage: /usr/bin/python3 bench/cold_start_accounts.py --before DIR --after DIR
[--accounts 1,1000,10000] [--blocks 30] [--per-block 5] (as root; DIR holds a release localauthd;
--ctl names the localauthctl, by default the one in --after).
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "Tests/Fixtures/state/localauthd-0.1.0.tar")


def prepare(root, accounts):
    """root/state (alice and accounts-1 others) and root/state-key; returns the state's path."""
    os.makedirs(root)
    with tarfile.open(FIXTURE) as t:
        # `filter` is from Python 3.11.4 (and 3.8.17 ...); this machine's 3.11.2 has no tarfile.data_filter.
        t.extractall(root, **({"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}))
    state, key = os.path.join(root, "state"), os.path.join(root, "state-key")
    os.rename(os.path.join(root, "var/lib/localauthd"), state)
    os.rename(os.path.join(root, "var/lib/localauthd-key"), key)
    shutil.rmtree(os.path.join(root, "var"))
    with open(os.path.join(state, "users/alice/state"), "rb") as f:
        record = f.read()
    for i in range(1, accounts):
        d = os.path.join(state, "users", "u%05d" % i)
        os.mkdir(d, 0o700)
        fd = os.open(os.path.join(d, "state"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, record)
        os.close(fd)
    return state


def cold_start(daemon, ctl, state, sock):
    """ms from running `localauthctl list --user alice` to its exit, the daemon socket-activated."""
    if os.path.exists(sock):
        os.unlink(sock)
    act = subprocess.Popen(
        ["systemd-socket-activate", "-l", sock, daemon, "--socket", sock, "--state-dir", state,
         "--virtual-reader"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = act.stderr.readline()
        if "Listening" not in line:
            sys.exit("systemd-socket-activate: %r" % line)
        env = dict(os.environ, LOCALAUTHD_SOCKET=sock)
        t0 = time.monotonic_ns()
        r = subprocess.run([ctl, "list", "--user", "alice"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        elapsed = (time.monotonic_ns() - t0) / 1e6
        if r.returncode != 0 or "right-index-finger" not in r.stdout:
            sys.exit("list: exit %d: %r %r" % (r.returncode, r.stdout, r.stderr))
        return elapsed
    finally:
        os.killpg(act.pid, signal.SIGTERM)
        try:
            act.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(act.pid, signal.SIGKILL)
            act.wait()
        act.stderr.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="directory of the release localauthd A")
    ap.add_argument("--after", required=True, help="directory of the release localauthd B")
    ap.add_argument("--ctl", help="localauthctl (default: the one in --after)")
    ap.add_argument("--accounts", default="1,1000,10000")
    ap.add_argument("--blocks", type=int, default=30)
    ap.add_argument("--per-block", type=int, default=5, help="cold starts per side and block")
    a = ap.parse_args()
    ctl = a.ctl or os.path.join(a.after, "localauthctl")
    sides = {"before": os.path.join(a.before, "localauthd"), "after": os.path.join(a.after, "localauthd")}
    work = tempfile.mkdtemp(prefix="cold-accounts-")
    try:
        for n in [int(x) for x in a.accounts.split(",")]:
            states = {s: prepare(os.path.join(work, "%s-%d" % (s, n)), n) for s in sides}
            os.sync()  # the copies' metadata written back before anything is timed
            time.sleep(2)
            socks = {s: os.path.join(work, "socket-" + s) for s in sides}
            for s in sides:  # untimed: an older version's record is authenticated once
                cold_start(sides[s], ctl, states[s], socks[s])
            times, faster = {s: [] for s in sides}, 0
            load0 = os.getloadavg()
            for b in range(a.blocks):
                medians = {}
                for s in (list(sides) if b % 2 == 0 else list(sides)[::-1]):
                    v = [cold_start(sides[s], ctl, states[s], socks[s]) for _ in range(a.per_block)]
                    times[s] += v
                    medians[s] = statistics.median(v)
                faster += medians["after"] < medians["before"]
            load1 = os.getloadavg()
            print("%d accounts: %d blocks x %d cold starts a side; load %.2f -> %.2f" % (
                n, a.blocks, a.per_block, load0[0], load1[0]))
            for s in sides:
                v = sorted(times[s])
                print("  %-6s median %6.2f ms  min %6.2f  p25 %6.2f  p75 %6.2f" % (
                    s, statistics.median(v), v[0], v[len(v) // 4], v[3 * len(v) // 4]))
            print("  after faster in %d of %d blocks (block medians)" % (faster, a.blocks))
            sys.stdout.flush()
            for s in sides:
                shutil.rmtree(os.path.join(work, "%s-%d" % (s, n)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

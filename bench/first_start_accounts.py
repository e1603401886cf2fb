#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What the first start's one-time passes over the accounts cost before READY=1 (docs/performance.md,
"The first start's passes over the accounts"): the sealing migration (a state directory without a
sealing record: users/ is listed, and every account's directory, once for a sealed file and once
for plain prints to seal) and the fprintd import (`fprintd-state-dir` names a tree of N accounts,
each `<user>/<driver>/<device>/`, listed level by level). Each copy of a state directory is started
twice: the first start does the pass, the second (record and marker written) does not; the pass
costs the difference. Starts alternate between the scenarios; the time is from the spawn to
READY=1 on a NOTIFY_SOCKET of our own.

The accounts are the 0.1.0 fixture's alice and N-1 more, each a directory with a copy of alice's
`state` record (bench/cold_start_accounts.py); for the migration, alice's sealed files and the
sealing record are removed, so the directory is a plain one from before sealing, with no prints.

Usage: /usr/bin/python3 bench/first_start_accounts.py --daemon DIR/localauthd [--accounts 1,1000,10000]
[--copies 5] (as root; a release build, see `make bench`).
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from cold_start_accounts import prepare


def migration_state(root, accounts):
    state = prepare(root, accounts)
    os.unlink(os.path.join(state, "sealing"))
    alice = os.path.join(state, "users/alice")
    for name in os.listdir(alice):
        if name.endswith(".right") or name.endswith(".print"):
            os.unlink(os.path.join(alice, name))
    return state, None


def import_state(root, accounts):
    state = prepare(root, accounts)
    fprint = os.path.join(root, "fprint")
    os.mkdir(fprint, 0o700)
    for i in range(accounts):
        os.makedirs(os.path.join(fprint, "alice" if i == 0 else "u%05d" % i, "virtual_device", "0"), 0o700)
    config = os.path.join(root, "localauthd.conf")
    with open(config, "w") as f:
        f.write("fprintd-state-dir = %s\n" % fprint)
    return state, config


def cpu_ms(pid):
    """The CPU time of all of pid's threads so far (/proc/PID/task/*/schedstat, ns), in ms."""
    total = 0
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, task)) as f:
            total += int(f.read().split()[0])
    return total / 1e6


def start_to_ready(daemon, state, config, work):
    """(ms from the spawn to READY=1, CPU ms the daemon's threads used by then); then SIGTERM."""
    notify = os.path.join(work, "notify")
    if os.path.exists(notify):
        os.unlink(notify)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(notify)
    listener.settimeout(60)
    sock = os.path.join(work, "socket")
    cmd = [daemon, "--socket", sock, "--state-dir", state, "--virtual-reader"]
    if config:
        cmd += ["--config", config]
    env = {"PATH": "/usr/bin:/bin", "NOTIFY_SOCKET": notify,
           "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/localauth-no-bus"}
    t0 = time.monotonic_ns()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while True:
            message = listener.recv(4096).decode()
            if "READY=1" in message.split("\n"):
                return (time.monotonic_ns() - t0) / 1e6, cpu_ms(p.pid)
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        listener.close()
        if p.returncode != 0:
            sys.exit("localauthd: exit %d\n%s" % (p.returncode, err))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", required=True, help="a release localauthd")
    ap.add_argument("--accounts", default="1,1000,10000")
    ap.add_argument("--copies", type=int, default=5, help="state directories per scenario and size")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="first-start-")
    scenarios = {"migration": migration_state, "import": import_state}
    try:
        for n in [int(x) for x in a.accounts.split(",")]:
            copies = [{s: make(os.path.join(work, "%s-%d-%d" % (s, n, c)), n) for s, make in scenarios.items()}
                      for c in range(a.copies)]
            os.sync()
            time.sleep(1)
            first = {s: [] for s in scenarios}
            again = {s: [] for s in scenarios}
            load0 = os.getloadavg()
            for c, copy in enumerate(copies):
                order = list(scenarios) if c % 2 == 0 else list(scenarios)[::-1]
                for s in order:
                    first[s].append(start_to_ready(a.daemon, *copy[s], work))
                for s in order:
                    again[s].append(start_to_ready(a.daemon, *copy[s], work))
            load1 = os.getloadavg()
            print("%d accounts, %d copies; load %.2f -> %.2f; wall ms to READY=1 (CPU ms by then)" % (
                n, a.copies, load0[0], load1[0]))
            for s in scenarios:
                def med(runs, i):
                    return statistics.median(r[i] for r in runs)
                diff = [statistics.median(f[i] - g[i] for f, g in zip(first[s], again[s])) for i in (0, 1)]
                print("  %-9s first start %8.2f (%7.2f)  second %7.2f (%6.2f)  difference %8.2f (%7.2f)" % (
                    s, med(first[s], 0), med(first[s], 1), med(again[s], 0), med(again[s], 1), diff[0], diff[1]))
            sys.stdout.flush()
            for copy in copies:
                for s in copy:
                    shutil.rmtree(os.path.dirname(copy[s][0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
